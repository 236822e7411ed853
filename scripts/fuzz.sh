#!/usr/bin/env bash
# Fuzz the trace reader of `vkprof report` (libFuzzer + ASan + UBSan).
#   scripts/fuzz.sh [SECONDS]     default 60
# Needs clang with libFuzzer (Debian 12: clang libclang-rt-14-dev) and
# libcjson-dev. Builds into build-fuzz/, seeds from fuzz/corpus/, keeps new
# inputs in build-fuzz/corpus/ and crashes in build-fuzz/artifacts/.
# Exits nonzero when the fuzzer finds a crash, a leak or undefined behaviour.
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-60}
case $secs in '' | *[!0-9]*) echo "usage: $0 [SECONDS]" >&2; exit 2 ;; esac

cc=${CC_FUZZ:-}
if [ -z "$cc" ]; then
  for c in clang clang-14 clang-15 clang-16; do
    if command -v "$c" >/dev/null 2>&1; then cc=$c; break; fi
  done
fi
if [ -z "$cc" ]; then
  echo "fuzz.sh: no clang found (apt-get install clang libclang-rt-14-dev)" >&2
  exit 1
fi
if ! pkg-config --exists libcjson; then
  echo "fuzz.sh: libcjson not found (apt-get install libcjson-dev pkg-config)" >&2
  exit 1
fi

out=build-fuzz
mkdir -p "$out/corpus" "$out/artifacts"
# shellcheck disable=SC2046
"$cc" -g -O1 -std=c11 -Wall -Wextra -Werror \
  -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer \
  -Itools/report -Isrc $(pkg-config --cflags libcjson) \
  fuzz/fuzz_trace_reader.c tools/report/trace_reader.c tools/report/report_print.c \
  tools/report/report_svg.c tools/report/pftrace_reader.c \
  $(pkg-config --libs libcjson) -lm -o "$out/fuzz_trace_reader"
echo "fuzz.sh: built $out/fuzz_trace_reader with $cc; fuzzing for ${secs}s"

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
"$out/fuzz_trace_reader" \
  -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
  -dict=fuzz/trace.dict -artifact_prefix="$out/artifacts/" -print_final_stats=1 \
  "$out/corpus" fuzz/corpus
echo "fuzz.sh: no crash in ${secs}s"
