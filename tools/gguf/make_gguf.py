#!/usr/bin/env python3
"""Write a random-weight Llama model as a GGUF v3 file (issue 9).

Python 3 standard library only. The file loads in llama.cpp (arch "llama",
tokenizer model "llama" = SentencePiece-style vocab with byte fallback), so an
unmodified llama.cpp runtime can decode with it where no real model can be had.

Same arguments, same bytes: every value comes from random.Random(seed).

The weights of every matrix lie on the q4_0 grid: per block of 32 values along
the row (ne[0]) one scale d = m / 2**e (m in 8..15) and integers k in -7..7,
value = k * d. Such a value is exact in f16, in a q8_0 block (scale d, int8 k)
and in a q4_0 block (scale d, nibble k + 8), so the f16, q8_0 and q4_0 files
of one seed are the SAME model: a runtime that reads all three correctly must
compute the same logits up to its kernels' rounding. Norm weights are f32.

Block layouts (ggml-common.h):
  q8_0: 34 bytes = fp16 d, int8 qs[32];            x[j] = qs[j] * d
  q4_0: 18 bytes = fp16 d, uint8 qs[16];            x[j] = ((qs[j] & 15) - 8) * d,
                                                   x[j+16] = ((qs[j] >> 4) - 8) * d
"""

import argparse
import math
import random
import struct
import sys

GGUF_MAGIC = b"GGUF"
GGUF_VERSION = 3
ALIGNMENT = 32

# gguf value types
T_UINT32, T_INT32, T_FLOAT32, T_BOOL, T_STRING, T_ARRAY = 4, 5, 6, 7, 8, 9

# ggml tensor types and the matching general.file_type (llama_ftype)
GGML_F32, GGML_F16, GGML_Q4_0, GGML_Q8_0 = 0, 1, 2, 8
QUANTS = {  # name: (ggml type, llama_ftype)
    "f16": (GGML_F16, 1),
    "q8_0": (GGML_Q8_0, 7),
    "q4_0": (GGML_Q4_0, 2),
}
QK = 32  # block size of q8_0 and q4_0

# llama_token_type
TOK_NORMAL, TOK_UNKNOWN, TOK_CONTROL, TOK_BYTE = 1, 2, 3, 6

SPACE = "\u2581"  # SentencePiece's word-boundary mark


def kv_string(s):
    b = s.encode("utf-8")
    return struct.pack("<Q", len(b)) + b


class KV:
    def __init__(self):
        self.items = []

    def add(self, key, vtype, payload):
        self.items.append(kv_string(key) + struct.pack("<I", vtype) + payload)

    def u32(self, key, v):
        self.add(key, T_UINT32, struct.pack("<I", v))

    def f32(self, key, v):
        self.add(key, T_FLOAT32, struct.pack("<f", v))

    def boolean(self, key, v):
        self.add(key, T_BOOL, struct.pack("<B", 1 if v else 0))

    def string(self, key, v):
        self.add(key, T_STRING, kv_string(v))

    def array(self, key, etype, values):
        head = struct.pack("<IQ", etype, len(values))
        if etype == T_STRING:
            body = b"".join(kv_string(v) for v in values)
        elif etype == T_FLOAT32:
            body = struct.pack("<%df" % len(values), *values)
        elif etype == T_INT32:
            body = struct.pack("<%di" % len(values), *values)
        else:
            raise ValueError("array type %d" % etype)
        self.add(key, T_ARRAY, head + body)


def make_vocab(n_vocab):
    """<unk>, <s>, </s>, <0x00>..<0xFF>, then normal pieces: the space mark,
    printable ASCII, then space-mark + letter and letter pairs, as far as
    n_vocab reaches. Every text falls back to byte tokens where no piece fits,
    so any string tokenizes and detokenizes back."""
    toks = [("<unk>", 0.0, TOK_UNKNOWN), ("<s>", 0.0, TOK_CONTROL), ("</s>", 0.0, TOK_CONTROL)]
    toks += [("<0x%02X>" % b, 0.0, TOK_BYTE) for b in range(256)]
    pieces = [SPACE] + [chr(c) for c in range(0x21, 0x7F)]
    letters = "etaoinshrdlucmfwypvbgkqjxz"
    pieces += [SPACE + a for a in letters]
    pieces += [a + b for a in letters for b in letters]
    pieces += [SPACE + a + b for a in letters for b in letters]
    need = n_vocab - len(toks)
    if need > len(pieces):
        raise SystemExit("make_gguf: vocab %d is more than %d" % (n_vocab, len(toks) + len(pieces)))
    for i, p in enumerate(pieces[:need]):
        # longer pieces score higher so the merge prefers them; all negative
        toks.append((p, -1000.0 + 10.0 * len(p) - i * 1e-3, TOK_NORMAL))
    return toks


def f16_bits(x):
    return struct.unpack("<H", struct.pack("<e", x))[0]


def grid_tensor(rng, n_rows, row_len, target_std):
    """(scales per block, ints per value), see the module comment."""
    # k uniform in -7..7 has std sqrt(56/3) = 4.32; m uniform in 8..15 averages 11.5
    e = max(0, round(math.log2(11.5 / (target_std / 4.32))))
    nblk = n_rows * (row_len // QK)
    scales = [rng.randrange(8, 16) / float(1 << e) for _ in range(nblk)]
    ints = [rng.randrange(-7, 8) for _ in range(n_rows * row_len)]
    return scales, ints


def encode(gtype, scales, ints):
    if gtype == GGML_F16:
        vals = [k * scales[i // QK] for i, k in enumerate(ints)]
        out = struct.pack("<%de" % len(vals), *vals)
        # exact: k*m needs at most 7 significant bits, f16 keeps 11
        assert struct.unpack("<%de" % len(vals), out) == tuple(vals)
        return out
    parts = []
    for b, d in enumerate(scales):
        blk = ints[b * QK:(b + 1) * QK]
        head = struct.pack("<H", f16_bits(d))
        if gtype == GGML_Q8_0:
            parts.append(head + struct.pack("<32b", *blk))
        elif gtype == GGML_Q4_0:
            qs = bytes(((blk[j] + 8) & 15) | (((blk[j + 16] + 8) & 15) << 4) for j in range(16))
            parts.append(head + qs)
        else:
            raise ValueError(gtype)
    return b"".join(parts)


def build(args):
    rng = random.Random(args.seed)
    gtype, ftype = QUANTS[args.type]
    dim, ff, n_head, n_kv = args.dim, args.ff, args.heads, args.kv_heads
    head_dim = dim // n_head
    kv_dim = head_dim * n_kv
    vocab = make_vocab(args.vocab)

    kv = KV()
    kv.string("general.architecture", "llama")
    kv.string("general.name", "vkprof-random-llama-%s-s%d" % (args.type, args.seed))
    kv.u32("general.file_type", ftype)
    kv.u32("general.alignment", ALIGNMENT)
    kv.u32("llama.vocab_size", len(vocab))
    kv.u32("llama.context_length", args.context)
    kv.u32("llama.embedding_length", dim)
    kv.u32("llama.block_count", args.layers)
    kv.u32("llama.feed_forward_length", ff)
    kv.u32("llama.attention.head_count", n_head)
    kv.u32("llama.attention.head_count_kv", n_kv)
    kv.u32("llama.rope.dimension_count", head_dim)
    kv.f32("llama.rope.freq_base", 10000.0)
    kv.f32("llama.attention.layer_norm_rms_epsilon", 1e-5)
    kv.string("tokenizer.ggml.model", "llama")
    kv.array("tokenizer.ggml.tokens", T_STRING, [t[0] for t in vocab])
    kv.array("tokenizer.ggml.scores", T_FLOAT32, [t[1] for t in vocab])
    kv.array("tokenizer.ggml.token_type", T_INT32, [t[2] for t in vocab])
    kv.u32("tokenizer.ggml.unknown_token_id", 0)
    kv.u32("tokenizer.ggml.bos_token_id", 1)
    kv.u32("tokenizer.ggml.eos_token_id", 2)
    kv.boolean("tokenizer.ggml.add_bos_token", True)
    kv.boolean("tokenizer.ggml.add_eos_token", False)
    kv.boolean("tokenizer.ggml.add_space_prefix", True)

    tensors = []  # (name, ne, ggml type, bytes)

    def matrix(name, row_len, n_rows, std):
        if args.tile and n_rows > args.tile:
            # one random tile of --tile rows, repeated down the matrix: a model of
            # a real shape in seconds (its numbers are nonsense either way)
            s, k = grid_tensor(rng, args.tile, row_len, std)
            tile = encode(gtype, s, k)
            reps = -(-n_rows // args.tile)
            data = (tile * reps)[:len(tile) // args.tile * n_rows]
        else:
            s, k = grid_tensor(rng, n_rows, row_len, std)
            data = encode(gtype, s, k)
        tensors.append((name, [row_len, n_rows], gtype, data))

    def norm(name, n):
        vals = [1.0 + (rng.randrange(-64, 65) / 1024.0) for _ in range(n)]
        tensors.append((name, [n], GGML_F32, struct.pack("<%df" % n, *vals)))

    matrix("token_embd.weight", dim, len(vocab), 1.0)
    for i in range(args.layers):
        p = "blk.%d." % i
        norm(p + "attn_norm.weight", dim)
        matrix(p + "attn_q.weight", dim, dim, dim ** -0.5)
        matrix(p + "attn_k.weight", dim, kv_dim, dim ** -0.5)
        matrix(p + "attn_v.weight", dim, kv_dim, dim ** -0.5)
        matrix(p + "attn_output.weight", dim, dim, dim ** -0.5)
        norm(p + "ffn_norm.weight", dim)
        matrix(p + "ffn_gate.weight", dim, ff, dim ** -0.5)
        matrix(p + "ffn_up.weight", dim, ff, dim ** -0.5)
        matrix(p + "ffn_down.weight", ff, dim, ff ** -0.5)
    norm("output_norm.weight", dim)
    matrix("output.weight", dim, len(vocab), dim ** -0.5)

    def pad(n):
        return (-n) % ALIGNMENT

    infos, offset = [], 0
    for name, ne, t, data in tensors:
        infos.append(kv_string(name) + struct.pack("<I", len(ne)) +
                     struct.pack("<%dQ" % len(ne), *ne) + struct.pack("<IQ", t, offset))
        offset += len(data) + pad(len(data))

    head = GGUF_MAGIC + struct.pack("<IQQ", GGUF_VERSION, len(tensors), len(kv.items))
    head += b"".join(kv.items) + b"".join(infos)
    out = [head, b"\0" * pad(len(head))]
    for _, _, _, data in tensors:
        out += [data, b"\0" * pad(len(data))]
    return b"".join(out)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-o", "--output", required=True, help="GGUF file to write")
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--dim", type=int, default=64, help="embedding length (multiple of 32)")
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--kv-heads", type=int, default=2)
    ap.add_argument("--ff", type=int, default=128, help="feed-forward length (multiple of 32)")
    ap.add_argument("--vocab", type=int, default=384, help="at least 259 (3 special + 256 bytes)")
    ap.add_argument("--context", type=int, default=256, help="llama.context_length")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--type", choices=sorted(QUANTS), default="f16", help="type of every matrix")
    ap.add_argument("--tile", type=int, default=0,
                    help="repeat one random tile of this many rows through each matrix "
                         "(0: every row random); for models of real shapes, written in seconds")
    a = ap.parse_args(argv)
    errs = []
    if a.layers < 1:
        errs.append("--layers must be >= 1")
    if a.dim < QK or a.dim % QK:
        errs.append("--dim must be a positive multiple of %d" % QK)
    if a.ff < QK or a.ff % QK:
        errs.append("--ff must be a positive multiple of %d" % QK)
    if a.heads < 1 or a.dim % a.heads or (a.dim // a.heads) % 2:
        errs.append("--heads must divide --dim into an even head size")
    if a.kv_heads < 1 or a.heads % a.kv_heads:
        errs.append("--kv-heads must divide --heads")
    if a.vocab < 259:
        errs.append("--vocab must be >= 259")
    if a.context < 1:
        errs.append("--context must be >= 1")
    if a.tile < 0:
        errs.append("--tile must be >= 0")
    if errs:
        ap.error("; ".join(errs))
    data = build(a)
    tmp = a.output + ".tmp"
    with open(tmp, "wb") as f:
        f.write(data)
    import os
    os.replace(tmp, a.output)
    print("make_gguf: wrote %s (%d bytes, %s, %d layers, dim %d, seed %d)"
          % (a.output, len(data), a.type, a.layers, a.dim, a.seed), file=sys.stderr)


if __name__ == "__main__":
    main()
