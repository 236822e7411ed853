#!/usr/bin/env bash
# On the GPU machine, after `. .gl/enter.sh` and scripts/prepare-gpu.sh --llama
# here: llama.cpp's own llama-bench, unmodified, under vkprof run.
#   scripts/gpu-llama.sh build     build vkprof (build-gpu, from .gl/src) and
#                                  llama-bench (build-llama) from the npm
#                                  package's source and libraries, and write
#                                  random-weight q4_0 models of Llama 1B shape (and
#                                  8B with MODELS=all)
#   scripts/gpu-llama.sh sigint    issue 24: llama-bench run whole, then stopped
#                                  with SIGINT halfway and with --keep last; checks
#                                  that each leaves one complete trace
#   scripts/gpu-llama.sh names     issue 25: no name map (the layer names ggml's
#                                  shaders from the loaded library), the
#                                  calibration's window check, flows, the
#                                  report; setup time with the names off and on
#   scripts/gpu-llama.sh perf      issue 26: tokens/s of llama-bench plain and
#                                  under each mode (ROUNDS interleaved rounds;
#                                  RUNMODES, default: plain rot1 rot4 every
#                                  cmdbuf s32; a mode ending in p: with
#                                  --cost-probe $PROBE (16); in d (before
#                                  any p): VKPROF_LAYER_DIAG_STAMPS=top;
#                                  rotKt: the busy begins at the top; rotKbN:
#                                  --rotate K --busy N; old-MODE: MODE
#                                  with the build $VOLD; SHAPES, default:
#                                  1b, or "1b 8b"),
#                                  the split per kernel family against every
#                                  dispatch, GPU per step against the command
#                                  buffers, and the rotation's convergence
#   scripts/gpu-llama.sh hostcost  where a cheap mode's cost goes on the host:
#                                  recording per dispatch, the layer's host
#                                  spans per step, perf(1)'s hot symbols
# Logs and traces' summaries go to $OUT (or ./gpu-out).
set -uo pipefail
out=${OUT:-$PWD/gpu-out}
mkdir -p "$out"
L=$PWD/build-llama
V=${VKPROF:-$PWD/build-gpu/vkprof}
ROOT=$PWD
src=$ROOT/${VKPROF_SRC:-.gl/src}

build() {
  # vkprof always (incremental on a warm machine: .gl/src is the new snapshot)
  cmake -S "$src" -B "$ROOT/build-gpu" -G Ninja -DCMAKE_BUILD_TYPE=Release -DVKPROF_WERROR=ON -DVKPROF_BUILD_TESTS=OFF >"$out/build.log" 2>&1 &&
    cmake --build "$ROOT/build-gpu" -j16 >>"$out/build.log" 2>&1 || { tail -40 "$out/build.log"; return 1; }
  if [ -x "$L/bin/llama-bench" ] && [ -f "$L/llama-1b.gguf" ] &&
    { [ "${MODELS:-1b}" = 1b ] || [ -f "$L/llama-8b.gguf" ]; }; then
    echo "build: vkprof rebuilt; llama-bench and the models already here (a warm machine)"; return 0
  fi
  mkdir -p "$L/src" "$L/bin"
  tar -C "$L/src" -xJf "$ROOT/.gl/llama-src.tar.xz" && tar -C "$L/bin" -xJf "$ROOT/.gl/llama-libs.tar.xz" || return 1
  g++ -std=c++17 -O2 -I"$L/src/include" -I"$L/src/ggml/include" -I"$L/src/common" -I"$L/src/vendor" \
    "$L/src/tools/llama-bench/llama-bench.cpp" "$L/src/tools/llama-bench/main.cpp" -o "$L/bin/llama-bench" \
    -L"$L/bin" -l:libllama-common.so -l:libllama.vulkan.v0.4.0.so -l:libggml.vulkan.v0.4.0.so \
    -l:libggml-base.so -Wl,-rpath,'$ORIGIN' -pthread >>"$out/build.log" 2>&1 || { tail -20 "$out/build.log"; return 1; }
  local mk="python3 $src/tools/gguf/make_gguf.py --type q4_0 --tile 8 --vocab 1732 --context 8192"
  $mk -o "$L/llama-1b.gguf" --layers 16 --dim 2048 --heads 32 --kv-heads 8 --ff 8192 >>"$out/build.log" 2>&1 ||
    { tail -5 "$out/build.log"; return 1; }
  if [ "${MODELS:-1b}" != 1b ]; then
    $mk -o "$L/llama-8b.gguf" --layers 32 --dim 4096 --heads 32 --kv-heads 8 --ff 14336 >>"$out/build.log" 2>&1 ||
      { tail -5 "$out/build.log"; return 1; }
  fi
  echo "build: vkprof, llama-bench and models ready"
}

# One trace's checks: GPU slices per queue track, against the summary's counts.
check() { # summary.json
  python3 - "$1" <<'EOF'
import json, os, sys
s = json.load(open(sys.argv[1]))
d = os.path.dirname(sys.argv[1])
print("  summary:", os.path.basename(sys.argv[1]), "ended", json.dumps(s.get("ended")))
tr = s.get("trace")
if not tr:
    print("  NO TRACE"); sys.exit(1)
t = json.load(open(os.path.join(d, tr)))
ev = t["traceEvents"]
names = {}
for e in ev:
    if e.get("ph") == "M" and e.get("name") == "thread_name":
        names[(e["pid"], e["tid"])] = e["args"]["name"]
gpu = {}
last = 0
for e in ev:
    if e.get("ph") == "X" and e.get("cat") == "gpu":
        k = names.get((e["pid"], e["tid"]), str((e["pid"], e["tid"])))
        gpu[k] = gpu.get(k, 0) + 1
        last = max(last, e["ts"] + e["dur"])
print("  trace:", tr, "GPU slices per track:", gpu, "last GPU end %.3f s" % (last / 1e6))
m = t.get("metadata", {})
print("  metadata: gpu_scopes", m.get("gpu_scopes"), "dropped_events", m.get("dropped_events"),
      "overwritten", m.get("overwritten_events"), "complete_from", m.get("complete_from_monotonic_ns"),
      "until", m.get("complete_until_monotonic_ns"))
samples = collected = timed = 0
for dev in s["devices"]:
    for f in dev["queue_families"]:
        timed += f["dispatches"]["executed_timed"]
    for c in dev["contexts"]:
        ti = (c.get("snapshot") or {}).get("timing", {})
        samples += ti.get("samples", 0); collected += ti.get("scopes_collected", 0)
n = sum(gpu.values())
kept_last = m.get("overwritten_events", 0) > 0  # --keep last: the recent window only
ok = collected <= timed and n == m.get("gpu_scopes") and (n <= collected if kept_last else n == collected)
print("  executed timed %d, samples %d, collected %d, GPU slices %d: %s" % (timed, samples, collected, n, "OK" if ok else "MISMATCH"))
sys.exit(0 if ok else 1)
EOF
}

sigint() {
  export XDG_RUNTIME_DIR=${XDG_RUNTIME_DIR:-/tmp}
  local B="$L/bin/llama-bench -m $L/llama-1b.gguf -p 0 -r 1 -ngl 99"
  local rc=0
  {
    echo "== plain: $B -n 128"
    $B -n 128 2>&1 | grep -E "^\|" | tail -1
    echo "== whole run: vkprof run -o w/full --trace-events 2000000 -- $B -n ${NGEN:-2048}"
    local t0=$(date +%s.%N)
    $V run -o w/full --trace-events 2000000 -- $B -n ${NGEN:-2048} > w/full.out 2> w/full.err
    local st=$? t1=$(date +%s.%N)
    local whole=$(python3 -c "print(round($t1 - $t0, 2))")
    echo "   took $whole s, exit $st"; grep -E "^\|" w/full.out | tail -1
    sed -n '/== vkprof run/,$p' w/full.err
    check w/full/*.summary.json || rc=1
    local half=$(python3 -c "print(round($whole / 2, 1))")
    echo "== SIGINT at ${half} s: timeout -s INT $half vkprof run -o w/int --trace-events 2000000 -- $B -n ${NGEN:-2048}"
    timeout -s INT "$half" $V run -o w/int --trace-events 2000000 -- $B -n ${NGEN:-2048} > w/int.out 2> w/int.err
    echo "   exit $?"
    sed -n '/== vkprof run/,$p' w/int.err
    ls -la w/int
    check w/int/*.summary.json || rc=1
    $V report w/int/*.trace.json 2>&1 | head -24
    echo "== --keep last, SIGINT at ${half} s: timeout -s INT $half vkprof run -o w/last --keep last --trace-events 65536 -- $B -n ${NGEN:-2048}"
    timeout -s INT "$half" $V run -o w/last --keep last --trace-events 65536 -- $B -n ${NGEN:-2048} > w/last.out 2> w/last.err
    echo "   exit $?"
    sed -n '/== vkprof run/,$p' w/last.err
    check w/last/*.summary.json || rc=1
    echo "== SIGKILL at ${half} s (vkprof run finishes the spools): timeout -s KILL on the app"
    $V run -o w/kill --trace-events 2000000 -- sh -c "exec timeout -s KILL $half $B -n ${NGEN:-2048}" > w/kill.out 2> w/kill.err
    echo "   exit $?"
    sed -n '/== vkprof run/,$p' w/kill.err
    check w/kill/*.summary.json || rc=1
  } 2>&1
  return $rc
}

names() {
  export XDG_RUNTIME_DIR=${XDG_RUNTIME_DIR:-/tmp}
  local B="$L/bin/llama-bench -m $L/llama-1b.gguf -p 0 -r 1 -ngl 99 -n ${NGEN:-256}"
  local rc=0
  {
    for r in 1 2; do
      for a in off on; do
        echo "== round $r, names from loaded files $a: VKPROF_LAYER_AUTO_NAMES=$a vkprof run -o w/n-$a-$r -- $B"
        local t0=$(date +%s.%N)
        VKPROF_LAYER_AUTO_NAMES=$a $V run -o w/n-$a-$r -- $B > w/n-$a-$r.out 2> w/n-$a-$r.err
        local st=$? t1=$(date +%s.%N)
        echo "   exit $st, took $(python3 -c "print(round($t1 - $t0, 3))") s"
        grep -E "^\|" w/n-$a-$r.out | tail -1
        grep -E "shader modules|calibrat|lost:" w/n-$a-$r.err | head -5
      done
    done
    sed -n '/== vkprof run/,$p' w/n-on-2.err | head -40
    check w/n-on-2/*.summary.json || rc=1
    python3 - w/n-on-2/*.trace.json <<'PY'
import json, sys
t = json.load(open(sys.argv[1]))
ev = t["traceEvents"]; m = t["metadata"]
gpu = sum(1 for e in ev if e.get("cat") == "gpu")
fs = sum(1 for e in ev if e.get("ph") == "s")
names = {}
for e in ev:
    if e.get("cat") == "gpu":
        names[e["name"]] = names.get(e["name"], 0) + 1
hashed = [n for n in names if n.startswith("pipeline-")]
print("  calibration:", json.dumps(m.get("calibration")))
print("  GPU slices %d, flows %d (metadata %s); %d phase names, %d of them pipeline-<hash>" % (gpu, fs, m.get("flows"), len(names), len(hashed)))
print("  top names:", sorted(names.items(), key=lambda kv: -kv[1])[:8])
ok = gpu == fs and not hashed and not m["calibration"].get("inconsistent") and m["calibration"].get("window_violations") == 0
print("  ", "OK" if ok else "MISMATCH")
sys.exit(0 if ok else 1)
PY
    [ $? -eq 0 ] || rc=1
    $V report w/n-on-2/*.trace.json 2>&1 | head -30
  } 2>&1
  return $rc
}

# One mode's vkprof run arguments ("" for plain).
mode_args() {
  case "$1" in
    *p) echo "$(mode_args "${1%p}") --cost-probe ${PROBE:-16}" ;;
    *d) mode_args "${1%d}" ;; # with VKPROF_LAYER_DIAG_STAMPS=top
    plain) echo "" ;;
    every) echo "--rotate 0" ;;
    def) echo "" ;; # vkprof run with no mode option: its default
    rot*nb) local k=${1#rot}; echo "--rotate ${k%nb} --busy off" ;;
    rot*b*) local k=${1#rot}; echo "--rotate ${k%%b*} --busy ${k#*b}" ;; # rot4b4: --busy 4
    rot*t) local k=${1#rot}; echo "--rotate ${k%t}" ;; # with VKPROF_LAYER_BUSY_BEGIN=top
    rot*) echo "--rotate ${1#rot}" ;;
    cmdbuf) echo "--mode cmdbuf" ;;
    s*) echo "--sample ${1#s}" ;;
  esac
}

perf() {
  export XDG_RUNTIME_DIR=${XDG_RUNTIME_DIR:-/tmp}
  local rounds=${ROUNDS:-3} modes=${RUNMODES:-plain rot1 rot4 every cmdbuf s32}
  {
    nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv 2>/dev/null
    for shape in ${SHAPES:-1b}; do
      local B="$L/bin/llama-bench -m $L/llama-$shape.gguf -p 0 -n ${NGEN:-128} -r 3 -ngl 99"
      echo "== $shape: $B (rounds $rounds, modes $modes)"
      for r in $(seq "$rounds"); do
        for m in $modes; do
          local o=w/perf-$shape-$m-$r a vv=$V
          # old-MODE: the same mode with another build ($VOLD, default
          # build-old/vkprof), side by side in the same rounds
          case "$m" in old-*) vv=${VOLD:-$ROOT/build-old/vkprof} ;; esac
          a=$(mode_args "${m#old-}")
          rm -rf "$o"; mkdir -p "$o"
          if [ "$m" = plain ]; then
            $B > "$o/bench.out" 2> "$o/bench.err"
          else
            # a mode ending in d (before p): every stamp at the top of the
            # pipe (a diagnostic of the stamps' waits); rot*t: the busy
            # scopes' begins at the top
            local mm=${m#old-} envs=""
            mm=${mm%p}
            case "$mm" in *d) envs="VKPROF_LAYER_DIAG_STAMPS=top"; mm=${mm%d} ;; esac
            case "$mm" in rot*t) envs="$envs VKPROF_LAYER_BUSY_BEGIN=top" ;; esac
            env $envs $vv run -o "$o" --trace-events 4000000 $a -- $B > "$o/bench.out" 2> "$o/bench.err"
          fi
          local st=$? ts
          ts=$(grep -E "^\|.*tg" "$o/bench.out" | tail -1 | awk -F'|' '{print $(NF-1)}' | awk '{print $1}')
          echo "perf $shape $m round $r exit $st tok/s $ts"
        done
      done
      for m in $modes; do
        [ "$m" = plain ] || sed -n '/== vkprof run/,$p' "w/perf-$shape-$m-$rounds/bench.err" | grep -vE "^\s+(mul_mat|rms|add|rope|soft|get_rows|cpy|mul|glu|swiglu|set_rows|flash|contig|scale)" | head -30
        # the report's busy, idle, gaps and submit-to-start, from the trace
        case "$m" in plain|*p) ;; *)
          echo "== $shape $m round $rounds: vkprof report's busy and idle"
          $V report w/perf-$shape-$m-$rounds/*.trace.json 2>&1 | sed -n '/^GPU busy and idle/,/^$/p' ;;
        esac
      done
    done
    python3 - $modes <<'PY'
import glob, json, os, re, sys, statistics as st
modes = sys.argv[1:]
runs = {}
for line in open(os.environ["PERFLOG"]):
    m = re.match(r"perf (\S+) (\S+) round (\d+) exit (\d+) tok/s (\S*)", line)
    if m and m.group(5):
        runs.setdefault((m.group(1), m.group(2)), []).append(float(m.group(5)))
def fam(n):
    n = re.sub(r"^(mul_mat_vec|mul_mat|matmul)_.*", r"\1", n)
    n = re.sub(r"_(f32|f16|bf16|q4_0|q8_1|q8_0|i32|aligned|subgroup|wg\d+|norepeat|len\d+).*$", "", n)
    return n
def summary(shape, m, r):
    f = glob.glob("w/perf-%s-%s-%s/*.summary.json" % (shape, m, r))
    if not f:
        return None
    s = json.load(open(f[0]))
    d = s["devices"][0]
    # the queue family's context that timed the work (ggml uses 2 families)
    best = max(d["contexts"], key=lambda c: sum(p["calls"] for p in (c.get("snapshot") or {}).get("phases", [])))
    return s, d, best["snapshot"]
def split(shape, m, r, key):
    x = summary(shape, m, r)
    if x is None:
        return None, None, None
    s, d, n = x
    out = {}
    for p in n["phases"]:
        if p["count"] > 0 and not p.get("outer"):
            out[fam(p["name"])] = out.get(fam(p["name"]), 0) + p[key]
    return out, d["steps"], n
def outer_busy(shape, m, r):
    x = summary(shape, m, r)
    if x is None:
        return None
    s, d, n = x
    ns = sum(p.get("est_total_ns", p["total_ns"]) for p in n["phases"] if p.get("outer"))
    return ns / d["steps"] if ns > 0 else None
def step_shape(shape, m, r):
    tf = glob.glob("w/perf-%s-%s-%s/*.trace.json" % (shape, m, r))
    if not tf:
        return
    t = json.load(open(tf[0]))
    per = {}
    for e in t["traceEvents"]:
        if e.get("ph") == "X" and e.get("cat") == "gpu":
            k = e["args"].get("step", 0)
            per[k] = per.get(k, 0) + 1
    seq = [per.get(k, 0) for k in range(1, max(per) + 1)] if per else []
    hist = {}
    for n in seq:
        hist[n] = hist.get(n, 0) + 1
    print("  %s: dispatches per step, steps 1-60: %s" % (m, seq[:60]))
    print("  %s: steps by dispatch count: %s" % (m, sorted(hist.items(), key=lambda kv: -kv[1])[:12]))
shapes = sorted({k[0] for k in runs})
R = max(len(v) for v in runs.values()) if runs else 0
for shape in shapes:
    base = runs.get((shape, "plain"))
    print("\n== %s tokens/s, interleaved rounds: mean +- its standard error, median; ratio of means to plain's (+- s.e.), ratio of medians" % shape)
    def se(v):
        return st.stdev(v) / len(v) ** 0.5 if len(v) > 1 else 0.0
    for m in modes:
        v = runs.get((shape, m), [])
        if not v:
            continue
        a, sa = st.mean(v), se(v)
        if base:
            b, sb = st.mean(base), se(base)
            r = a / b
            sr = r * ((sa / a) ** 2 + (sb / b) ** 2) ** 0.5
            rm = st.median(v) / st.median(base)
        else:
            r = sr = rm = float("nan")
        print("  %-7s n %2d  mean %7.1f +- %5.1f  median %7.1f  x%.3f +- %.3f  median x%.3f" % (m, len(v), a, sa, st.median(v), r, sr, rm))
    for m in modes:
        print("  %-7s %s" % (m, " ".join("%.0f" % x for x in runs.get((shape, m), []))))
    # the cost probe's own statement, run by run (--cost-probe)
    for m in modes:
        got = []
        for f in sorted(glob.glob("w/perf-%s-%s-*/bench.err" % (shape, m))):
            for line in open(f, errors="replace"):
                c = re.search(r"profiling cost, measured in this run: ([-+][0-9.]+)% \+- ([0-9.]+)%", line)
                if c:
                    got.append((float(c.group(1)), float(c.group(2))))
        if got:
            mean = st.mean(g[0] for g in got)
            se = (sum(g[1] ** 2 for g in got) ** 0.5) / len(got)
            print("  %-7s cost probe: step wall time %+.2f%% +- %.2f%% (mean of %d runs: %s)" % (
                m, mean, se, len(got), " ".join("%+.1f" % g[0] for g in got)))
    step_shape(shape, "every", R)
    ev, esteps, en = split(shape, "every", R, "total_ns")
    cb, csteps, _ = split(shape, "cmdbuf", R, "total_ns")
    if ev:
        te = sum(ev.values())
        print("  every dispatch: GPU %.3f ms per step (%d steps)" % (te / esteps / 1e6, esteps))
    if cb:
        tc = sum(cb.values())
        print("  command buffers: GPU busy %.3f ms per step (%d steps)" % (tc / csteps / 1e6, csteps))
    for m in modes:
        if not m.startswith("rot") or m.endswith("p"):
            continue
        rv, rsteps, rn = split(shape, m, R, "est_total_ns")
        if not rv or not ev:
            continue
        tr = sum(rv.values())
        rot = rn["timing"].get("rotation", {})
        print("  %s: GPU %.3f ms per step (est., %d steps; %d calls a step, period %d steps, %d passes, %d changed steps)" % (
            m, tr / rsteps / 1e6, rsteps, rot.get("calls_per_step", 0), rot.get("period_steps", 0), rot.get("cycles", 0), rot.get("changed_steps", 0)))
        if cb:
            print("    est. per step / command-buffer busy per step: %.3f; every-dispatch / command buffers: %.3f" % (
                (tr / rsteps) / (tc / csteps), (te / esteps) / (tc / csteps)))
        # its own busy time (the command buffers' outer scopes, every round)
        bus = [b for b in (outer_busy(shape, m, k) for k in range(1, R + 1)) if b]
        cbs = []
        for k in range(1, R + 1):
            c2, s2, _ = split(shape, "cmdbuf", k, "total_ns")
            if c2:
                cbs.append(sum(c2.values()) / s2)
        if bus and cbs:
            print("    its GPU busy: %.4f ms per step (mean of %d runs: %s); --mode cmdbuf %.4f (%d runs: %s); ratio %.3f" % (
                st.mean(bus) / 1e6, len(bus), " ".join("%.4f" % (b / 1e6) for b in bus),
                st.mean(cbs) / 1e6, len(cbs), " ".join("%.4f" % (c / 1e6) for c in cbs),
                st.mean(bus) / st.mean(cbs)))
        worst = 0
        print("    %-28s %8s %8s %6s" % ("family", "every %", m + " %", "pp"))
        for f in sorted(ev, key=lambda k: -ev[k]):
            a = 100 * ev[f] / te
            b = 100 * rv.get(f, 0) / tr
            worst = max(worst, abs(a - b))
            if a >= 0.5 or abs(a - b) >= 0.5:
                print("    %-28s %8.2f %8.2f %+6.2f" % (f, a, b, b - a))
        print("    largest difference: %.2f pp" % worst)
        # convergence: the running estimate's shares (first calls left out),
        # step by step, against the every-dispatch shares
        tf = glob.glob("w/perf-%s-%s-%s/*.trace.json" % (shape, m, R))
        if not tf:
            continue
        t = json.load(open(tf[0]))
        sl = sorted((e for e in t["traceEvents"] if e.get("ph") == "X" and e.get("cat") == "gpu"), key=lambda e: e["ts"])
        calls = {}
        outer = {p["name"] for p in rn["phases"] if p.get("outer")}
        sl = [e for e in sl if e["name"] not in outer]
        for p in rn["phases"]:
            if p["calls"] > 0 and not p.get("outer"):
                calls[fam(p["name"])] = calls.get(fam(p["name"]), 0) + p["calls"]
        seen, sums, cnts, last_bad = set(), {}, {}, None
        steps_seen = 0
        bystep = {}
        for e in sl:
            bystep.setdefault(e["args"].get("step", 0), []).append(e)
        for stp in sorted(bystep):
            for e in bystep[stp]:
                if e["name"] not in seen:
                    seen.add(e["name"]); continue
                f = fam(e["name"])
                sums[f] = sums.get(f, 0) + float(e["dur"]); cnts[f] = cnts.get(f, 0) + 1
            est = {f: sums[f] / cnts[f] * calls.get(f, 0) for f in sums}
            tot = sum(est.values())
            ok = tot > 0 and all(abs(100 * est.get(f, 0) / tot - 100 * ev[f] / te) <= 1.0 for f in ev if 100 * ev[f] / te >= 0.5)
            if not ok:
                last_bad = stp
        last = max(bystep) if bystep else 0
        if last_bad is not None and last_bad >= last:
            print("    convergence: not every family (>= 0.5%%) within 1 pp of every dispatch by the last step (%d)" % last)
        else:
            print("    convergence: every family (>= 0.5%%) within 1 pp of every dispatch from step %d on (of %d)" % (
                (last_bad + 1) if last_bad is not None else 1, last))
PY
  } 2>&1
}

# Where a cheap mode's cost goes on the host: the host cost of recording a
# dispatch (linked_app --time-record, 261 dispatches a step as llama.cpp's 1B
# graph), plain and under each mode; then llama-bench once under each mode,
# with the trace's host spans summed by name per step; and, where perf(1) is
# installed, the hottest symbols of one run.
hostcost() {
  export XDG_RUNTIME_DIR=${XDG_RUNTIME_DIR:-/tmp}
  local la=$ROOT/build-gpu/tests/linked_app modes=${RUNMODES:-rot1p rot4p everyp}
  {
    echo "== linked_app --time-record --dispatches 261 --iterations 400"
    for m in plain $modes s1000000; do
      local a; a=$(mode_args "$m"); rm -rf w/hc-la-$m; mkdir -p w/hc-la-$m
      if [ "$m" = plain ]; then
        "$la" --dispatches 261 --iterations 400 --time-record 2>&1 | grep record_ns | sed "s/^/  $m: /"
      else
        $V run -o w/hc-la-$m $a -- "$la" --dispatches 261 --iterations 400 --time-record 2>&1 |
          grep -E "record_ns|profiling cost|a step took" | sed "s/^/  $m: /"
      fi
    done
    local B="$L/bin/llama-bench -m $L/llama-1b.gguf -p 0 -n ${NGEN:-128} -r 3 -ngl 99"
    for m in $modes s1000000; do
      local o=w/hc-$m a; a=$(mode_args "$m"); rm -rf "$o"; mkdir -p "$o"
      $V run -o "$o" --trace-events 4000000 $a -- $B > "$o/bench.out" 2> "$o/bench.err"
      echo "== llama-bench 1b under $m: tok/s $(grep -E "^\|.*tg" "$o/bench.out" | tail -1 | awk -F'|' '{print $(NF-1)}')"
      grep -E "profiling cost|a step took|steps:" "$o/bench.err" | head -4
      python3 - "$o" <<'PY'
import glob, json, sys, collections
o = sys.argv[1]
tf = glob.glob(o + "/*.trace.json")
if not tf:
    print("  no trace"); sys.exit(0)
t = json.load(open(tf[0]))
s = json.load(open(glob.glob(o + "/*.summary.json")[0]))
steps = max(1, s["devices"][0].get("steps", 1))
tot, cnt = collections.Counter(), collections.Counter()
for e in t["traceEvents"]:
    if e.get("ph") == "X" and e.get("cat") != "gpu":
        tot[e["name"]] += e["dur"]; cnt[e["name"]] += 1
print("  host spans, us per step over %d steps (count):" % steps)
for k, v in tot.most_common(12):
    print("    %-36s %9.2f  (%d, %.2f us each)" % (k, v / steps, cnt[k], v / cnt[k]))
PY
    done
    if type -P perf >/dev/null 2>&1; then # perf(1), not this script's perf()
      echo "== perf record, rot1"
      command perf record -q -g -o w/perf.data -- $V run -o w/hc-perf --rotate 1 -- $B >/dev/null 2>&1
      command perf report -i w/perf.data --no-children --sort dso,sym --stdio 2>/dev/null | grep -v "^#" | grep -v "^$" | head -60
    else
      echo "== no perf(1) here"
    fi
  } 2>&1
}

W=$PWD/gpu-work; mkdir -p "$W"; cd "$W" || exit 1; mkdir -p w
case "${1:-}" in
  build) build ;;
  sigint) sigint ;;
  names) names ;;
  perf) export PERFLOG=$out/perf.log; perf | tee "$PERFLOG" ;;
  hostcost) hostcost | tee "$out/hostcost.log" ;;
  *) echo "usage: $0 build|sigint|names|perf|hostcost" >&2; exit 2 ;;
esac
