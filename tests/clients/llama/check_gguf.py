#!/usr/bin/env python3
"""Test of tools/gguf/make_gguf.py (no node needed):
 - same arguments, same bytes; another seed, other bytes;
 - the files read back with tools/gguf/read_gguf.py (its own decoder of
   ggml's block layouts): GGUF v3, aligned, the keys llama.cpp needs, the
   tokenizer's byte tokens in place;
 - the f16, q8_0 and q4_0 files of one seed decode to the same values, tensor
   by tensor (the generator puts its weights on the q4_0 grid), and the
   quantised matrices use the whole nibble range 1..15 (values -7..7);
 - bad arguments are refused.
usage: check_gguf.py WORKDIR
"""

import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
TOOLS = os.path.join(HERE, "..", "..", "..", "tools", "gguf")
sys.path.insert(0, TOOLS)
import read_gguf  # noqa: E402

MAKE = os.path.join(TOOLS, "make_gguf.py")
fails = []


def check(ok, what):
    print("%s: %s" % ("ok" if ok else "FAIL", what))
    if not ok:
        fails.append(what)


def make(out, *args):
    return subprocess.run([sys.executable, MAKE, "-o", out] + list(args), capture_output=True, text=True)


def main():
    work = sys.argv[1]
    os.makedirs(work, exist_ok=True)
    dims = ["--layers", "2", "--dim", "64", "--heads", "4", "--kv-heads", "2", "--ff", "96", "--vocab", "300"]
    files = {}
    for q in ("f16", "q8_0", "q4_0"):
        files[q] = os.path.join(work, "m-%s.gguf" % q)
        r = make(files[q], "--type", q, "--seed", "5", *dims)
        check(r.returncode == 0, "make_gguf --type %s exits 0 (%s)" % (q, r.stderr.strip()))
    again = os.path.join(work, "again.gguf")
    make(again, "--type", "q4_0", "--seed", "5", *dims)
    other = os.path.join(work, "other.gguf")
    make(other, "--type", "q4_0", "--seed", "6", *dims)
    rd = lambda p: open(p, "rb").read()  # noqa: E731
    check(rd(again) == rd(files["q4_0"]), "same seed, same bytes")
    check(rd(other) != rd(files["q4_0"]), "other seed, other bytes")

    g = {q: read_gguf.load(p) for q, p in files.items()}
    f16 = g["f16"]
    kv = f16["kv"]
    check(f16["version"] == 3, "GGUF version 3")
    for k, v in {"general.architecture": "llama", "tokenizer.ggml.model": "llama", "llama.block_count": 2,
                 "llama.embedding_length": 64, "llama.feed_forward_length": 96, "llama.attention.head_count": 4,
                 "llama.attention.head_count_kv": 2, "llama.rope.dimension_count": 16,
                 "tokenizer.ggml.bos_token_id": 1, "tokenizer.ggml.eos_token_id": 2,
                 "tokenizer.ggml.unknown_token_id": 0}.items():
        check(kv.get(k) == v, "%s = %r (is %r)" % (k, v, kv.get(k)))
    toks, types = kv["tokenizer.ggml.tokens"], kv["tokenizer.ggml.token_type"]
    check(len(toks) == 300 and len(types) == 300 and len(kv["tokenizer.ggml.scores"]) == 300, "300 tokens, scores, types")
    check(toks[:3] == ["<unk>", "<s>", "</s>"] and types[:3] == [2, 3, 3], "<unk> <s> </s> with types unknown, control")
    check(all(toks[3 + b] == "<0x%02X>" % b and types[3 + b] == 6 for b in range(256)), "byte tokens <0x00>..<0xFF>")
    check(len(set(toks)) == len(toks), "token texts unique")
    check({q: g[q]["kv"]["general.file_type"] for q in g} == {"f16": 1, "q8_0": 7, "q4_0": 2}, "general.file_type")

    names = [t["name"] for t in f16["tensors"]]
    want = ["token_embd.weight"]
    for i in range(2):
        want += ["blk.%d.%s.weight" % (i, n) for n in
                 ("attn_norm", "attn_q", "attn_k", "attn_v", "attn_output", "ffn_norm", "ffn_gate", "ffn_up", "ffn_down")]
    want += ["output_norm.weight", "output.weight"]
    check(names == want, "tensor names")
    shapes = {t["name"]: t["ne"] for t in f16["tensors"]}
    check(shapes["token_embd.weight"] == [64, 300] and shapes["blk.0.attn_k.weight"] == [64, 32]
          and shapes["blk.1.ffn_down.weight"] == [96, 64] and shapes["output_norm.weight"] == [64], "tensor shapes")
    for q, gt in (("f16", 1), ("q8_0", 8), ("q4_0", 2)):
        ty = {t["name"]: t["type"] for t in g[q]["tensors"]}
        check(all(ty[n] == (0 if n.endswith("norm.weight") else gt) for n in names),
              "%s: norms f32, every matrix %s" % (q, q))

    same = True
    nib = set()
    for i, t in enumerate(f16["tensors"]):
        v = read_gguf.values(f16, t)
        for q in ("q8_0", "q4_0"):
            if read_gguf.values(g[q], g[q]["tensors"][i]) != v:
                same = False
                print("  %s differs in %s" % (t["name"], q))
        if t["type"] == 1:
            t4 = g["q4_0"]["tensors"][i]
            b = g["q4_0"]["data"][t4["start"]:t4["start"] + t4["nbytes"]]
            for o in range(0, len(b), 18):
                nib |= {x & 15 for x in b[o + 2:o + 18]} | {x >> 4 for x in b[o + 2:o + 18]}
    check(same, "f16, q8_0 and q4_0 decode to the same values, every tensor")
    check(nib == set(range(1, 16)), "q4_0 nibbles cover 1..15 (is %s)" % sorted(nib))

    for bad in (["--dim", "48"], ["--ff", "100"], ["--heads", "3"], ["--kv-heads", "3"], ["--vocab", "258"]):
        r = make(os.path.join(work, "bad.gguf"), *bad)
        check(r.returncode == 2 and "error" in r.stderr, "refuses %s" % " ".join(bad))
    check(not os.path.exists(os.path.join(work, "bad.gguf")), "no file written for bad arguments")
    if fails:
        print("%d check(s) failed" % len(fails))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
