#!/usr/bin/env bash
# Cross-build the library and its tests that need no Vulkan device for arm64
# (Debian's gcc-aarch64-linux-gnu), and run them under qemu-user-static
# (issue 12: phones are arm64; the counter clock there is cntvct_el0).
#
#   scripts/cross-arm64.sh [BUILD_DIR]     (default build-arm64)
#
# Needs (Debian 12): gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user-static,
# and the Vulkan headers (libvulkan-dev or vulkan-headers; headers only, the
# library never links the loader). The library's sources are read from
# CMakeLists.txt (VKPROF_SOURCES), so the list cannot go stale. Tests, linked
# statically:
#   test_ticks       the exact tick arithmetic
#   test_disabled    every call-site macro under VKPROF_DISABLE, no library
#   test_host_clock  the host clock: cntvct_el0 (qemu emulates it) forced with
#                    VKPROF_HOST_CLOCK=counter (the host kernel's clocksource
#                    list, which qemu-user shows, has no arch_sys_counter),
#                    then the default, then the fallback
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build-arm64}
CC=${CC_ARM64:-aarch64-linux-gnu-gcc}
AR=${AR_ARM64:-aarch64-linux-gnu-ar}
QEMU=${QEMU_ARM64:-qemu-aarch64-static}
for tool in "$CC" "$AR" "$QEMU"; do
  command -v "$tool" >/dev/null || {
    echo "cross-arm64: $tool not found (apt-get install gcc-aarch64-linux-gnu" \
      "libc6-dev-arm64-cross qemu-user-static)" >&2
    exit 2
  }
done
VK_INC=${VULKAN_INCLUDE:-/usr/include}
[ -f "$VK_INC/vulkan/vulkan.h" ] || { echo "cross-arm64: no $VK_INC/vulkan/vulkan.h" >&2; exit 2; }

mkdir -p "$BUILD/obj" "$BUILD/inc"
# only the Vulkan headers from the host's include folder: the rest of it is
# the host's libc, not arm64's
for d in vulkan vk_video; do
  [ -e "$VK_INC/$d" ] && ln -sfn "$VK_INC/$d" "$BUILD/inc/$d"
done
CFLAGS=(-std=c11 -O2 -g -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wvla
        -Werror -Iinclude -isystem "$BUILD/inc")

mapfile -t srcs < <(sed -n '/^set(VKPROF_SOURCES/,/)/p' CMakeLists.txt | grep -o 'src/[A-Za-z0-9_/]*\.c')
[ "${#srcs[@]}" -gt 0 ] || { echo "cross-arm64: no VKPROF_SOURCES in CMakeLists.txt" >&2; exit 2; }
objs=()
for s in "${srcs[@]}"; do
  o="$BUILD/obj/$(echo "${s%.c}" | tr / _).o"
  "$CC" "${CFLAGS[@]}" -Isrc -DVK_NO_PROTOTYPES -fvisibility=hidden -fPIC -c "$s" -o "$o"
  objs+=("$o")
done
rm -f "$BUILD/libvkprof.a"
"$AR" rcs "$BUILD/libvkprof.a" "${objs[@]}"
echo "cross-arm64: $BUILD/libvkprof.a from ${#srcs[@]} sources"

"$CC" "${CFLAGS[@]}" -static -Isrc -Itests tests/unit/test_ticks.c "$BUILD/libvkprof.a" -lm -o "$BUILD/test_ticks"
"$CC" "${CFLAGS[@]}" -static -Itests tests/unit/test_disabled.c -o "$BUILD/test_disabled"
"$CC" "${CFLAGS[@]}" -static -Isrc -Itests -DVK_NO_PROTOTYPES tests/unit/test_host_clock.c tests/nodevice.c "$BUILD/libvkprof.a" \
  -lm -lpthread -o "$BUILD/test_host_clock"
file "$BUILD/test_host_clock" | grep -q "ARM aarch64" || { echo "cross-arm64: not an arm64 binary" >&2; exit 1; }

fail=0
run() {
  echo "== $*"
  if ! "$@"; then
    echo "cross-arm64: FAILED: $*" >&2
    fail=1
  fi
}
run "$QEMU" "$BUILD/test_ticks"
run "$QEMU" "$BUILD/test_disabled"
run env VKPROF_HOST_CLOCK=counter "$QEMU" "$BUILD/test_host_clock" --seconds 3
run env -u VKPROF_HOST_CLOCK "$QEMU" "$BUILD/test_host_clock" --seconds 1
run env VKPROF_HOST_CLOCK=monotonic "$QEMU" "$BUILD/test_host_clock" --seconds 1
[ "$fail" = 0 ] && echo "cross-arm64: all passed under $QEMU"
exit "$fail"
