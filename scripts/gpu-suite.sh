#!/usr/bin/env bash
# On the GPU machine, after `. .gl/enter.sh`: build the snapshot in .gl/src,
# run the test suite on the default device (the GPU) and `vkprof devices`.
# Writes logs to $OUT (or ./gpu-out).
set -uo pipefail
out=${OUT:-$PWD/gpu-out}
mkdir -p "$out"
src=${1:-.gl/src}
cmake -S "$src" -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DVKPROF_WERROR=ON >"$out/configure.log" 2>&1 \
  || { tail -30 "$out/configure.log"; exit 1; }
cmake --build build-gpu -j16 >"$out/build.log" 2>&1 || { tail -40 "$out/build.log"; exit 1; }
{ echo "\$ ctest --test-dir build-gpu --output-on-failure"; ctest --test-dir build-gpu --output-on-failure; } >"$out/ctest.log" 2>&1
echo "ctest rc=$?" >>"$out/ctest.log"
{ echo "\$ vkprof devices"; ./build-gpu/vkprof devices; } >"$out/devices.log" 2>&1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv >"$out/nvidia-smi.log" 2>&1 || true
tail -25 "$out/ctest.log"; cat "$out/devices.log"
