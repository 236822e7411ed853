#!/usr/bin/env python3
"""Write example.json: a synthetic 4-token decode trace in the vkprof trace
format (docs/trace-format.md), for docs/img/report-example.svg and the fuzz
seeds. Deterministic; run from this folder."""
import json

phases = [("embedding", 6), ("norm", 9), ("qkv_proj", 48), ("rope", 5), ("attention", 70),
          ("attn_output", 22), ("norm", 9), ("mlp_gate_up", 95), ("activation", 7),
          ("mlp_down", 60)]
layers = 4
ev = [
    {"ph": "M", "name": "process_name", "pid": 1, "tid": 0, "args": {"name": "decode"}},
    {"ph": "M", "name": "thread_name", "pid": 1, "tid": 1, "args": {"name": "main"}},
    {"ph": "M", "name": "process_name", "pid": 2, "tid": 0, "args": {"name": "GPU: Example GPU"}},
    {"ph": "M", "name": "thread_name", "pid": 2, "tid": 1, "args": {"name": "queue family 0, queue 0"}},
    {"ph": "M", "name": "process_sort_index", "pid": 1, "tid": 0, "args": {"sort_index": 0}},
    {"ph": "M", "name": "process_sort_index", "pid": 2, "tid": 0, "args": {"sort_index": 1}},
]
t = 100_000  # ns
flow = 0
for step in range(4):
    jitter = [0, 37, 12, 85][step]
    ev.append({"ph": "i", "cat": "step", "name": "token", "s": "p", "ts": t / 1000,
               "pid": 1, "tid": 1, "args": {"step": step}})
    step_start = t
    rec = 180_000 + jitter * 10
    ev.append({"ph": "X", "cat": "host", "name": "record", "ts": (t + 2_000) / 1000,
               "dur": rec / 1000, "pid": 1, "tid": 1, "args": {"bucket": "record", "hot": True}})
    flow += 1
    ev.append({"ph": "s", "cat": "flow", "name": "submit", "id": flow, "ts": (t + 2_000 + rec - 1_000) / 1000,
               "pid": 1, "tid": 1})
    g = t + 2_000 + rec + 15_000
    wait_start = t + 2_000 + rec + 5_000
    first = True
    for layer in range(layers):
        for name, us in phases:
            if name == "embedding" and layer > 0:
                continue
            d = us * 1000 + (jitter * 7 + layer * 131 + len(name) * 17) % 900
            ev.append({"ph": "X", "cat": "gpu", "name": name, "ts": g / 1000, "dur": d / 1000,
                       "pid": 2, "tid": 1, "args": {"phase": name, "ns": d, "step": step}})
            if first:
                ev.append({"ph": "f", "cat": "flow", "name": "submit", "id": flow, "bp": "e",
                           "ts": g / 1000, "pid": 2, "tid": 1})
                first = False
            g += d + 1_500
    for name, us in (("lm_head", 120), ("sampling", 15)):
        d = us * 1000 + jitter * 3
        ev.append({"ph": "X", "cat": "gpu", "name": name, "ts": g / 1000, "dur": d / 1000,
                   "pid": 2, "tid": 1, "args": {"phase": name, "ns": d, "step": step}})
        g += d + 1_500
    wait = g + 8_000 - wait_start
    ev.append({"ph": "X", "cat": "host", "name": "fence_wait", "ts": wait_start / 1000,
               "dur": wait / 1000, "pid": 1, "tid": 1, "args": {"bucket": "wait", "sync": True}})
    samp = wait_start + wait + 3_000
    ev.append({"ph": "X", "cat": "host", "name": "sample_token", "ts": samp / 1000,
               "dur": 25.0, "pid": 1, "tid": 1, "args": {"bucket": "sample"}})
    end = samp + 25_000 + 4_000
    ev.append({"ph": "X", "cat": "host", "name": "decode_step", "ts": step_start / 1000,
               "dur": (end - step_start) / 1000, "pid": 1, "tid": 1, "args": {"bucket": "step"}})
    t = end + 6_000

trace = {
    "displayTimeUnit": "ns",
    "traceEvents": ev,
    "metadata": {
        "vkprof_version": 100, "device": "Example GPU", "driver": "example 1.0",
        "calibration": {"method": "calibrated_timestamps", "extension": "VK_KHR_calibrated_timestamps",
                        "host_domain": "CLOCK_MONOTONIC", "error_bound_ns": 1800,
                        "recalibrations": 1, "drift_ppm": 0.2},
        "dropped_events": 0, "event_capacity": 1048576,
        "clock_anchor": {"realtime_ns": 1796000000000000000, "monotonic_ns": 123456789},
        "trace_start_monotonic_ns": 123000000, "steps": 4,
        "gpu_sampling": {"mode": "2slot", "every_n_steps": 1},
    },
}
with open("example.json", "w") as f:
    json.dump(trace, f, indent=None, separators=(",", ":"))
    f.write("\n")
