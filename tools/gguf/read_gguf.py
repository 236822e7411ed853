#!/usr/bin/env python3
"""Read a GGUF v3 file back (standard library only): metadata, tensor infos,
and the values of f32, f16, q8_0 and q4_0 tensors decoded the way ggml's
dequantize_row_* does. A reader independent of make_gguf.py's writer, for its
tests; `read_gguf.py FILE` prints a summary.
"""

import struct
import sys

VTYPES = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}
T_STRING, T_ARRAY = 8, 9
# ggml type: (block size, bytes per block)
TYPES = {0: (1, 4), 1: (1, 2), 2: (32, 18), 8: (32, 34)}
TYPE_NAMES = {0: "f32", 1: "f16", 2: "q4_0", 8: "q8_0"}


class GGUFError(Exception):
    pass


class Reader:
    def __init__(self, data):
        self.d, self.p = data, 0

    def take(self, n):
        if self.p + n > len(self.d):
            raise GGUFError("truncated at byte %d (need %d more)" % (self.p, n))
        b = self.d[self.p:self.p + n]
        self.p += n
        return b

    def fmt(self, f):
        return struct.unpack(f, self.take(struct.calcsize(f)))[0]

    def string(self):
        return self.take(self.fmt("<Q")).decode("utf-8")

    def value(self, t):
        if t == T_STRING:
            return self.string()
        if t == T_ARRAY:
            et, n = self.fmt("<I"), self.fmt("<Q")
            return [self.value(et) for _ in range(n)]
        if t not in VTYPES:
            raise GGUFError("value type %d" % t)
        return self.fmt(VTYPES[t])


def load(path):
    with open(path, "rb") as f:
        data = f.read()
    r = Reader(data)
    if r.take(4) != b"GGUF":
        raise GGUFError("bad magic")
    version, n_tensors, n_kv = r.fmt("<I"), r.fmt("<Q"), r.fmt("<Q")
    kv = {}
    for _ in range(n_kv):
        k = r.string()
        if k in kv:
            raise GGUFError("duplicate key %s" % k)
        kv[k] = r.value(r.fmt("<I"))
    align = kv.get("general.alignment", 32)
    infos = []
    for _ in range(n_tensors):
        name = r.string()
        nd = r.fmt("<I")
        ne = [r.fmt("<Q") for _ in range(nd)]
        t, off = r.fmt("<I"), r.fmt("<Q")
        if t not in TYPES:
            raise GGUFError("%s: type %d not read here" % (name, t))
        if off % align:
            raise GGUFError("%s: offset %d not aligned to %d" % (name, off, align))
        blk, size = TYPES[t]
        if ne[0] % blk:
            raise GGUFError("%s: ne[0] %d not a multiple of %d" % (name, ne[0], blk))
        n = 1
        for x in ne:
            n *= x
        infos.append({"name": name, "ne": ne, "type": t, "offset": off, "nbytes": n // blk * size, "n": n})
    base = r.p + (-r.p) % align
    for i, t in enumerate(infos):
        t["start"] = base + t["offset"]
        if t["start"] + t["nbytes"] > len(data):
            raise GGUFError("%s: data past the end of the file" % t["name"])
        if i and infos[i - 1]["start"] + infos[i - 1]["nbytes"] > t["start"]:
            raise GGUFError("%s overlaps %s" % (t["name"], infos[i - 1]["name"]))
    return {"version": version, "kv": kv, "tensors": infos, "data": data}


def values(g, info):
    b = g["data"][info["start"]:info["start"] + info["nbytes"]]
    t, n = info["type"], info["n"]
    if t == 0:
        return list(struct.unpack("<%df" % n, b))
    if t == 1:
        return list(struct.unpack("<%de" % n, b))
    out = []
    if t == 8:  # q8_0: fp16 d, int8 qs[32]
        for o in range(0, len(b), 34):
            d = struct.unpack("<e", b[o:o + 2])[0]
            out += [q * d for q in struct.unpack("<32b", b[o + 2:o + 34])]
    elif t == 2:  # q4_0: fp16 d, qs[16]: low nibbles are x[0..15], high x[16..31]
        for o in range(0, len(b), 18):
            d = struct.unpack("<e", b[o:o + 2])[0]
            qs = b[o + 2:o + 18]
            out += [((q & 15) - 8) * d for q in qs] + [((q >> 4) - 8) * d for q in qs]
    return out


def main():
    g = load(sys.argv[1])
    print("GGUF v%d, %d keys, %d tensors" % (g["version"], len(g["kv"]), len(g["tensors"])))
    for k, v in g["kv"].items():
        s = repr(v) if not isinstance(v, list) else "[%d items] %r..." % (len(v), v[:4])
        print("  %s = %s" % (k, s))
    for t in g["tensors"]:
        print("  %-28s %-5s %s" % (t["name"], TYPE_NAMES[t["type"]], t["ne"]))


if __name__ == "__main__":
    main()
