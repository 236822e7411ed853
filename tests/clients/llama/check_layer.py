#!/usr/bin/env python3
"""ctest client_llama_layer (issue 9): llama.cpp's Vulkan backend, unmodified,
under VK_LAYER_vkprof on lavapipe.

  check_layer.py core|markers|perf|rotate WORKDIR LAYER_DIR VKPROF

ctests client_llama_layer (core: 1, 2, 5), client_llama_layer_markers (3),
client_llama_layer_perf (4) and client_llama_layer_rotate (6). One q4_0 model, run.mjs (16 greedy tokens) plain
once, then under the layer:
 1. no names (VKPROF_LAYER_AUTO_NAMES=off): the tokens are the plain run's; one summary has the device,
    every dispatch timed (dispatches == dispatches_timed, nothing in
    untimed_phase_table_full), the one accounting (samples = collected +
    dropped + pending) with nothing dropped, pending or lost and no error
    counted; the phases' counts add up to the dispatches and every phase is
    `pipeline-<16 hex>`. The trace holds every scope (no dropped event, none
    unmapped, one gpu event per dispatch); slices on a queue do not overlap;
    and every GPU slice lies inside the host window of its step: from the
    start of the step's first vkQueueSubmit span to the end of the wait span
    that closed the step. At least one step per graph.
 2. a name map from `vkprof names libggml-vulkan.so`: same tokens, same
    dispatches, every phase named from the map, and per name the counts of
    run 1's hashes that the map gives that name. Then with no map and the
    names from loaded files on (the default): the phases and their counts
    are the map run's (the layer finds ggml's shaders in the loaded
    libggml-vulkan.so).
 3. GGML_VK_DEBUG_MARKERS=1 (ggml names its pipelines through debug utils):
    same tokens, same dispatches, no phase left as pipeline-<hash> or named
    by ggml's per-graph queue label, and per category (compare_perf.py's) the
    dispatches of run 1's hashes named through the map.
 4. GGML_VK_PERF_LOGGER=1 with the layer and the map, in the same process:
    the layer's per-pipeline split against the logger's per-op split
    (compare_perf.py): the same counts per category, and times within the
    logger's own overhead (it puts a barrier and a stamp after every node, so
    its time per node holds the layer's, give or take where the two put the
    boundary between neighbours): each category of 5% or more of the time
    within 0.25..1.2 of the logger's, the total within 0.3..1.05. (Loose below:
    the logger's barriers cost 40 to 160 us a node on a loaded 2-core lavapipe;
    what they catch is a layer that misconverts or misplaces its stamps.)
    get_rows is left out of the time bounds: it is each graph's first node, and
    the logger's time for it runs from its stamp at the top of the command
    buffer, over the inputs' upload and barrier, which the layer does not time.
 6. issue 26: VKPROF_LAYER_ROTATE=16 against every dispatch: every dispatch
    timed or not_in_window, the one accounting, each phase's calls equal to
    every dispatch's counts, every phase timed with its first call apart, and
    each category of 10% or more within 15 pp of every dispatch's share
    (lavapipe's noise); with VKPROF_LAYER_COST_BLOCK=2 too: steps with and
    without profiling measured, the others untimed cost_probe; --mode cmdbuf:
    `vkprof report` on its trace gives GPU busy and idle per step.
 5. the Khronos validation layer below ours, then above it (4 tokens): no
    message but ggml's own known one (its instance's VkLayerSettingsCreateInfoEXT,
    unknown to Debian 12's validation layer).
Skips (77) only when scripts/setup-llama.sh was not run.
"""

import glob
import json
import os
import re
import subprocess
import sys

import common as c
import compare_perf

HEX_NAME = re.compile(r"^pipeline-[0-9a-f]{16}$")
WAITS = {"vkWaitForFences", "vkGetFenceStatus", "vkWaitSemaphores", "vkQueueWaitIdle", "vkDeviceWaitIdle"}
GGML_KNOWN_VALIDATION = "VUID-VkInstanceCreateInfo-pNext-pNext"
REC = "vkBeginCommandBuffer..vkEndCommandBuffer"


class LayerRun:
    """run.mjs under the layer with its own output dir; the summary with a device and its trace."""

    def __init__(self, work, tag, layer_dir, env=None, args=()):
        self.out = os.path.join(work, tag)
        os.makedirs(self.out, exist_ok=True)
        for f in glob.glob(os.path.join(self.out, "*.json")):
            os.remove(f)
        e = {"VK_ADD_LAYER_PATH": layer_dir, "VKPROF_LAYER_OUTPUT_DIR": self.out,
             "VK_INSTANCE_LAYERS": "VK_LAYER_vkprof"}
        e.update(env or {})
        self.run = c.run_llama(MODEL, env_extra=e, args=args)
        self.tag = tag
        self.summaries = [json.load(open(f)) for f in sorted(glob.glob(os.path.join(self.out, "*.summary.json")))]
        with_dev = [s for s in self.summaries if s.get("devices")]
        self.summary = with_dev[0] if len(with_dev) == 1 else None
        self.n_with_device = len(with_dev)
        self.device = self.summary["devices"][0] if self.summary else None
        self.trace = None
        if self.summary and self.summary.get("trace"):
            self.trace = json.load(open(os.path.join(self.out, self.summary["trace"])))

    def phases(self):
        out = {}
        for ctx in self.device["contexts"]:
            for p in (ctx.get("snapshot") or {}).get("phases", []):
                if p["count"]:
                    e = out.setdefault(p["name"], [0, 0])
                    e[0] += p["count"]
                    e[1] += p["total_ns"]
        return out

    def dispatches(self):
        """dispatches executed with a stamp (each execution of a recording is one)"""
        return sum(f["dispatches"]["executed_timed"] for f in self.device["queue_families"])


def check_common(ok, r, plain):
    t = r.tag
    ok(r.run.rc == 0, "%s: run.mjs under the layer exits 0 (%.1f s)" % (t, r.run.secs), c.tail(r.run.stderr))
    ok(r.run.tokens == plain.tokens, "%s: the plain run's tokens" % t, "%s vs %s" % (r.run.tokens, plain.tokens))
    ok(r.n_with_device == 1, "%s: one summary with a device (of %d summaries: node-llama-cpp's probe "
       "process creates an instance only)" % (t, len(r.summaries)), r.out)
    return r.device is not None


def check_accounting(ok, r):
    t, dev = r.tag, r.device
    ok("llvmpipe" in dev["name"] and dev.get("profiled") is True, "%s: device %r profiled" % (t, dev["name"]), dev)
    ok(any(f["timed"] for f in dev["queue_families"]), "%s: a timed queue family" % t, dev["queue_families"])
    for fam in dev["queue_families"]:
        f, d = fam["family"], fam["dispatches"]
        if d["recorded"] == 0:
            continue  # ggml's transfer family on a real GPU: copies only
        ok(d["recorded"] > 0 and d["recorded"] == d["recorded_timed"],
           "%s: family %d: %d dispatches recorded, all timed" % (t, f, d["recorded"]), d)
        ok(d["executed"] == d["executed_timed"] + sum(d["executed_untimed"].values()),
           "%s: family %d: every dispatch executed is timed or untimed by reason" % (t, f), d)
        ok(not any(d["executed_untimed"].values()), "%s: family %d: none untimed" % (t, f), d)
        phases = sum(p["count"] for ctx in dev["contexts"] if ctx["family"] == f
                     for p in ctx["snapshot"]["phases"])
        collected = sum(ctx["snapshot"]["timing"]["scopes_collected"] for ctx in dev["contexts"]
                        if ctx["family"] == f)
        ok(phases == d["executed_timed"] == collected,
           "%s: family %d: the phases' counts add up to the dispatches executed and the collected "
           "scopes" % (t, f), "%d, %d, %d" % (phases, d["executed_timed"], collected))
    for ctx in dev["contexts"]:
        snap = ctx["snapshot"]
        tm = snap["timing"]
        ok(tm["samples"] == tm["scopes_collected"] + tm["scopes_dropped"] + tm["scopes_pending"],
           "%s: one accounting: samples %d = collected %d + dropped %d + pending %d" % (
               t, tm["samples"], tm["scopes_collected"], tm["scopes_dropped"], tm["scopes_pending"]))
        ok(tm["scopes_dropped"] == 0 and tm["scopes_pending"] == 0 and not any(tm["lost"].values()),
           "%s: nothing dropped, pending or lost" % t, tm)
        ok(not any(snap["errors"].values()), "%s: no error counted" % t,
           {k: v for k, v in snap["errors"].items() if v})


def check_trace(ok, r, graphs):
    t, tr = r.tag, r.trace
    if not ok(tr is not None, "%s: a trace file" % t):
        return
    meta = tr["metadata"]
    ev = tr["traceEvents"]
    gpu = [e for e in ev if e.get("cat") == "gpu" and e.get("ph") == "X"]
    host = [e for e in ev if e.get("cat") == "host" and e.get("ph") == "X"]
    steps = {e["args"]["step"]: e["ts"] for e in ev if e.get("cat") == "step"}
    ok(meta["dropped_events"] == 0 and meta["unmapped_gpu_scopes"] == 0, "%s: no dropped event, no unmapped scope" % t,
       meta)
    ok(len(gpu) == meta["gpu_scopes"] == r.dispatches(), "%s: one gpu slice per dispatch (%d)" % (t, len(gpu)),
       "%d events, gpu_scopes %d, dispatches %d" % (len(gpu), meta["gpu_scopes"], r.dispatches()))
    gpu_steps = sorted({g["args"]["step"] for g in gpu})
    ok(len(steps) >= graphs and len(gpu_steps) >= graphs,
       "%s: %d steps, %d with GPU work, for %d graphs" % (t, len(steps), len(gpu_steps), graphs))
    # slices on one queue do not overlap (1 ns: the trace's us carry 3 decimals)
    by_tid = {}
    for g in gpu:
        by_tid.setdefault(g["tid"], []).append(g)
    overlaps = 0
    for lst in by_tid.values():
        lst.sort(key=lambda g: g["ts"])
        overlaps += sum(1 for a, b in zip(lst, lst[1:]) if b["ts"] < a["ts"] + a["dur"] - 0.001)
    ok(overlaps == 0, "%s: GPU slices on a queue do not overlap" % t, "%d overlaps" % overlaps)
    # host window of each step: first submit span's start .. end of the wait span that closed it
    submits, waits = {}, []
    # the layer closes a step in its own collection span, right after the
    # app's wait returned (issue 26: its collection is not billed to the wait)
    collects = [h for h in host if h["name"] == "vkprof layer: collect"]
    for h in host:
        if h["name"] == "vkQueueSubmit" or h["name"] == "vkQueueSubmit2":
            k = h["args"]["step"]
            submits[k] = min(submits.get(k, h["ts"]), h["ts"])
        elif h["name"] in WAITS:
            waits.append(h)
    outside, lead, tail_ = [], [], []
    for g in gpu:
        k = g["args"]["step"]
        if k not in submits or k not in steps:
            outside.append((g, "step %d has no submit span or never closed" % k))
            continue
        close = steps[k]
        # the wait span in which the step closed (the instant lies inside it)
        w_end = min((w["ts"] + w["dur"] for w in waits if w["ts"] - 0.001 <= close <= w["ts"] + w["dur"] + 0.001),
                    default=None)
        if w_end is None:
            inc = [c for c in collects if c["ts"] - 0.001 <= close <= c["ts"] + c["dur"] + 0.001]
            if inc:
                # the wait span that ended just before that collection span
                w_end = max((w["ts"] + w["dur"] for w in waits
                             if w["tid"] == inc[0]["tid"] and w["ts"] + w["dur"] <= inc[0]["ts"] + 0.001),
                            default=None)
        if w_end is None:
            outside.append((g, "step %d closed at %.3f outside any wait span" % (k, close)))
            continue
        g0, g1 = g["ts"], g["ts"] + g["dur"]
        if g0 < submits[k] - 0.001 or g1 > w_end + 0.001:
            outside.append((g, "window %.3f..%.3f" % (submits[k], w_end)))
        else:
            lead.append(g0 - submits[k])
            tail_.append(w_end - g1)
    ok(not outside, "%s: every GPU slice inside its step's host window (submit .. wait)" % t,
       "; ".join("%s step %d at %.3f+%.3f: %s" % (g["name"], g["args"]["step"], g["ts"], g["dur"], why)
                 for g, why in outside[:5]) + (" (%d in all)" % len(outside)))
    if lead:
        print("   %s: GPU slices start %.1f us or more after their step's first submit and end %.1f us or "
              "more before its wait returns" % (t, min(lead), min(tail_)))
    # issue 26: the app's recordings are spans (vkBeginCommandBuffer to
    # vkEndCommandBuffer, off the span stack), nested with the thread's
    # other spans however ggml records its buffers
    rec = [h for h in host if h["name"] == REC]
    bad = []
    for a_ in rec:
        k, s0, e0 = (a_["pid"], a_["tid"]), a_["ts"], a_["ts"] + a_["dur"]
        for b_ in host:
            if b_ is a_ or (b_["pid"], b_["tid"]) != k:
                continue
            s1, e1 = b_["ts"], b_["ts"] + b_["dur"]
            apart = e0 <= s1 + 0.001 or e1 <= s0 + 0.001
            holds = s0 <= s1 + 0.001 and e1 <= e0 + 0.001
            if not apart and (b_["name"] == REC or not holds):
                bad.append((a_["ts"], b_["name"], b_["ts"]))
    ok(len(rec) >= graphs and not bad,
       "%s: %d recording spans, each apart from the others and holding or apart from every other span"
       % (t, len(rec)), bad[:3])


def load_map(path):
    m = {}
    for line in open(path):
        line = line.split("#", 1)[0].strip()
        if line:
            h, n = line.split(None, 1)
            m[h.lower()] = n.strip()
    return m


def check_validation(ok, layer_dir, plain, order):
    layers = {"below": "VK_LAYER_vkprof:VK_LAYER_KHRONOS_validation",
              "above": "VK_LAYER_KHRONOS_validation:VK_LAYER_vkprof"}[order]
    work = os.path.join(WORK, "validation-" + order)
    os.makedirs(work, exist_ok=True)
    r = c.run_llama(MODEL, env_extra={"VK_ADD_LAYER_PATH": layer_dir, "VKPROF_LAYER_OUTPUT_DIR": work,
                                      "VK_INSTANCE_LAYERS": layers}, args=["--tokens", "4"])
    ok(r.rc == 0 and r.tokens == plain.tokens[:4], "validation %s ours: exit 0, the plain run's first 4 tokens (%.1f s)"
       % (order, r.secs), "rc %d, %s\n%s" % (r.rc, r.tokens, c.tail(r.stderr)))
    text = r.stdout + r.stderr
    msgs = re.findall(r"^(VUID-[A-Za-z0-9_-]+|UNASSIGNED-[A-Za-z0-9_.-]+|Validation (?:Error|Warning)[^\n]*)",
                      text, re.M)
    other = [m for m in msgs if m != GGML_KNOWN_VALIDATION]
    ok(not other, "validation %s ours: no message but ggml's known %s (%d of those)"
       % (order, GGML_KNOWN_VALIDATION, len(msgs) - len(other)),
       "\n".join(other[:10]) + "\n" + c.tail(text, 2000))


def part_core(ok, layer_dir, vkprof, plain, graphs):
    # 1. no names
    r1 = LayerRun(WORK, "hashes", layer_dir, env={"VKPROF_LAYER_AUTO_NAMES": "off"})
    if check_common(ok, r1, plain):
        check_accounting(ok, r1)
        check_trace(ok, r1, graphs)
        ph1 = r1.phases()
        bad = [n for n in ph1 if not HEX_NAME.match(n)]
        ok(not bad, "hashes: every phase is pipeline-<hash> (%d phases)" % len(ph1), bad)
        # 2. name map from the shipped library
        nmap, names = make_map(ok, vkprof)
        r2 = LayerRun(WORK, "map", layer_dir, env={"VKPROF_LAYER_NAMES": names})
        if check_common(ok, r2, plain):
            check_accounting(ok, r2)
            ph2 = r2.phases()
            ok(r2.dispatches() == r1.dispatches(), "map: the same %d dispatches" % r1.dispatches(), r2.dispatches())
            unnamed = [n for n in ph2 if n not in nmap.values()]
            ok(not unnamed, "map: every phase named from the map: %s" % ", ".join(sorted(ph2)), unnamed)
            want = {}
            for h, (cnt, _) in ph1.items():
                n = nmap.get(h[len("pipeline-"):], h)
                want[n] = want.get(n, 0) + cnt
            ok(want == {n: v[0] for n, v in ph2.items()}, "map: per name, the counts of the hashes it names",
               "%s vs %s" % (want, {n: v[0] for n, v in ph2.items()}))
            # 2b. no map: the layer names them from the loaded library itself
            r2b = LayerRun(WORK, "auto", layer_dir)
            if check_common(ok, r2b, plain):
                got = {n: v[0] for n, v in r2b.phases().items()}
                ok(got == {n: v[0] for n, v in ph2.items()},
                   "auto: no map, the map run's names and counts: %s" % ", ".join(sorted(got)),
                   "%s vs %s" % (got, {n: v[0] for n, v in ph2.items()}))
    # 5. validation below and above the layer
    check_validation(ok, layer_dir, plain, "below")
    check_validation(ok, layer_dir, plain, "above")


def make_map(ok, vkprof):
    lib = os.path.join(c.HERE, "node_modules", "@node-llama-cpp", "linux-x64-vulkan", "bins", "linux-x64-vulkan",
                       "libggml-vulkan.so")
    names = os.path.join(WORK, "ggml.names")
    p = subprocess.run([vkprof, "names", "-o", names, lib], capture_output=True, text=True)
    ok(p.returncode == 0, "vkprof names libggml-vulkan.so: %s" % p.stderr.strip(), p.stderr)
    return (load_map(names) if p.returncode == 0 else {}), names


def part_markers(ok, layer_dir, vkprof, plain, graphs):
    # 3. GGML_VK_DEBUG_MARKERS=1, against the hashes of a run without it
    r1 = LayerRun(WORK, "hashes", layer_dir, env={"VKPROF_LAYER_AUTO_NAMES": "off"})
    r3 = LayerRun(WORK, "markers", layer_dir, env={"GGML_VK_DEBUG_MARKERS": "1"})
    nmap, _ = make_map(ok, vkprof)
    if check_common(ok, r1, plain) and check_common(ok, r3, plain):
        check_accounting(ok, r3)
        ph3 = r3.phases()
        ok(r3.dispatches() == r1.dispatches(), "markers: the same %d dispatches" % r1.dispatches(), r3.dispatches())
        hashed = [n for n in ph3 if HEX_NAME.match(n)]
        ok(not hashed, "markers: no phase left as pipeline-<hash>: %s" % ", ".join(sorted(ph3)), hashed)
        ok("ggml_backend_vk_graph_compute" not in ph3,
           "markers: ggml's per-graph queue label does not hide the pipelines' names")
        # ggml's pipeline names are not its shader names (rms_norm_mul_f32 runs
        # rms_norm_f32), so compare by category: the same dispatches per
        # category as run 1's hashes named through the map, none uncategorised
        cat3, cat1 = {}, {}
        for n, (cnt, _) in ph3.items():
            k = compare_perf.category_of_pipeline(n)
            cat3[k] = cat3.get(k, 0) + cnt
        for h, (cnt, _) in r1.phases().items():
            k = compare_perf.category_of_pipeline(nmap.get(h[len("pipeline-"):], h))
            cat1[k] = cat1.get(k, 0) + cnt
        ok(cat3 == cat1 and "other" not in cat3,
           "markers: per category the dispatches of the hashes the map names: %s" % cat3, cat1)
        print("   markers: %s" % ", ".join("%s %d" % (n, v[0]) for n, v in sorted(ph3.items())))


def part_perf(ok, layer_dir, vkprof, plain, graphs):
    # 4. the perf logger's split, same process
    _, names = make_map(ok, vkprof)
    r4 = LayerRun(WORK, "perf", layer_dir, env={"VKPROF_LAYER_NAMES": names, "GGML_VK_PERF_LOGGER": "1"})
    if not check_common(ok, r4, plain):
        return
    with open(os.path.join(WORK, "perf-layer.stderr"), "w") as f:
        f.write(r4.run.stderr)
    import perf_logger
    try:
        perf = perf_logger.parse(r4.run.stderr.splitlines())
    except perf_logger.ParseError as e:
        ok(False, "perf: the logger's tables parse", str(e))
        return
    json.dump(perf, open(os.path.join(WORK, "perf-layer.json"), "w"), indent=1)
    ok(perf["tables"] == graphs, "perf: one logger table per graph (%d)" % graphs, perf["tables"])
    res = compare_perf.compare(r4.summary, perf)
    compare_perf.print_table(res)
    json.dump(res, open(os.path.join(WORK, "compare.json"), "w"), indent=1)
    ok(res["unnamed_dispatches"] == 0, "perf: every dispatch named")
    for cat, v in res["categories"].items():
        # one node of FLASH_ATTN_EXT is flash_attn + fa_split_k_reduce where ggml splits k
        same = v["layer_dispatches"] == v["perf_nodes"] or (
            cat == "flash_attn" and v["layer_dispatches"] == 2 * v["perf_nodes"])
        ok(same and cat != "other", "perf: %s: %d dispatches for %d logger nodes (%s)" % (
            cat, v["layer_dispatches"], v["perf_nodes"], ", ".join(v["layer_names"] + v["perf_kinds"])))
        if (v["perf_share"] or 0) >= 0.05 and cat != "get_rows":
            ok(v["ratio"] is not None and 0.25 <= v["ratio"] <= 1.2,
               "perf: %s: layer %.1f ms vs logger %.1f ms, ratio %.3f in 0.25..1.2"
               % (cat, v["layer_ms"], v["perf_ms"], v["ratio"] or 0))
    nodes = max(1, sum(v["perf_nodes"] for v in res["categories"].values()))
    ok(res["ratio"] is not None and 0.3 <= res["ratio"] <= 1.05,
       "perf: total: layer %.1f ms vs logger %.1f ms, ratio %.3f in 0.3..1.05 (the logger's overhead: %.1f us "
       "a node)" % (res["layer_total_ms"], res["perf_total_ms"], res["ratio"] or 0,
                    1000 * (res["perf_total_ms"] - res["layer_total_ms"]) / nodes))


def rot_phases(r):
    """name -> {calls, count, est, first} of the phases with calls, all contexts."""
    out = {}
    for ctx in r.device["contexts"]:
        for p in (ctx.get("snapshot") or {}).get("phases", []):
            if p["calls"] and not p.get("outer"):
                e = out.setdefault(p["name"], {"calls": 0, "count": 0, "est": 0, "first": 0})
                e["calls"] += p["calls"]
                e["count"] += p["count"]
                e["est"] += p["est_total_ns"]
                e["first"] += p.get("first_calls", 0)
    return out


def split_rows(ev, rp):
    """(category, every dispatch's share %, the rotated estimate's share %), largest first"""
    cats_e, cats_r = {}, {}
    for n, v in ev.items():
        k = compare_perf.category_of_pipeline(n)
        cats_e[k] = cats_e.get(k, 0) + v[1]
    for n, v in rp.items():
        k = compare_perf.category_of_pipeline(n)
        cats_r[k] = cats_r.get(k, 0) + v["est"]
    te, tr = sum(cats_e.values()), sum(cats_r.values())
    return [(k, 100.0 * cats_e[k] / te, 100.0 * cats_r.get(k, 0) / tr)
            for k in sorted(cats_e, key=lambda k: -cats_e[k])]


def check_rotated(ok, r, reasons):
    """every dispatch timed or untimed for one of `reasons`; the one accounting; nothing lost"""
    t = r.tag
    for fam in r.device["queue_families"]:
        f, d = fam["family"], fam["dispatches"]
        if d["recorded"] == 0:
            continue
        ok(d["executed"] == d["executed_timed"] + sum(d["executed_untimed"].values()),
           "%s: family %d: every dispatch executed is timed or untimed by reason" % (t, f), d)
        other = {k: v for k, v in d["executed_untimed"].items() if v and k not in reasons}
        ok(not other and all(d["executed_untimed"][k] > 0 for k in reasons),
           "%s: family %d: %d timed, untimed only %s (%s)" % (
               t, f, d["executed_timed"], "/".join(reasons),
               ", ".join("%d" % d["executed_untimed"][k] for k in reasons)), d["executed_untimed"])
        ctxs = [ctx for ctx in r.device["contexts"] if ctx["family"] == f]
        collected = sum(ctx["snapshot"]["timing"]["scopes_collected"] for ctx in ctxs)
        # and the command buffers' outer scopes (--busy, on by default)
        buffers = sum(p["count"] for ctx in ctxs for p in ctx["snapshot"]["phases"] if p.get("outer"))
        ok(collected == d["executed_timed"] + buffers and buffers > 0,
           "%s: family %d: collected %d = timed %d + command buffers %d" % (
               t, f, collected, d["executed_timed"], buffers))
    for ctx in r.device["contexts"]:
        tm = ctx["snapshot"]["timing"]
        ok(tm["samples"] == tm["scopes_collected"] + tm["scopes_dropped"] + tm["scopes_pending"]
           and tm["scopes_dropped"] == 0 and tm["scopes_pending"] == 0 and not any(tm["lost"].values()),
           "%s: one accounting, nothing dropped, pending or lost" % t, tm)
        if tm["calls_executed"]:
            ok(tm["rotate_scopes"] == 16 and tm.get("rotate_first_calls") is True and "rotation" in tm,
               "%s: rotating window of 16, first calls apart" % t, tm)


def part_rotate(ok, layer_dir, vkprof, plain, graphs):
    # 6. issue 26: the rotating window against every dispatch; the cost
    # probe; busy and idle from the command buffers' trace
    every = LayerRun(WORK, "every", layer_dir)
    rot = LayerRun(WORK, "rotate", layer_dir, env={"VKPROF_LAYER_ROTATE": "16"})
    probe = LayerRun(WORK, "probe", layer_dir, env={"VKPROF_LAYER_ROTATE": "16", "VKPROF_LAYER_COST_BLOCK": "2"})
    cmdbuf = LayerRun(WORK, "cmdbuf", layer_dir, env={"VKPROF_LAYER_MODE": "cmdbuf"})
    if not all([check_common(ok, r, plain) for r in (every, rot, probe, cmdbuf)]):
        return
    check_accounting(ok, every)
    check_rotated(ok, rot, ("not_in_window",))
    check_rotated(ok, probe, ("not_in_window", "cost_probe"))
    ev = every.phases()
    rp = rot_phases(rot)
    # the same tokens run the same dispatches: each phase's calls are the
    # every-dispatch run's counts
    ok({n: v[0] for n, v in ev.items()} == {n: v["calls"] for n, v in rp.items()},
       "rotate: per phase, its calls are the every-dispatch run's dispatches (%d phases)" % len(ev),
       "%s vs %s" % ({n: v[0] for n, v in ev.items()}, {n: v["calls"] for n, v in rp.items()}))
    unreached = [n for n, v in rp.items() if v["count"] == 0]
    ok(not unreached, "rotate: every phase timed (the window went round)", unreached)
    ok(all(v["first"] == 1 for v in rp.values()), "rotate: each phase's first call stamped apart",
       {n: v["first"] for n, v in rp.items()})
    # the split per category: the estimate against every dispatch's sums.
    # It is timing on a CPU device shared with other tests: a burst of load
    # on one run moved rms_norm's share by 15 pp once (42.2 % against
    # 57.3 %). So while the shares alone are off, the pair of runs is made
    # again, up to 3 tries; a split that is off every time still fails.
    sev, srp = ev, rp
    for attempt in (1, 2, 3):
        rows = split_rows(sev, srp)
        for k, a, b in rows:
            print("  split %-12s every %5.1f%%  rotate %5.1f%%  (try %d)" % (k, a, b, attempt))
        if all(abs(a - b) <= 15 for k, a, b in rows if a >= 10) or attempt == 3:
            break
        e2 = LayerRun(WORK, "every-%d" % (attempt + 1), layer_dir)
        r2 = LayerRun(WORK, "rotate-%d" % (attempt + 1), layer_dir, env={"VKPROF_LAYER_ROTATE": "16"})
        if not (check_common(ok, e2, plain) and check_common(ok, r2, plain)):
            return
        sev, srp = e2.phases(), rot_phases(r2)
    for k, a, b in rows:
        if a >= 10:
            # lavapipe's single samples jump by ms on a loaded 2-core CPU:
            # loose here; the H100's figures are in docs/performance-log.md
            ok(abs(a - b) <= 15, "rotate: %s's share %.1f%% within 15 pp of every dispatch's %.1f%% (try %d)"
               % (k, b, a, attempt))
    # the cost probe: steps in both states, their sums
    cp = probe.device.get("cost_probe") or {}
    on, off = cp.get("on", {}), cp.get("off", {})
    ok(on.get("steps", 0) >= 2 and off.get("steps", 0) >= 2 and abs(on["steps"] - off["steps"]) <= 2
       and on.get("mean_us", 0) > 0 and off.get("mean_us", 0) > 0,
       "probe: steps with profiling %d (%.0f us), without %d (%.0f us)" % (
           on.get("steps", 0), on.get("mean_us", 0), off.get("steps", 0), off.get("mean_us", 0)), cp)
    # busy and idle: vkprof report on the command buffers' trace, and on
    # the rotating window's (its buffers' outer scopes, issue 26)
    got = {}
    for r in (cmdbuf, rot):
        tr_path = os.path.join(r.out, r.summary["trace"])
        p = subprocess.run([vkprof, "report", tr_path], capture_output=True, text=True, errors="replace")
        m = re.search(r"busy ([0-9.]+) ms/(\w+), idle ([0-9.]+) ms/\w+ \(([0-9.]+)% idle\)", p.stdout)
        ok(p.returncode == 0 and m is not None, "%s: vkprof report gives GPU busy and idle per step" % r.tag,
           c.tail(p.stdout + p.stderr))
        if m:
            busy, idle, pct = float(m.group(1)), float(m.group(3)), float(m.group(4))
            got[r.tag] = busy
            ok(busy > 0 and 0 < pct < 100 and abs(100 * idle / (busy + idle) - pct) < 1.0,
               "%s: busy %.3f ms, idle %.3f ms a %s, %.1f%% idle" % (r.tag, busy, idle, m.group(2), pct))
    # the rotating trace's slices are a sample: vkprof report says so, and
    # gives each phase's estimate as the summary has it (issue 26: it read
    # the slices as the whole)
    p = subprocess.run([vkprof, "report", os.path.join(rot.out, rot.summary["trace"])],
                       capture_output=True, text=True, errors="replace")
    sec = p.stdout.split("\nGPU phases, estimated: ", 1)
    rows = re.findall(r"^  (\S+) +([0-9.]+) +[0-9.]+ +[0-9.]+% +[0-9.]+ +\d+$",
                      sec[1].split("\n\n", 1)[0], re.M) if len(sec) == 2 else []
    said = {n: float(t) for n, t in rows if n != "total"}
    want = {n: v["est"] / 1e6 for n, v in rp.items()}
    off = {n: (said.get(n), round(want[n], 3)) for n in want
           if said.get(n) is None or abs(said[n] - want[n]) > 0.002 + 0.001 * want[n]}
    ok("GPU phases (the trace's slices: a sample)" in p.stdout and said and not off,
       "rotate: vkprof report calls the slices a sample and gives the summary's estimate of each of "
       "%d phases" % len(said), off or c.tail(p.stdout))
    # the host's time recording, submitting and waiting per step (issue 26):
    # the recording spans' time against the layer's own count of it (the
    # summary's recording.host_ns: every buffer, the spans the ones not
    # interleaved on their thread)
    m = re.search(r"\nhost time per step, in the app's calls \(self times\): recording ([0-9.]+) ms \(the recordings' spans\), "
                  r"submitting ([0-9.]+) ms, waiting ([0-9.]+) ms; the layer's own ([0-9.]+) ms\n", p.stdout)
    rec_ns = sum(f["recording"]["host_ns"] for f in rot.device["queue_families"])
    steps = rot.device.get("steps") or 1
    ok(m is not None and 0 < float(m.group(1)) <= rec_ns / steps / 1e6 * 1.05 + 0.002
       and float(m.group(3)) > 0,
       "rotate: vkprof report gives the host's recording (%s ms a step; the summary %.3f), submitting and "
       "waiting per step" % (m.group(1) if m else "-", rec_ns / steps / 1e6), c.tail(p.stdout))
    # the cost probe's trace: the blocks off counted their calls, so it has
    # estimates too, and each phase's calls are every dispatch's
    pp = rot_phases(probe)
    ok({n: v[0] for n, v in ev.items()} == {n: v["calls"] for n, v in pp.items()},
       "probe: per phase, its calls are the every-dispatch run's dispatches (the blocks off counted)",
       "%s vs %s" % ({n: v[0] for n, v in ev.items()}, {n: v["calls"] for n, v in pp.items()}))
    p = subprocess.run([vkprof, "report", os.path.join(probe.out, probe.summary["trace"])],
                       capture_output=True, text=True, errors="replace")
    ok("\nGPU phases, estimated: " in p.stdout and "the rest estimated" in p.stdout,
       "probe: vkprof report gives the estimates, the buffers not stamped estimated", c.tail(p.stdout))
    # the rotating run's busy time: its outer phase's total per step, exact,
    # against the command buffers' run (other processes, the same tokens; a
    # 2-core CPU device's times move by tens of % from run to run)
    def outer_per_step(r):
        ns = sum(p["total_ns"] for ctx in r.device["contexts"] for p in ctx["snapshot"]["phases"]
                 if p.get("outer"))
        return ns / max(1, r.device["steps"]) / 1e6
    def cmdbuf_per_step(r):
        ns = sum(p["total_ns"] for ctx in r.device["contexts"] for p in (ctx.get("snapshot") or {}).get("phases", []))
        return ns / max(1, r.device["steps"]) / 1e6
    ob, cb = outer_per_step(rot), cmdbuf_per_step(cmdbuf)
    ok(ob > 0 and cb > 0 and 0.5 <= ob / cb <= 2.0,
       "rotate: GPU busy %.3f ms a step from its command buffers' outer scopes, --mode cmdbuf %.3f: ratio %.3f "
       "in 0.5..2" % (ob, cb, ob / cb if cb else 0))
    # VKPROF_LAYER_BUSY_EVERY=4 (vkprof run --busy 4): the buffers' scopes
    # in 1 step in 4, chosen at random, a step of their own; the other
    # steps' buffers counted as left out and estimated (node-llama-cpp's
    # steps alternate, as llama.cpp's do: a period would alias with them)
    rb = LayerRun(WORK, "rotate-busy4", layer_dir,
                  env={"VKPROF_LAYER_ROTATE": "16", "VKPROF_LAYER_BUSY_EVERY": "4"})
    if not check_common(ok, rb, plain):
        return
    check_rotated(ok, rb, ("not_in_window",))
    ok(rb.summary.get("busy_every") == 4, "busy 4: the summary says busy_every 4", rb.summary.get("busy_every"))
    outer = [p for ctx in rb.device["contexts"] for p in ctx["snapshot"]["phases"] if p.get("outer")]
    left = sum(f["recording"]["scopes_left_out"] for f in rb.device["queue_families"])
    timed, calls = sum(p["count"] for p in outer), sum(p["calls"] for p in outer)
    ok(0 < timed < calls and timed + left == calls,
       "busy 4: %d of %d buffers stamped, %d left out and counted" % (timed, calls, left))
    est = sum(p["est_total_ns"] for p in outer) / max(1, rb.device["steps"]) / 1e6
    ok(est > 0 and 0.5 <= est / cb <= 2.0,
       "busy 4: GPU busy %.3f ms a step estimated from its stamped buffers, --mode cmdbuf %.3f: ratio %.3f in 0.5..2"
       % (est, cb, est / cb if cb else 0))
    # no window in a busy step: a step with a buffer's scope holds no dispatch's
    sl = [e for e in rb.trace["traceEvents"] if e.get("ph") == "X" and e.get("cat") == "gpu"]
    onames = {p["name"] for p in outer}
    osteps = {e["args"].get("step") for e in sl if e["name"] in onames}
    dsteps = {e["args"].get("step") for e in sl if e["name"] not in onames}
    ok(osteps and not (osteps & dsteps), "busy 4: %d busy steps, none with a dispatch's slice" % len(osteps),
       sorted(osteps & dsteps))


PARTS = {"core": part_core, "markers": part_markers, "perf": part_perf, "rotate": part_rotate}


def main():
    global MODEL, WORK
    c.skip_unless_setup()
    if len(sys.argv) != 5 or sys.argv[1] not in PARTS:
        print(__doc__)
        return 2
    part, WORK, layer_dir, vkprof = sys.argv[1], sys.argv[2], os.path.abspath(sys.argv[3]), sys.argv[4]
    ok = c.Checks()
    if not ok(os.path.isfile(os.path.join(layer_dir, "VkLayer_vkprof.json")), "layer manifest in %s" % layer_dir):
        return ok.finish()
    MODEL = c.make_model(WORK, "q4_0")
    plain = c.run_llama(MODEL)
    if not ok(plain.rc == 0, "plain run exits 0 (%.1f s): %s" % (plain.secs, plain.tokens), c.tail(plain.stderr)):
        return ok.finish()
    graphs = plain.result["prompt_tokens"] + len(plain.tokens) - 1  # batch 1: one graph per token
    PARTS[part](ok, layer_dir, vkprof, plain, graphs)
    return ok.finish()


MODEL = WORK = None

if __name__ == "__main__":
    sys.exit(main())
