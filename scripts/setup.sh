#!/usr/bin/env bash
# Install what vkprof needs on a fresh Debian 12 machine (run as root, or with sudo).
set -euo pipefail
pkgs=(gcc g++ cmake ninja-build pkg-config
      libvulkan-dev libvulkan-volk-dev glslang-tools libcjson-dev
      mesa-vulkan-drivers vulkan-validationlayers)
# the tests also fuzz the trace reader (clang's libFuzzer), check the formatting
# (clang-format), check SVGs and make GGUF models with python3, validate
# SPIR-V (spirv-tools), cross-build for arm64 and run that under qemu
# (scripts/cross-arm64.sh), and drive llama.cpp from npm with node
# (scripts/setup-llama.sh; node >= 20 and npm must already be there: Debian
# 12's own nodejs is 18)
if [ "${1:-}" = --test ]; then
  pkgs+=(clang libclang-rt-14-dev clang-format python3 spirv-tools
         gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user-static
         protobuf-compiler)  # protoc --decode checks every .pftrace (tests/pftrace)
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
echo "setup: all packages present"
