#!/usr/bin/env bash
# Install llama.cpp's Vulkan backend as an npm client for the tests (issue 9):
# node-llama-cpp 3.21.1 and its prebuilt @node-llama-cpp/linux-x64-vulkan 3.21.1
# (libggml-vulkan.so, about 136 MB) into tests/clients/llama/node_modules.
# Idempotent: does nothing when the pinned versions are already there.
# Needs node >= 20 and npm (node-llama-cpp's "engines"; Debian 12's nodejs is
# 18, use NodeSource's nodejs 20.x) and the npm registry. Downloads no model and
# builds nothing: NODE_LLAMA_CPP_SKIP_DOWNLOAD=true, optional CUDA builds left out.
set -euo pipefail
dir="$(cd "$(dirname "$0")/.." && pwd)/tests/clients/llama"
want=3.21.1
have() { # package dir -> its version, or nothing
  node -e 'try{process.stdout.write(require(process.argv[1]+"/package.json").version)}catch(e){}' "$dir/node_modules/$1"
}
command -v node >/dev/null || { echo "setup-llama: node not found (need node >= 20 and npm)" >&2; exit 1; }
command -v npm >/dev/null || { echo "setup-llama: npm not found" >&2; exit 1; }
major="$(node -p 'process.versions.node.split(".")[0]')"
[ "$major" -ge 20 ] || { echo "setup-llama: node $(node --version) is too old: node-llama-cpp $want needs node >= 20" >&2; exit 1; }
lib="$dir/node_modules/@node-llama-cpp/linux-x64-vulkan/bins/linux-x64-vulkan/libggml-vulkan.so"
if [ "$(have node-llama-cpp)" = "$want" ] && [ "$(have @node-llama-cpp/linux-x64-vulkan)" = "$want" ] && [ -f "$lib" ]; then
  echo "setup-llama: node-llama-cpp $want with the Vulkan build already in $dir/node_modules"
  exit 0
fi
echo "setup-llama: installing node-llama-cpp $want and @node-llama-cpp/linux-x64-vulkan $want into $dir"
(cd "$dir" && NODE_LLAMA_CPP_SKIP_DOWNLOAD=true npm i -E --omit=optional --no-audit --no-fund)
for p in node-llama-cpp @node-llama-cpp/linux-x64-vulkan; do
  v="$(have "$p")"
  [ "$v" = "$want" ] || { echo "setup-llama: $p is '${v:-missing}' after npm i, not $want" >&2; exit 1; }
done
[ -f "$lib" ] || { echo "setup-llama: $lib missing after npm i" >&2; exit 1; }
echo "setup-llama: done ($(du -sh "$dir/node_modules" | cut -f1))"
