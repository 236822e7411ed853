#!/usr/bin/env bash
# Set up a fresh Debian 12 machine, build, and run the main job on the default
# Vulkan device (lavapipe where there is no GPU).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
export XDG_RUNTIME_DIR=${XDG_RUNTIME_DIR:-/tmp}
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j "$(nproc)"
./build/vkprof devices
