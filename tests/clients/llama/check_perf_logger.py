#!/usr/bin/env python3
"""ctests of perf_logger.py (issue 9).

  check_perf_logger.py parse          the parser on written tables (no node)
  check_perf_logger.py real WORKDIR   a real run.mjs under GGML_VK_PERF_LOGGER=1
"""

import io
import json
import os
import subprocess
import sys
from contextlib import redirect_stderr, redirect_stdout

import common as c
import perf_logger as pl

TABLE = """llama says hello
----------------
Vulkan Timings:
FLASH_ATTN_EXT dst(16,4,1,1),  q(16,1,4,1),  k(16,256,2,1),  v(16,256,2,1),  m(256,1,1,1): 2 x 6067.34 us = 12134.7 us (0.0108014 GFLOPS/s)
GLU: 1 x 383.81 us = 383.81 us
MUL_MAT_VEC q4_0 m=32 n=1 k=64: 4 x 98.409 us = 393.639 us (0.0412967 GFLOPS/s)
RMS_NORM_MUL RMS_NORM(64,1,1,1): 3 x 10430.7 us = 31292 us
Total time: 44204.1 us.
some other line
----------------
Vulkan Timings:
MUL_MAT_VEC q4_0 m=32 n=1 k=64: 1 x 1.5e+06 us = 1.5e+06 us (inf GFLOPS/s)
RMS_NORM_MUL RMS_NORM(64,1,1,1): 1 x 10 us = 10 us
Total time: 1.50001e+06 us.
"""


def parse_tests(ok):
    r = pl.parse(TABLE.splitlines())
    ok(r["tables"] == 2, "two tables", r)
    ok(r["ops"]["MUL_MAT_VEC q4_0 m=32 n=1 k=64"] == {"count": 5, "total_us": 1500393.639},
       "a row summed over tables, e-notation read", r["ops"])
    ok(r["kinds"]["RMS_NORM_MUL"] == {"count": 4, "total_us": 31302.0}, "kinds: the fusion's name", r["kinds"])
    ok(r["kinds"]["FLASH_ATTN_EXT"]["count"] == 2, "a name with '),  q(' in it", r["kinds"])
    ok(r["per_table_total_us"] == [44204.1, 1500010.0] and r["total_us"] == 1544214.1, "totals", r)
    r = pl.parse(TABLE.splitlines(), skip=1)
    ok(r["tables"] == 1 and "GLU" not in r["ops"], "--skip 1 leaves out the first table", r)
    bad = {
        "a row that does not parse": TABLE.replace("GLU: 1 x 383.81 us = 383.81 us", "GLU: one x 383.81 us"),
        "rows that do not add up": TABLE.replace("Total time: 44204.1 us.", "Total time: 44205.1 us."),
        "count x mean is not the total": TABLE.replace("1 x 383.81 us = 383.81", "2 x 383.81 us = 383.81"),
        "a table cut short": TABLE[:TABLE.rindex("Total time")],
        "a table without its Total line": TABLE.replace("Total time: 44204.1 us.\n", ""),
    }
    for what, text in bad.items():
        try:
            pl.parse(text.splitlines())
            ok(False, "refused: %s" % what, "parsed")
        except pl.ParseError as e:
            ok("line" in str(e) or "table" in str(e), "refused: %s (%s)" % (what, e))
    with redirect_stderr(io.StringIO()) as err, redirect_stdout(io.StringIO()):
        rc = pl.main(["run", "--", sys.executable, "-c", "pass"])
    ok(rc == 1 and "no 'Vulkan Timings' table" in err.getvalue(), "run: no table is an error", err.getvalue())


def real_tests(ok, work):
    c.skip_unless_setup()
    model = c.make_model(work, "q4_0")
    plain = c.run_llama(model)
    ok(plain.rc == 0, "plain run exits 0", c.tail(plain.stderr))
    out = os.path.join(work, "perf.json")
    errfile = os.path.join(work, "perf.stderr")
    env = dict(os.environ, GGML_VK_VISIBLE_DEVICES="0")
    p = subprocess.run([sys.executable, os.path.join(c.HERE, "perf_logger.py"), "run", "-o", out,
                        "--stderr", errfile, "--", c.node(), c.RUN_MJS, model],
                       env=env, capture_output=True, text=True, timeout=240)
    ok(p.returncode == 0, "perf_logger.py run -- node run.mjs exits 0", c.tail(p.stderr))
    if p.returncode != 0 or plain.rc != 0:
        return
    logged = c.Run(0, p.stdout, "", 0)
    res = json.load(open(out))
    ok(logged.tokens == plain.tokens, "the same tokens with and without GGML_VK_PERF_LOGGER",
       "%s vs %s" % (logged.tokens, plain.tokens))
    evals = plain.result["prompt_tokens"] + len(plain.tokens) - 1
    ok(res["tables"] == evals, "one table per graph: %d (prompt %d + 16 tokens - 1, batch 1)"
       % (res["tables"], plain.result["prompt_tokens"]), "tables %d" % res["tables"])
    kinds = res["kinds"]
    for k in ("MUL_MAT_VEC", "RMS_NORM_MUL", "GLU", "SET_ROWS"):
        ok(k in kinds and kinds[k]["count"] > 0 and kinds[k]["total_us"] > 0, "op kind %s timed" % k, kinds.keys())
    mv = [n for n in res["ops"] if n.startswith("MUL_MAT_VEC q4_0") or " MUL_MAT_VEC q4_0" in n]
    ok(len(mv) > 0, "mat-vec rows name q4_0 weights (%d rows)" % len(mv), list(res["ops"]))
    print("perf logger: %d tables, %.1f us in all, kinds: %s" % (
        res["tables"], res["total_us"],
        ", ".join("%s %d x = %.0f us" % (k, v["count"], v["total_us"]) for k, v in kinds.items())))


def main():
    ok = c.Checks()
    if sys.argv[1:2] == ["parse"]:
        parse_tests(ok)
    elif sys.argv[1:2] == ["real"] and len(sys.argv) == 3:
        real_tests(ok, sys.argv[2])
    else:
        print(__doc__)
        return 2
    return ok.finish()


if __name__ == "__main__":
    sys.exit(main())
