#!/usr/bin/env python3
"""The vkprof layer's per-pipeline split against GGML_VK_PERF_LOGGER's per-op
split of the same run shape (issue 9).

  compare_perf.py LAYER.summary.json PERF.json [--json OUT]

LAYER.summary.json: the layer's summary of a run whose pipelines carry ggml's
names (a name map from `vkprof names libggml-vulkan.so`, or
GGML_VK_DEBUG_MARKERS=1). PERF.json: perf_logger.py's output for a run of the
same model, prompt and token count without the layer.

Both sides are put into the same categories: a perf-logger row by its op (the
first word of its name: the fusion, or the op), a layer phase by its pipeline
name's prefix. What each side counts differs in known ways, stated here and
in the table:
  - one perf-logger node can be several dispatches (FLASH_ATTN_EXT with split
    k is flash_attn_* + fa_split_k_reduce; ADD before RMS_NORM is add_rms +
    rms_norm_partials, which the logger books under ADD and RMS_NORM_MUL);
  - each perf-logger time runs from the ALL_COMMANDS stamp after the previous
    node's barrier to the one after this node, so it includes a barrier and a
    stamp per node (the "barrier overhead"), and the logger submits and waits
    once per graph; the layer's dispatch mode shares one stamp between
    neighbouring dispatches and adds no barrier.
Prints, per category: dispatches (layer) and nodes (logger), total ms, share
of the total, and the ratio layer/logger.
"""

import argparse
import json
import re
import sys

# (category, layer pipeline-name pattern, perf-logger op kinds)
CATEGORIES = [
    ("mul_mat", r"^(mul_mat|matmul|mul_mm|dequant)", {"MUL_MAT", "MUL_MAT_VEC", "MUL_MAT_ADD", "MUL_MAT_ADD_ADD"}),
    ("rms_norm", r"^rms_norm", {"RMS_NORM", "RMS_NORM_MUL", "RMS_NORM_MUL_ROPE"}),
    ("flash_attn", r"^(flash_attn|fa_)", {"FLASH_ATTN_EXT"}),
    ("rope", r"^rope", {"ROPE", "ROPE_VIEW_SET_ROWS", "RMS_NORM_MUL_ROPE_VIEW_SET_ROWS"}),
    ("set_rows", r"^set_rows", {"SET_ROWS"}),
    ("glu", r"^(swiglu|geglu|reglu|glu)", {"GLU"}),
    ("get_rows", r"^get_rows", {"GET_ROWS"}),
    ("add", r"^(add|multi_add)", {"ADD", "MULTI_ADD"}),
    ("softmax", r"^soft_max", {"SOFT_MAX"}),
    ("copy", r"^(cpy|contig_cpy)", {"CPY", "CONT", "DUP"}),
]


def category_of_pipeline(name):
    for cat, pat, _ in CATEGORIES:
        if re.match(pat, name):
            return cat
    return "other"


def category_of_kind(kind):
    for cat, _, kinds in CATEGORIES:
        if kind in kinds:
            return cat
    return "other"


def layer_phases(summary):
    """(name, count, total_ns) of every phase with dispatches, all devices and contexts."""
    out = []
    for d in summary.get("devices", []):
        for c in d.get("contexts", []):
            snap = c.get("snapshot") or {}
            for p in snap.get("phases", []):
                if p["count"]:
                    out.append((p["name"], p["count"], p["total_ns"]))
    return out


def compare(summary, perf):
    rows = {}

    def row(cat):
        return rows.setdefault(cat, {"layer_count": 0, "layer_ns": 0, "perf_count": 0, "perf_us": 0.0,
                                     "layer_names": set(), "perf_kinds": set()})
    unnamed = 0
    for name, count, ns in layer_phases(summary):
        if name.startswith("pipeline-"):
            unnamed += count
        r = row(category_of_pipeline(name))
        r["layer_count"] += count
        r["layer_ns"] += ns
        r["layer_names"].add(name)
    for kind, v in perf["kinds"].items():
        r = row(category_of_kind(kind))
        r["perf_count"] += v["count"]
        r["perf_us"] += v["total_us"]
        r["perf_kinds"].add(kind)
    lt = sum(r["layer_ns"] for r in rows.values()) / 1e6
    pt = sum(r["perf_us"] for r in rows.values()) / 1e3
    result = {"layer_total_ms": round(lt, 3), "perf_total_ms": round(pt, 3),
              "ratio": round(lt / pt, 4) if pt else None, "unnamed_dispatches": unnamed,
              "perf_tables": perf["tables"], "categories": {}}
    for cat in sorted(rows, key=lambda k: -rows[k]["perf_us"]):
        r = rows[cat]
        lm, pm = r["layer_ns"] / 1e6, r["perf_us"] / 1e3
        result["categories"][cat] = {
            "layer_dispatches": r["layer_count"], "perf_nodes": r["perf_count"],
            "layer_ms": round(lm, 3), "perf_ms": round(pm, 3),
            "layer_share": round(lm / lt, 4) if lt else None, "perf_share": round(pm / pt, 4) if pt else None,
            "ratio": round(lm / pm, 4) if pm else None,
            "layer_names": sorted(r["layer_names"]), "perf_kinds": sorted(r["perf_kinds"]),
        }
    return result


def print_table(res, f=sys.stdout):
    f.write("%-11s %9s %7s %10s %10s %7s %7s %7s\n" % ("category", "dispatch", "nodes", "layer ms", "logger ms",
                                                       "layer%", "logger%", "ratio"))
    for cat, r in res["categories"].items():
        f.write("%-11s %9d %7d %10.3f %10.3f %6.1f%% %6.1f%% %7s\n" % (
            cat, r["layer_dispatches"], r["perf_nodes"], r["layer_ms"], r["perf_ms"],
            100 * (r["layer_share"] or 0), 100 * (r["perf_share"] or 0),
            "%.3f" % r["ratio"] if r["ratio"] is not None else "-"))
    f.write("%-11s %9s %7s %10.3f %10.3f %7s %7s %7s\n" % ("total", "", "", res["layer_total_ms"],
                                                          res["perf_total_ms"], "", "",
                                                          "%.3f" % res["ratio"] if res["ratio"] else "-"))
    if res["unnamed_dispatches"]:
        f.write("%d dispatches have no name (pipeline-<hash>): give a name map or GGML_VK_DEBUG_MARKERS=1\n"
                % res["unnamed_dispatches"])


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("summary")
    ap.add_argument("perf")
    ap.add_argument("--json", help="write the comparison as JSON here too")
    a = ap.parse_args(argv)
    res = compare(json.load(open(a.summary)), json.load(open(a.perf)))
    print_table(res)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
