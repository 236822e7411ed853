#!/usr/bin/env python3
"""Patch ggml's real shaders as ggml-vulkan does at run time, for test_names_ggml.

  test_names_ggml_patch.py LIBGGML_VULKAN_SO OUTDIR [EVERY]

Reads the ELF's symbol tables (ELF64 little endian), takes every EVERY-th
data object that holds a SPIR-V module, and writes OUTDIR/orig/NAME.spv and
OUTDIR/patched/NAME.spv, the latter with ggml_vk_create_pipeline_func's
float-controls patch (llama.cpp ggml-vulkan.cpp: OpExecutionMode
RoundingModeRTE 16 and DenormPreserve 16 after the last execution mode,
OpExtension "SPV_KHR_float_controls" after the last extension, OpCapability
RoundingModeRTE and DenormPreserve after the last capability). `vkprof names`
must give both folders the same map. Standard library only."""
import os
import struct
import sys

MAGIC = 0x07230203


def modules(path):
    data = open(path, "rb").read()
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        raise SystemExit(f"{path}: not a 64-bit little-endian ELF")
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", data, 0x3A)
    secs = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]
    seen = {}
    for s in secs:
        if s[1] not in (2, 11):  # SHT_SYMTAB, SHT_DYNSYM
            continue
        off, size, link = s[4], s[5], s[6]
        stroff = secs[link][4]
        for k in range(1, size // 24):
            name, info, _, shndx, value, ssize = struct.unpack_from("<IBBHQQ", data, off + k * 24)
            if info & 0xF != 1 or shndx == 0 or shndx >= shnum or ssize < 20:
                continue
            sec = secs[shndx]
            if sec[1] == 8:  # SHT_NOBITS
                continue
            start = sec[4] + value - sec[3]
            blob = data[start:start + ssize]
            if len(blob) != ssize or struct.unpack_from("<I", blob)[0] != MAGIC:
                continue
            end = data.index(b"\0", stroff + name)
            sym = data[stroff + name:end].decode()
            if sym.endswith("_data"):
                sym = sym[:-5]
            seen[sym] = blob
    return seen


def patch(blob):
    w = list(struct.unpack(f"<{len(blob) // 4}I", blob))
    pos = cap = ext = exe = 5
    entry = 0
    while pos < len(w):
        op, n = w[pos] & 0xFFFF, w[pos] >> 16
        if n == 0:
            break
        if op == 17:  # OpCapability
            cap = ext = pos + n
        elif op == 10:  # OpExtension
            ext = pos + n
        elif op == 15:  # OpEntryPoint
            entry = w[pos + 2]
            exe = pos + n
        elif op in (16, 331):  # OpExecutionMode(Id)
            exe = pos + n
        elif entry != 0:
            break
        pos += n
    # latest position first, as ggml does
    w[exe:exe] = [(4 << 16) | 16, entry, 4462, 16]  # RoundingModeRTE 16
    w[exe:exe] = [(4 << 16) | 16, entry, 4459, 16]  # DenormPreserve 16
    s = b"SPV_KHR_float_controls\0"
    s += b"\0" * (-len(s) % 4)
    w[ext:ext] = [((1 + len(s) // 4) << 16) | 10] + list(struct.unpack(f"<{len(s) // 4}I", s))
    w[cap:cap] = [(2 << 16) | 17, 4467]  # RoundingModeRTE
    w[cap:cap] = [(2 << 16) | 17, 4464]  # DenormPreserve
    return struct.pack(f"<{len(w)}I", *w)


def main():
    lib, out = sys.argv[1], sys.argv[2]
    every = int(sys.argv[3]) if len(sys.argv) > 3 else 1
    mods = modules(lib)
    names = sorted(mods)[::every]
    for d in ("orig", "patched"):
        os.makedirs(os.path.join(out, d), exist_ok=True)
    for n in names:
        open(os.path.join(out, "orig", n + ".spv"), "wb").write(mods[n])
        p = patch(mods[n])
        assert len(p) == len(mods[n]) + 4 * (8 + 7 + 4)
        open(os.path.join(out, "patched", n + ".spv"), "wb").write(p)
    print(f"{len(names)} of {len(mods)} modules patched")


if __name__ == "__main__":
    main()
