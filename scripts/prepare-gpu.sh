#!/usr/bin/env bash
# Prepare .gl/ for a run on the GPU machine (no package registry there):
# the shared prepare step, plus cJSON, plus a snapshot of the committed tree
# in .gl/src (so a run builds exactly what is committed).
# scripts/prepare-gpu.sh --llama also packs llama.cpp for scripts/gpu-llama.sh.
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
shared=${VKPROF_SHARED:-../shared}
"$shared/device/prepare.sh"
o='-oAPT::Architecture=amd64 -oAPT::Architectures=amd64 -oDir::State::Lists=/tmp/amd64'
(cd .gl && apt-get $o download libcjson1 libcjson-dev >/dev/null 2>&1)
rm -rf .gl/src && mkdir -p .gl/src
git archive HEAD | tar -x -C .gl/src
echo "prepare-gpu: .gl/ ready ($(du -sh .gl | cut -f1)); snapshot of $(git rev-parse --short HEAD) in .gl/src"
# With --llama: llama.cpp's source of the npm package's build (only what
# llama-bench needs) and the package's prebuilt libraries, for scripts/gpu-llama.sh.
if [ "${1:-}" = --llama ]; then
  pkg=tests/clients/llama/node_modules
  [ -f "$pkg/node-llama-cpp/llama/gitRelease.bundle" ] || ./scripts/setup-llama.sh
  tmp=$(mktemp -d)
  git clone -q "$pkg/node-llama-cpp/llama/gitRelease.bundle" "$tmp/src"
  tar -C "$tmp/src" -cJf .gl/llama-src.tar.xz include ggml/include common vendor tools/llama-bench
  tar -C "$pkg/@node-llama-cpp/linux-x64-vulkan/bins/linux-x64-vulkan" -cJf .gl/llama-libs.tar.xz .
  rm -rf "$tmp"
  echo "prepare-gpu: llama.cpp $(cat "$pkg/node-llama-cpp/llama/llama.cpp.info.json" | tr -d '\n ') in .gl/llama-*.tar.xz"
fi
