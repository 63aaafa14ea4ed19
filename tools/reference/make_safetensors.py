#!/usr/bin/env python3
"""Writes the small safetensors test files under tests/data/safetensors/.

Made with the PyPI `safetensors` and `numpy` packages (the reference writer), so
the C++ reader is tested against files it did not write. Run in a venv outside
the repository:

    python3 -m venv /work/venv-st && /work/venv-st/bin/pip install safetensors numpy
    /work/venv-st/bin/python tools/reference/make_safetensors.py tests/data/safetensors

Outputs (a few KB in all, deterministic):
  small.safetensors   F32 [3, 5] "w" (values i * 0.25 - 1), F16 [4, 8] "h" (i / 8),
                      BF16 [2, 32] "b" (i - 16), I32 [6] "i" (i * 7 - 3),
                      I64 [2, 2] "l" (-2**40 + i), U8 [5] "u" (200 + i), empty F32 [0, 4] "e";
                      metadata {"format": "pt", "source": "make_safetensors.py"}
  small.expected.json the same values as plain JSON lists, for the C++ test
  config.json         a Llama-style config (hidden_size 64, rms_norm_eps 1e-5 ...)
"""
import json
import os
import sys

import numpy as np
from safetensors.numpy import save_file


def bf16_bits(a):
    """float32 -> bfloat16 bit patterns (round to nearest even), as uint16."""
    u = a.astype(np.float32).view(np.uint32).astype(np.uint64)
    r = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    return r


def main(out):
    os.makedirs(out, exist_ok=True)
    w = (np.arange(15, dtype=np.float32) * 0.25 - 1).reshape(3, 5)
    h = (np.arange(32, dtype=np.float32) / 8).astype(np.float16).reshape(4, 8)
    b_f = (np.arange(64, dtype=np.float32) - 16).reshape(2, 32)
    i = np.arange(6, dtype=np.int32) * 7 - 3
    l = (np.arange(4, dtype=np.int64) - 2**40).reshape(2, 2)
    u = np.arange(5, dtype=np.uint8) + 200
    e = np.zeros((0, 4), dtype=np.float32)
    tensors = {"w": w, "h": h, "i": i, "l": l, "u": u, "e": e}
    meta = {"format": "pt", "source": "make_safetensors.py"}
    path = os.path.join(out, "small.safetensors")
    # numpy has no bfloat16: write its bit patterns as U16 and patch the dtype
    # name in the header (same size, so offsets stay valid).
    tensors["b"] = bf16_bits(b_f).reshape(2, 32)
    save_file(tensors, path, metadata=meta)
    with open(path, "rb") as f:
        data = bytearray(f.read())
    n = int.from_bytes(data[:8], "little")
    header = json.loads(data[8:8 + n])
    assert header["b"]["dtype"] == "U16"
    header["b"]["dtype"] = "BF16"
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * ((8 - len(text) % 8) % 8)  # keep the data section 8-aligned
    with open(path, "wb") as f:
        f.write(len(text).to_bytes(8, "little") + text + bytes(data[8 + n:]))

    # Check with the reference reader that the patched file still loads.
    from safetensors import safe_open
    with safe_open(path, framework="numpy") as f:
        assert sorted(f.keys()) == sorted(tensors.keys())

    expected = {
        "w": {"dtype": "F32", "shape": list(w.shape), "values": w.ravel().tolist()},
        "h": {"dtype": "F16", "shape": list(h.shape), "values": h.astype(np.float32).ravel().tolist()},
        "b": {"dtype": "BF16", "shape": [2, 32], "values": b_f.ravel().tolist()},
        "i": {"dtype": "I32", "shape": list(i.shape), "values": i.tolist()},
        "l": {"dtype": "I64", "shape": list(l.shape), "values": l.ravel().tolist()},
        "u": {"dtype": "U8", "shape": list(u.shape), "values": u.tolist()},
        "e": {"dtype": "F32", "shape": list(e.shape), "values": []},
        "__metadata__": meta,
    }
    with open(os.path.join(out, "small.expected.json"), "w") as f:
        json.dump(expected, f, indent=1)
        f.write("\n")

    config = {
        "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 64,
        "intermediate_size": 176, "num_attention_heads": 4, "num_key_value_heads": 2,
        "num_hidden_layers": 2, "rms_norm_eps": 1e-5, "rope_theta": 10000.0, "vocab_size": 128,
        "tie_word_embeddings": False, "torch_dtype": "float32", "bos_token_id": None,
    }
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
        f.write("\n")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "tests/data/safetensors")
