#!/usr/bin/env python3
"""GGML_VK_PERF_LOGGER's stderr tables as per-op totals in JSON (issue 9).

  perf_logger.py parse FILE|- [--skip N] [-o OUT.json]
  perf_logger.py run [--skip N] [-o OUT.json] [--stderr FILE] -- CMD ARGS...

`run` starts CMD with GGML_VK_PERF_LOGGER=1, passes its stdout through,
keeps its stderr (copied to --stderr FILE when given) and parses it.

The format, from ggml-vulkan.cpp (vk_perf_logger::print_timings, llama.cpp of
node-llama-cpp 3.21.1), printed to std::cerr after every graph compute:

    ----------------
    Vulkan Timings:
    <name>: <count> x <mean> us = <total> us[ (<rate> GFLOPS/s)]
    ...
    Total time: <sum> us.

<name> is the op as ggml_vk names it: an optional fusion prefix
("RMS_NORM_MUL ", "MUL_MAT_ADD ", "ROPE_VIEW_SET_ROWS ") and the op
("MUL_MAT_VEC q4_0 m=64 n=1 k=64", "RMS_NORM(64,1,1,1)", "GLU", ...); under
GGML_VK_PERF_LOGGER_CONCURRENT several such names joined by ", ". Rows come
sorted by name (a std::map). Each time is the difference of two
ALL_COMMANDS timestamps that the logger writes around the node, with a
pipeline barrier after each: so it includes that barrier. The numbers are
std::ostream defaults: 6 significant digits, sometimes in e-notation, so a
total is rounded to 6 digits (the mean is also truncated to whole ns first); sums here carry that rounding (stated as
rounding_us in the output).

Output: {"tables": T, "skipped": N, "total_us": ..., "rounding_us": ...,
 "ops": {name: {"count": c, "total_us": t}}, "kinds": {kind: {...}}, "per_table_total_us": [...]}
where kind is the first word of the name with any "(...)" cut ("RMS_NORM_MUL",
"MUL_MAT_VEC", "FLASH_ATTN_EXT"). Nothing is dropped silently: a line inside a
table that does not parse, a table without its "Total time" line, or a table
whose rows do not add up to its "Total time" (beyond the printed rounding) is
an error (exit 1) naming the line.
"""

import argparse
import json
import os
import re
import subprocess
import sys

NUM = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"
ROW = re.compile(r"^(?P<name>.+): (?P<count>\d+) x (?P<mean>%s) us = (?P<total>%s) us"
                 r"(?: \((?P<rate>%s|inf|nan|-?inf) GFLOPS/s\))?$" % (NUM, NUM, NUM))
TOTAL = re.compile(r"^Total time: (?P<total>%s) us\.$" % NUM)
SEP = "----------------"
HEAD = "Vulkan Timings:"


class ParseError(Exception):
    pass


def ulp6(x):
    """Half a unit in the 6th significant digit of x: the most %g rounding moves it."""
    if x == 0:
        return 0.0
    import math
    return 0.5 * 10 ** (math.floor(math.log10(abs(x))) - 5)


def kind_of(name):
    first = name.split(" ", 1)[0]
    return first.split("(", 1)[0]


def parse(lines, skip=0):
    tables = []  # each: (rows [(name, count, total)], total, rounding, first line no)
    cur = None
    expect_head = False
    for no, raw in enumerate(lines, 1):
        line = raw.rstrip("\r\n")
        if expect_head:
            expect_head = False
            if line == HEAD:
                cur = {"rows": [], "line": no, "rounding": 0.0}
                continue
            # a bare separator line from elsewhere: not a table
        if line == SEP:
            if cur is not None:
                raise ParseError("line %d: a new table starts before the table of line %d has its "
                                 "'Total time' line" % (no, cur["line"]))
            expect_head = True
            continue
        if cur is None:
            continue  # not inside a table: the app's own output
        m = TOTAL.match(line)
        if m:
            total = float(m.group("total"))
            s = sum(r[2] for r in cur["rows"])
            # each row total and the sum are rounded to 6 significant digits
            tol = cur["rounding"] + ulp6(total) + 1e-9 * max(1.0, total)
            if abs(s - total) > tol:
                raise ParseError("line %d: the rows of the table of line %d add up to %.6g us, "
                                 "its 'Total time' says %.6g us" % (no, cur["line"], s, total))
            cur["total"] = total
            cur["rounding"] += ulp6(total)
            tables.append(cur)
            cur = None
            continue
        m = ROW.match(line)
        if not m:
            raise ParseError("line %d: not a perf-logger row inside the table of line %d: %r"
                             % (no, cur["line"], line))
        count, mean, total = int(m.group("count")), float(m.group("mean")), float(m.group("total"))
        if count < 1 or total < 0:
            raise ParseError("line %d: count %d, total %g" % (no, count, total))
        # the mean is total_ns / count in integer ns (truncated), then printed
        if abs(mean * count - total) > (ulp6(mean) + 0.001) * count + ulp6(total) + 1e-6:
            raise ParseError("line %d: %d x %g us is not %g us" % (no, count, mean, total))
        cur["rows"].append((m.group("name"), count, total))
        cur["rounding"] += ulp6(total)
    if cur is not None:
        raise ParseError("the table of line %d has no 'Total time' line (output cut short?)" % cur["line"])
    if skip > len(tables):
        raise ParseError("--skip %d but only %d tables" % (skip, len(tables)))
    used = tables[skip:]
    ops, kinds = {}, {}
    for t in used:
        for name, count, total in t["rows"]:
            for key, d in ((name, ops), (kind_of(name), kinds)):
                e = d.setdefault(key, {"count": 0, "total_us": 0.0})
                e["count"] += count
                e["total_us"] += total
    for d in (ops, kinds):
        for e in d.values():
            e["total_us"] = round(e["total_us"], 3)
    return {
        "tables": len(used),
        "skipped": skip,
        "total_us": round(sum(t["total"] for t in used), 3),
        "rounding_us": round(sum(t["rounding"] for t in used), 6),
        "per_table_total_us": [t["total"] for t in used],
        "ops": dict(sorted(ops.items())),
        "kinds": dict(sorted(kinds.items())),
    }


def write(result, out):
    text = json.dumps(result, indent=1) + "\n"
    if out:
        tmp = out + ".tmp"
        with open(tmp, "w") as f:
            f.write(text)
        os.replace(tmp, out)
    else:
        sys.stdout.write(text)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("parse", help="parse a saved stderr")
    p.add_argument("file")
    r = sub.add_parser("run", help="run CMD with GGML_VK_PERF_LOGGER=1 and parse its stderr")
    r.add_argument("--stderr", help="also save CMD's stderr here")
    r.add_argument("cmdline", nargs=argparse.REMAINDER)
    for x in (p, r):
        x.add_argument("--skip", type=int, default=0, help="leave out the first N tables (warm-up graphs)")
        x.add_argument("-o", "--output", help="JSON file (default: stdout)")
    a = ap.parse_args(argv)
    rc = 0
    if a.cmd == "parse":
        if a.file == "-":
            lines = sys.stdin.read().splitlines()
        else:
            with open(a.file, errors="replace") as f:
                lines = f.read().splitlines()
    else:
        cmd = a.cmdline[1:] if a.cmdline[:1] == ["--"] else a.cmdline
        if not cmd:
            ap.error("run needs -- CMD ARGS...")
        env = dict(os.environ, GGML_VK_PERF_LOGGER="1")
        proc = subprocess.run(cmd, env=env, stderr=subprocess.PIPE, errors="replace", text=True)
        if a.stderr:
            with open(a.stderr, "w") as f:
                f.write(proc.stderr)
        lines = proc.stderr.splitlines()
        rc = proc.returncode
        if rc != 0:
            sys.stderr.write(proc.stderr[-4000:])
            print("perf_logger: %s exited with status %d" % (cmd[0], rc), file=sys.stderr)
            return rc if rc > 0 else 128 - rc
    try:
        result = parse(lines, a.skip)
    except ParseError as e:
        print("perf_logger: %s" % e, file=sys.stderr)
        return 1
    if result["tables"] == 0:
        print("perf_logger: no 'Vulkan Timings' table (was GGML_VK_PERF_LOGGER set, and did ggml "
              "use a Vulkan device?)", file=sys.stderr)
        return 1
    write(result, a.output)
    return rc


if __name__ == "__main__":
    sys.exit(main())
