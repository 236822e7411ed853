#!/usr/bin/env bash
# On the GPU machine after scripts/gpu-suite.sh built build-gpu: the figures of
# docs/performance.md. Writes bench-*.json and bench-*.txt to $OUT (or ./gpu-out).
set -uo pipefail
out=${OUT:-$PWD/gpu-out}
mkdir -p "$out"
v=./build-gpu/vkprof
echo "\$ vkprof bench --preset llama-1b --tokens 64 --repeats 7 --json bench-llama-1b.json"
$v bench --preset llama-1b --tokens 64 --repeats 7 --json "$out/bench-llama-1b.json" 2>&1 | tee "$out/bench-llama-1b.txt"
echo "\$ vkprof bench --preset llama-8b --tokens 64 --repeats 5 --host-iterations 10000000 --trace-events 100000 --json bench-llama-8b.json"
$v bench --preset llama-8b --tokens 64 --repeats 5 --host-iterations 10000000 --trace-events 100000 \
  --json "$out/bench-llama-8b.json" 2>&1 | tee "$out/bench-llama-8b.txt"
