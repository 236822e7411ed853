#!/usr/bin/env bash
# On the GPU machine, after scripts/gpu-suite.sh built build-gpu: the decode
# figures of docs/decode.md (profiling off, gpu, all) for llama-1b and llama-8b.
set -uo pipefail
out=${OUT:-$PWD/gpu-out}
v=./build-gpu/vkprof
for preset in llama-1b llama-8b; do
  for prof in off gpu all; do
    echo "\$ vkprof decode --preset $preset --tokens 64 --profile $prof --peak-gbps 4800"
    extra=()
    [ "$prof" = all ] && extra=(--trace "$out/trace-$preset.json")
    $v decode --preset "$preset" --tokens 64 --profile "$prof" --peak-gbps 4800 \
      --json "$out/decode-$preset-$prof.json" "${extra[@]}" 2>"$out/decode-$preset-$prof.stderr"
    echo "(exit $?)"
    echo
  done
done
