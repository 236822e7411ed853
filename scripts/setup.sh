#!/usr/bin/env bash
# Install what vkprof needs on a fresh Debian 12 machine (run as root, or with sudo).
set -euo pipefail
pkgs=(gcc g++ cmake ninja-build pkg-config
      libvulkan-dev libvulkan-volk-dev glslang-tools libcjson-dev
      mesa-vulkan-drivers vulkan-validationlayers)
# the tests also fuzz the trace reader (clang's libFuzzer), check the formatting
# (clang-format) and check SVGs with python3
if [ "${1:-}" = --test ]; then
  pkgs+=(clang libclang-rt-14-dev clang-format python3)
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
