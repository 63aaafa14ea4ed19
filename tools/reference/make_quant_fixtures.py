#!/usr/bin/env python3
"""Reference blocks and their dequantised values for the ggml block types that
tests/quant checks against ggml itself (issue 41): Q2_K, Q3_K, IQ4_NL, IQ4_XS,
MXFP4, TQ1_0, TQ2_0, IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S, IQ1_S, IQ1_M, Q1_0, Q2_0
(gguf-py has no dequantiser for the last two: libggml-base alone).

Every number in the output is made by ggml (llama.cpp's ggml-base library), never by
archetype:
  * blocks: half of the rows are ggml's own quantisation (quantize_<type>, no
    importance matrix; the IQ1/IQ2/IQ3 types, which need one, through
    ggml_quantize_chunk with a fixed positive one, IMATRIX below) of gaussian floats
    with a few outliers, the other half random bytes with sane scale fields (every bit
    pattern of the quants and sub-scales, which a quantiser alone rarely writes);
  * expected floats, twice:
      plain  ggml's dequantize_row_<type> from libggml-base.so as llama.cpp builds it
             (no -march: x86-64 baseline, no FMA), which is also what gguf-py's
             numpy `gguf.quants.dequantize` gives: the script asserts the two are
             bitwise equal;
      fused  the same C source (ggml-quants.c) compiled here with -march=x86-64-v3,
             where gcc contracts a * b + c into an FMA (-ffp-contract=fast), as it
             does for archetype's own code at the FMA levels and on aarch64.
    The two differ only where the dequantiser has a multiply-add (Q2_K: dl * q - ml).

Output: tests/data/quant/<type>.bin, little-endian:
    char[4] "AQFX"; u32 version = 1; u32 ggml type id; u32 rows; u32 cols
    rows * row_bytes   the blocks
    f32[rows * cols]   plain
    f32[rows * cols]   fused
and tests/data/quant/manifest.json (the llama.cpp commit, sizes, the gguf-py check).

Quantiser fixtures for the types `archetype quantize` writes (QUANTISE below):
tests/data/quant/quantize_<type>.bin, little-endian:
    char[4] "AQQX"; u32 version = 1; u32 ggml type id; u32 rows; u32 cols
    f32[rows * cols]   the source rows (gaussian with outliers, an all-zero block,
                       tiny rows, and values at exact rounding ties of the scale)
    rows * row_bytes   ggml's quantize_<type> of them (libggml-base, no imatrix)

Usage: make_quant_fixtures.py [--llama-cpp DIR] [--out DIR]
  DIR: a llama.cpp checkout with build-native/bin/libggml-base.so (default
  /work/peers/llama.cpp-src); gguf-py is taken from DIR/gguf-py.
"""
import argparse
import ctypes
import json
import os
import struct
import subprocess
import sys
import tempfile

import numpy as np

# ggml type id, block size, bytes per block, offsets of the fp16 scale fields (for the
# random rows), extra per-type fixups
TYPES = {
    "Q2_K": dict(id=10, bs=256, ts=84, halves=[80, 82], cols=512),
    "Q3_K": dict(id=11, bs=256, ts=110, halves=[108], cols=512),
    "IQ4_NL": dict(id=20, bs=32, ts=18, halves=[0], cols=160),
    "IQ4_XS": dict(id=23, bs=256, ts=136, halves=[0], cols=512),
    "TQ1_0": dict(id=34, bs=256, ts=54, halves=[52], cols=512),
    "TQ2_0": dict(id=35, bs=256, ts=66, halves=[64], cols=512),
    "MXFP4": dict(id=39, bs=32, ts=17, halves=[], cols=160),
    "IQ2_XXS": dict(id=16, bs=256, ts=66, halves=[0], cols=512, imatrix=True),
    "IQ2_XS": dict(id=17, bs=256, ts=74, halves=[0], cols=512, imatrix=True),
    "IQ2_S": dict(id=22, bs=256, ts=82, halves=[0], cols=512, imatrix=True),
    "IQ3_XXS": dict(id=18, bs=256, ts=98, halves=[0], cols=512, imatrix=True),
    "IQ3_S": dict(id=21, bs=256, ts=110, halves=[0], cols=512, imatrix=True),
    "IQ1_S": dict(id=19, bs=256, ts=50, halves=[0], cols=512, imatrix=True),
    "IQ1_M": dict(id=29, bs=256, ts=56, halves=[], cols=512, imatrix=True),
    "Q1_0": dict(id=41, bs=128, ts=18, halves=[0], cols=512),  # the 2026 additions: gguf-py
    "Q2_0": dict(id=42, bs=64, ts=18, halves=[0], cols=512),   # does not dequantise them
}
ROWS_QUANTISED = 6
ROWS_RANDOM = 6
# types archetype quantises, checked byte for byte against ggml's quantize_<type>
QUANTISE = ["TQ1_0", "TQ2_0", "Q2_K", "Q3_K", "MXFP4", "IQ4_NL", "IQ4_XS", "Q1_0", "Q2_0"]
QUANTISE_ROWS = 8


def build_fused(src: str, libdir: str, tmp: str) -> str:
    out = os.path.join(tmp, "libggml-quants-fma.so")
    g = os.path.join(src, "ggml")
    subprocess.run(["gcc", "-O3", "-std=gnu11", "-fPIC", "-shared", "-march=x86-64-v3", "-D_GNU_SOURCE",
                    "-DGGML_SHARED", "-DGGML_BUILD", "-I" + os.path.join(g, "src"), "-I" + os.path.join(g, "include"),
                    os.path.join(g, "src", "ggml-quants.c"), "-o", out, "-L" + libdir, "-lggml-base",
                    "-Wl,-rpath," + libdir], check=True)
    return out


def imatrix(cols):
    """The importance weights the IQ1/IQ2/IQ3 quantisers require: fixed, positive,
    varying by column (as llama-imatrix's mean squared activations do)."""
    return (1.0 + 0.5 * np.sin(np.arange(cols) * 0.37) ** 2).astype(np.float32)


def quantised_rows(lib, name, t, rng):
    cols = t["cols"]
    x = rng.standard_normal((ROWS_QUANTISED, cols)).astype(np.float32)
    x[:, ::37] *= 6.0  # a few outliers per row, as real weights have
    x[1] *= 1e-3       # a row of small values
    x[2, : t["bs"]] = 0.0  # an all-zero block
    dst = np.zeros(ROWS_QUANTISED * cols // t["bs"] * t["ts"], dtype=np.uint8)
    if t.get("imatrix"):
        q = lib.ggml_quantize_chunk
        q.restype = ctypes.c_size_t
        q.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64, ctypes.c_int64,
                      ctypes.c_void_p]
        w = imatrix(cols)
        n = q(t["id"], x.ctypes.data, dst.ctypes.data, 0, ROWS_QUANTISED, cols, w.ctypes.data)
        assert n == dst.size, (name, n, dst.size)
        return dst
    f = getattr(lib, "quantize_" + name.lower().replace("_k", "_K"))
    f.restype = ctypes.c_size_t
    f.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p]
    n = f(x.ctypes.data, dst.ctypes.data, ROWS_QUANTISED, cols, None)
    assert n == dst.size, (name, n, dst.size)
    return dst


def random_rows(name, t, rng):
    cols = t["cols"]
    nb = ROWS_RANDOM * cols // t["bs"]
    b = rng.integers(0, 256, size=(nb, t["ts"]), dtype=np.uint8)
    for off in t["halves"]:
        d = (0.002 + 0.02 * np.abs(rng.standard_normal(nb))).astype(np.float16)
        if name == "Q3_K" or name.startswith("IQ") or name.startswith("TQ"):
            d = np.where(rng.integers(0, 2, nb) == 1, d, -d).astype(np.float16)
        b[:, off:off + 2] = d.view(np.uint8).reshape(nb, 2)
    if name == "IQ1_M":
        # the fp16 d is the top nibbles of the four u16 scale words (bytes 48-55)
        d = (0.002 + 0.02 * np.abs(rng.standard_normal(nb))).astype(np.float16).view(np.uint16)
        for i in range(4):
            hi = 48 + 2 * i + 1
            b[:, hi] = (b[:, hi] & 0x0F) | (((d >> (4 * i)) & 0xF) << 4).astype(np.uint8)
    if name == "MXFP4":
        # E8M0 scales 2^(e - 128) (ggml's half scale) around 1, and the denormal edges
        b[:, 0] = rng.integers(110, 140, size=nb, dtype=np.uint8)
        b[0, 0], b[1, 0], b[2, 0] = 0, 1, 2
    return b.reshape(-1)


def dequantise(lib, name, blocks, n):
    y = np.zeros(n, dtype=np.float32)
    f = getattr(lib, "dequantize_row_" + name.lower().replace("_k", "_K"))
    f.restype = None
    f.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64]
    f(blocks.ctypes.data, y.ctypes.data, n)
    return y


def quantiser_source(t, rng):
    """Rows for the quantiser fixtures: what the weights of a file look like, and the
    edge cases of the rounding (exact ties x * id = k + 0.5 of the block's scale)."""
    cols, bs = t["cols"], t["bs"]
    x = rng.standard_normal((QUANTISE_ROWS, cols)).astype(np.float32)
    x[:, ::29] *= 5.0
    x[1] *= 1e-4
    x[2, :bs] = 0.0
    # ties: a block of multiples of amax / 4 (x * id = 0.25, 0.5, 0.75 ... exactly)
    x[3, :bs] = (np.arange(bs) % 9 - 4).astype(np.float32) * 0.25
    x[4, :bs] = np.where(np.arange(bs) % 2 == 0, 0.5, -0.5).astype(np.float32)
    x[4, 0] = 1.0
    return x


def quantise(lib, name, t, x):
    rows, cols = x.shape
    dst = np.zeros(rows * cols // t["bs"] * t["ts"], dtype=np.uint8)
    f = getattr(lib, "quantize_" + name.lower().replace("_k", "_K"))
    f.restype = ctypes.c_size_t
    f.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p]
    n = f(np.ascontiguousarray(x).ctypes.data, dst.ctypes.data, rows, cols, None)
    assert n == dst.size, (name, n, dst.size)
    return dst


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--llama-cpp", default="/work/peers/llama.cpp-src")
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("--out", default=os.path.join(here, "..", "..", "tests", "data", "quant"))
    args = ap.parse_args()
    src = args.llama_cpp
    libdir = os.path.join(src, "build-native", "bin")
    sys.path.insert(0, os.path.join(src, "gguf-py"))
    import gguf
    from gguf.quants import dequantize as gguf_dequantize

    commit = open(os.path.join(src, "COMMIT")).read().strip() if os.path.exists(os.path.join(src, "COMMIT")) else "?"
    plain_lib = ctypes.CDLL(os.path.join(libdir, "libggml-base.so"))
    os.makedirs(args.out, exist_ok=True)
    manifest = {"llama.cpp": commit, "plain": "build-native/bin/libggml-base.so",
                "fused": "ggml/src/ggml-quants.c, gcc -O3 -march=x86-64-v3", "types": {}}
    with tempfile.TemporaryDirectory() as tmp:
        fused_lib = ctypes.CDLL(build_fused(src, libdir, tmp))
        for name, t in TYPES.items():
            rng = np.random.default_rng(t["id"])
            blocks = np.concatenate([quantised_rows(plain_lib, name, t, rng), random_rows(name, t, rng)])
            rows = ROWS_QUANTISED + ROWS_RANDOM
            n = rows * t["cols"]
            plain = dequantise(plain_lib, name, blocks, n)
            fused = dequantise(fused_lib, name, blocks, n)
            qtype = gguf.GGMLQuantizationType[name]
            try:
                ref = gguf_dequantize(blocks.reshape(rows, -1), qtype).reshape(-1).astype(np.float32)
                gguf_same = bool(np.array_equal(ref.view(np.uint32), plain.view(np.uint32)))
                assert gguf_same, f"{name}: gguf-py and libggml-base disagree"
            except NotImplementedError:
                gguf_same = "gguf-py has no dequantiser"
            assert np.all(np.isfinite(plain)), name
            differ = int(np.count_nonzero(plain.view(np.uint32) != fused.view(np.uint32)))
            path = os.path.join(args.out, name.lower().replace("_k", "_K") + ".bin")
            with open(path, "wb") as f:
                f.write(b"AQFX" + struct.pack("<IIII", 1, t["id"], rows, t["cols"]))
                f.write(blocks.tobytes())
                f.write(plain.astype("<f4").tobytes())
                f.write(fused.astype("<f4").tobytes())
            manifest["types"][name] = {"file": os.path.basename(path), "rows": rows, "cols": t["cols"],
                                       "quantised_rows": ROWS_QUANTISED, "random_rows": ROWS_RANDOM,
                                       "gguf_py_equals_plain": gguf_same, "fused_differs": differ}
            print(f"{name}: {rows} x {t['cols']}, fused differs in {differ} of {n}")
        manifest["quantise"] = {}
        for name in QUANTISE:
            t = TYPES[name]
            rng = np.random.default_rng(1000 + t["id"])
            x = quantiser_source(t, rng)
            blocks = quantise(plain_lib, name, t, x)
            path = os.path.join(args.out, "quantize_" + name.lower().replace("_k", "_K") + ".bin")
            with open(path, "wb") as f:
                f.write(b"AQQX" + struct.pack("<IIII", 1, t["id"], x.shape[0], x.shape[1]))
                f.write(x.astype("<f4").tobytes())
                f.write(blocks.tobytes())
            manifest["quantise"][name] = {"file": os.path.basename(path), "rows": x.shape[0], "cols": x.shape[1]}
            print(f"{name}: quantiser fixture {x.shape[0]} x {x.shape[1]}")
    with open(os.path.join(args.out, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
