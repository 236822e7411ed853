#!/usr/bin/env bash
# Install what one job of vkprof needs on a fresh Debian 12 machine (run as
# root, or with sudo), and nothing more:
#   scripts/setup.sh          build the library, the tool and the layer, and
#                             run them on the default Vulkan device (lavapipe
#                             without a GPU): scripts/run.sh
#   scripts/setup.sh --llama  the same, and python3 for the GGUF model writer:
#                             scripts/run-llama.sh (node >= 20 with npm must
#                             already be there: Debian 12's own nodejs is 18)
#   scripts/setup.sh --test   everything the test suite uses: scripts/test.sh
set -euo pipefail
job=${1:-run}
case $job in
  run | --run) job=run ;;
  --llama) job=llama ;;
  --test) job=test ;;
  *) echo "usage: $0 [--llama | --test]" >&2; exit 2 ;;
esac
# building: C compiler, CMake, Ninja, the Vulkan headers and loader, volk
# (shipped as source), glslang (shaders are compiled at build time), cJSON;
# running: Mesa's lavapipe, the Vulkan device of a machine without a GPU
pkgs=(gcc cmake ninja-build pkg-config
      libvulkan-dev libvulkan-volk-dev glslang-tools libcjson-dev
      mesa-vulkan-drivers)
if [ "$job" = llama ]; then
  pkgs+=(python3)  # tools/gguf/make_gguf.py writes the model
fi
# the tests also run under the Khronos validation layer, compile the header
# as C++ (g++), fuzz the trace reader (clang's libFuzzer), check the
# formatting (clang-format), check SVGs and make GGUF models with python3,
# validate SPIR-V (spirv-tools), cross-build for arm64 and run that under
# qemu (scripts/cross-arm64.sh), decode every .pftrace with protoc
# (tests/device/test_pftrace.c), and drive llama.cpp from npm with node
# (scripts/setup-llama.sh)
if [ "$job" = test ]; then
  pkgs+=(vulkan-validationlayers g++ clang libclang-rt-14-dev clang-format python3 spirv-tools
         gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user-static protobuf-compiler)
fi
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO=sudo
  echo "setup: installing ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
echo "setup: all packages for '$job' present"
