#!/usr/bin/env bash
# Profile llama.cpp without changing it, on a fresh Debian 12 machine:
# install what is needed (apt, and llama.cpp's Vulkan backend from npm:
# node-llama-cpp 3.21.1 with its prebuilt libggml-vulkan.so), build vkprof,
# write a small random-weight Llama GGUF model (no model can be downloaded),
# and decode under `vkprof run` on the default Vulkan device (lavapipe
# without a GPU). The layer names ggml's pipelines after the shaders in the
# loaded libggml-vulkan.so by itself (docs/layer.md, "Names without a map").
# Writes, under out/llama/ (or $1):
#   node-<pid>.summary.json, node-<pid>.trace.json   the layer's files
#   report.svg                                       `vkprof report` of the trace
# Needs node >= 20 with npm (Debian 12's own nodejs is 18).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh --llama   # and python3 for the model generator
./scripts/setup-llama.sh
export XDG_RUNTIME_DIR=${XDG_RUNTIME_DIR:-/tmp}
out=${1:-out/llama}
mkdir -p "$out"
# the library, the tool and the layer; not the tests
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DVKPROF_BUILD_TESTS=OFF >/dev/null
cmake --build build -j "$(nproc)"
python3 tools/gguf/make_gguf.py -o "$out/model.gguf" --type q4_0 --layers 4 --dim 256 \
  --heads 8 --kv-heads 4 --ff 512 --vocab 512 --context 256 --seed 1
# ggml takes only discrete or integrated GPUs unless told which device to use
export GGML_VK_VISIBLE_DEVICES=${GGML_VK_VISIBLE_DEVICES:-0}
./build/vkprof run -o "$out" -- \
  node tests/clients/llama/run.mjs "$out/model.gguf" --tokens 32
trace=$(ls -t "$out"/*.trace.json | head -n 1)
./build/vkprof report "$trace" --svg "$out/report.svg"
