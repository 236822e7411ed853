#!/usr/bin/env bash
# Set up a fresh Debian 12 machine, build with -Werror, and run the whole test
# suite on the default Vulkan device (lavapipe without a GPU) with the Khronos
# validation layer on (then twice more: with the layer also forced through
# VK_INSTANCE_LAYERS, and with synchronization validation); then a short fuzz
# of the trace reader, the suite again under ASan+UBSan, and the threaded tests
# under TSan.
# Also: llama.cpp's Vulkan backend (npm) as a client, with and without the
# vkprof layer, and an arm64 cross-build run under qemu.
#   VKPROF_SKIP_SANITIZERS=1 / VKPROF_SKIP_FUZZ=1 / VKPROF_SKIP_ARM64=1 skip those parts.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh --test
# llama.cpp's Vulkan backend from npm, a real unmodified client (tests/clients)
./scripts/setup-llama.sh
export XDG_RUNTIME_DIR=${XDG_RUNTIME_DIR:-/tmp}
jobs=$(nproc)
log=$(mktemp)
trap 'rm -f "$log"' EXIT

# Every C file as .clang-format has it (scripts/format.sh rewrites them).
./scripts/format.sh --check || { echo "format: run scripts/format.sh" >&2; exit 1; }

run_ctest() {
  ctest --output-on-failure "$@" 2>&1 | tee -a "$log"
}

cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DVKPROF_WERROR=ON -DVKPROF_BUILD_TESTS=ON
cmake --build build -j "$jobs"
run_ctest --test-dir build
# The tests labelled "unit" need no Vulkan device: run them with no driver.
VK_DRIVER_FILES=/nonexistent/icd.json VK_ICD_FILENAMES=/nonexistent/icd.json \
  run_ctest --test-dir build -L unit

# The suite again with the validation layer also forced the usual way (the
# loader then adds its own notice, which must not count as a failure), and
# once more with synchronization validation on: zero messages either way.
# Serial like the first run: the timing tests measure ratios.
# (The llama.cpp client tests, label "client", run once, in the first pass:
# they put the validation layer above and below the vkprof layer themselves.)
VK_INSTANCE_LAYERS=VK_LAYER_KHRONOS_validation run_ctest --test-dir build -LE client
VK_LAYER_ENABLES=VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT run_ctest --test-dir build -LE client

if [ "${VKPROF_SKIP_FUZZ:-0}" != 1 ]; then
  # A short libFuzzer run of the trace reader (exits non-zero on a crash).
  ./scripts/fuzz.sh "${VKPROF_FUZZ_SECONDS:-45}"
fi

if [ "${VKPROF_SKIP_SANITIZERS:-0}" != 1 ]; then
  cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DVKPROF_WERROR=ON -DVKPROF_BUILD_TESTS=ON \
        -DVKPROF_SANITIZE=address,undefined
  cmake --build build-asan -j "$jobs"
  run_ctest --test-dir build-asan

  # ThreadSanitizer where threads meet: spans from many threads, the trace store,
  # ring-mode recording and submits from many threads into one context, and
  # the Vulkan layer under the multi-threaded test app (recording threads that
  # change, a copy thread, phases named on first use), tensor-parallel ranks
  # (R = 4 threads, a VkDevice and context each, the host all-reduce) and two
  # ranks' contexts meeting at a rendezvous for the merge.
  cmake -S . -B build-tsan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DVKPROF_WERROR=ON -DVKPROF_BUILD_TESTS=ON \
        -DVKPROF_SANITIZE=thread
  cmake --build build-tsan -j "$jobs" --target test_threads test_timeline_trace test_submit_threads test_spool \
        VkLayer_vkprof layer_app test_decode_tp test_merge
  run_ctest --test-dir build-tsan \
    -R '^(test_threads|test_timeline_trace|test_submit_threads|test_spool|test_layer_app|decode_tp_tsan|test_merge)$'
fi

# The library and its tests that need no Vulkan, cross-built for arm64 and run
# under qemu (phones are arm64: the host clock there is cntvct_el0).
if [ "${VKPROF_SKIP_ARM64:-0}" != 1 ]; then
  ./scripts/cross-arm64.sh build-arm64 2>&1 | tee -a "$log"
fi

# One closing line over every ctest run above.
read -r total failed < <(awk '/tests passed, [0-9]+ tests failed out of/ {
  for (i = 1; i <= NF; i++) { if ($i == "failed") f += $(i - 2); if ($i == "of") t += $(i + 1) }
} END { print t + 0, f + 0 }' "$log")
echo "$((total - failed)) passed, $failed failed"
