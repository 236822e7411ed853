#!/usr/bin/env bash
# Set up a fresh Debian 12 machine, build with -Werror, and run the whole test
# suite on the default Vulkan device (lavapipe without a GPU) with the
# Khronos validation layer on; then again under ASan+UBSan.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
export XDG_RUNTIME_DIR=${XDG_RUNTIME_DIR:-/tmp}
jobs=$(nproc)

cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DVKPROF_WERROR=ON
cmake --build build -j "$jobs"
ctest --test-dir build --output-on-failure -j 1

if [ "${VKPROF_SKIP_SANITIZERS:-0}" != 1 ]; then
  cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DVKPROF_WERROR=ON \
        -DVKPROF_SANITIZE=address,undefined
  cmake --build build-asan -j "$jobs"
  ctest --test-dir build-asan --output-on-failure -j 1
fi

if [ "${VKPROF_SKIP_SANITIZERS:-0}" != 1 ]; then
  # ThreadSanitizer where threads meet: spans from many threads, the trace store.
  cmake -S . -B build-tsan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DVKPROF_WERROR=ON \
        -DVKPROF_SANITIZE=thread
  cmake --build build-tsan -j "$jobs" --target test_threads test_timeline
  ctest --test-dir build-tsan --output-on-failure -R '^(test_threads|test_timeline)$'
fi
