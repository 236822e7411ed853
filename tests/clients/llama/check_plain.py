#!/usr/bin/env python3
"""ctest client_llama_plain (issue 9): llama.cpp's Vulkan backend, unmodified,
decodes random-weight models on lavapipe.

 - for f16, q8_0 and q4_0 models of one seed: run.mjs twice, exit 0 (it fails
   unless the decode ran on a Vulkan device, all layers offloaded), the same
   16 greedy tokens both times;
 - the three quantisations give the same tokens: make_gguf.py puts the weights
   on the q4_0 grid, so the three files are one model, and a block-layout
   mistake in any of them changes the tokens;
 - negative control: with no Vulkan device (GGML_VK_VISIBLE_DEVICES set to an
   empty list) node-llama-cpp decodes on the CPU, and run.mjs must say so and
   exit 3. (The CPU's tokens are not compared: its kernels quantise the
   activations, so a near-tie can go the other way.)
Skips (77) only when scripts/setup-llama.sh was not run.
usage: check_plain.py WORKDIR
"""

import sys

import common as c


def main():
    c.skip_unless_setup()
    work = sys.argv[1]
    ok = c.Checks()
    per_quant = {}
    for q in c.QUANTS:
        model = c.make_model(work, q)
        runs = [c.run_llama(model) for _ in range(2)]
        for i, r in enumerate(runs):
            ok(r.rc == 0 and r.result is not None, "%s run %d: exit 0 with a JSON line (%.1f s)" % (q, i + 1, r.secs),
               "rc %d\n%s" % (r.rc, c.tail(r.stderr)))
        if not all(r.result for r in runs):
            continue
        res = runs[0].result
        ok(res["gpu"] == "vulkan" and res["offloaded"] == "3/3" and res["device"],
           "%s: on Vulkan device %r, %s layers offloaded" % (q, res["device"], res["offloaded"]))
        ok(len(runs[0].tokens) == 16, "%s: 16 tokens %s" % (q, runs[0].tokens))
        ok(runs[0].tokens == runs[1].tokens, "%s: the same tokens in both runs" % q,
           "%s vs %s" % (runs[0].tokens, runs[1].tokens))
        per_quant[q] = runs[0].tokens
    if len(per_quant) == len(c.QUANTS):
        # Exact only where ggml multiplies the dequantised weights with float
        # activations: with integer dot products (not on lavapipe) it
        # quantises the activations to q8_1 first, and f16 then differs.
        dev = res.get("ggml_device") or ""
        ok(" int dot: " in dev, "ggml logged the device's features", repr(dev))
        if "int dot: 0" in dev:
            ok(len({tuple(t) for t in per_quant.values()}) == 1, "f16, q8_0 and q4_0 give the same tokens",
               repr(per_quant))
        elif " int dot: " in dev:
            print("not checked: f16 = q8_0 = q4_0 tokens (the device has integer dot products: %r)" % dev)
        ok(len(set(per_quant["f16"])) > 1, "the tokens are not all one id")

    # negative control: no Vulkan device -> the CPU decodes, run.mjs must fail
    r = c.run_llama(c.make_model(work, "q4_0"), env_extra={"GGML_VK_VISIBLE_DEVICES": ""})
    ok(r.rc == 3 and "not a Vulkan decode" in r.stderr,
       "no Vulkan device (GGML_VK_VISIBLE_DEVICES=''): run.mjs exits 3, 'not a Vulkan decode'",
       "rc %d\n%s" % (r.rc, c.tail(r.stderr)))
    ok(r.result is not None and r.result["offloaded"] is None and r.result["ggml_device"] is None,
       "... and its JSON line shows no device and no offload", r.stdout)
    return ok.finish()


if __name__ == "__main__":
    sys.exit(main())
