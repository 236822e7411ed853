#!/usr/bin/env bash
# The main job, on a fresh Debian 12 machine: install what is needed, build,
# and run a profiled decode (tiny preset) on the default Vulkan device
# (lavapipe where there is no GPU). Writes, under out/ (or $1):
#   trace.json    GPU phases + host spans on one timeline (open in ui.perfetto.dev)
#   summary.json  tokens/s, per-phase figures, the library's snapshot
#   report.svg    the chart drawn by `vkprof report`
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
export XDG_RUNTIME_DIR=${XDG_RUNTIME_DIR:-/tmp}
out=${1:-out}
mkdir -p "$out"
# the library, the tool and the layer; not the tests (scripts/test.sh builds
# those, with what only they need)
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DVKPROF_BUILD_TESTS=OFF >/dev/null
cmake --build build -j "$(nproc)"
./build/vkprof decode --preset tiny --tokens 32 --profile all \
  --trace "$out/trace.json" --json "$out/summary.json"
./build/vkprof report "$out/trace.json" --svg "$out/report.svg"
