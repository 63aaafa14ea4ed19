#!/usr/bin/env python3
"""Golden fixture for AutoAWQ-format ("AWQ GEMM") Hugging Face directories (issue 41 item 5).

AutoAWQ itself is not needed (nor installed): its packing is written here from its source,
casper-hansen/AutoAWQ `awq/modules/linear/gemm.py` (WQLinear_GEMM.from_linear) and
`awq/utils/packing_utils.py` (unpack_awq, reverse_awq_order), and `awq/quantize/quantizer.py`
(pseudo_quantize_tensor, zero_point=True):

  per output row n and group g of `group_size` input features (k in [g*G, (g+1)*G)):
    max, min    = max / min of W[n, k] over the group
    scale s     = fp16(max(max - min, 1e-5) / 15)
    zero z      = clamp(-round(min / s), 0, 15)
    q[k][n]     = clamp(round(W[n, k] / s) + z, 0, 15)
    dequantised = (q - z) * s                                     (exact in float32)
  qweight int32 [in, out/8]: bits 4i..4i+3 of qweight[k][c] = q[k][8c + ORDER[i]],
                             ORDER = [0, 2, 4, 6, 1, 3, 5, 7]
  qzeros  int32 [in/G, out/8]: z packed the same way
  scales  F16   [in/G, out]

The script
  1. builds a tiny random LlamaForCausalLM with transformers (seed fixed, float32, eager
     attention): 2 layers, hidden 128, intermediate 256, 4 heads / 2 KV heads, head_dim 32,
     vocabulary 128; linear weights ~ N(0, 0.2), embedding rows ~ N(0, 1), norm weights
     1 + 0.3 N(0, 1); the embedding, the head and the norms rounded to F16 (they are stored F16);
  2. quantises every linear of the decoder blocks as above (group size 64, which divides
     both in_features, 128 and 256), packs qweight / qzeros / scales in AutoAWQ's order, and
     asserts the round trip by AutoAWQ's own unpacking (shift by [0, 4, ..., 28], then the
     reverse order [0, 4, 1, 5, 2, 6, 3, 7]) — a second, differently written formulation;
  3. loads the DEQUANTISED float32 weights into the plain float model and runs transformers
     (model.eval(), no_grad, float32, eager attention) on a 7- and a 40-token prompt;
  4. writes, under tests/data/awq/ (or --out):
        hf/config.json          the model's config + quantization_config {quant_method awq,
                                version gemm, bits 4, group_size 64, zero_point true,
                                modules_to_not_convert null}
        hf/model.safetensors    F16 embedding, head and norms; qweight / qzeros / scales
        tokens_{7,40}.i32.bin   the prompts (raw little-endian int32)
        logits_{7,40}.f32.bin   transformers' logits, float32 row-major [n, vocab]
     and the same for a second directory, hf-keep/ + logits_keep_{7,40}.f32.bin, whose config
     says modules_to_not_convert ["down_proj"]: every mlp.down_proj stays a float (F16)
     `weight` and its reference uses those F16 weights unquantised;
        versions.json           versions, seed, config, sha256 of every file.

Usage (a venv outside the repository with torch, transformers, safetensors, numpy):
    /work/venv-ref/bin/python tools/reference/make_awq_fixture.py
"""
from __future__ import annotations

import argparse
import hashlib
import json
import platform
from pathlib import Path

import numpy as np
import torch

SEED = 20261128
INIT_STD = 0.2
EMBED_STD = 1.0
NORM_SCALE = 0.3
GROUP = 64
ORDER = [0, 2, 4, 6, 1, 3, 5, 7]          # AutoAWQ's pack order (gemm.py)
REVERSE_ORDER = [0, 4, 1, 5, 2, 6, 3, 7]  # AutoAWQ's unpack order (packing_utils.py)
PROMPTS = {
    7: [6, 9, 91, 104, 83, 82, 10],
    40: [38, 106, 12, 100, 44, 91, 10, 87, 88, 26, 66, 106, 127, 106, 72, 51, 105, 64, 99, 94,
         103, 75, 66, 50, 43, 114, 32, 65, 19, 8, 67, 4, 120, 68, 93, 22, 124, 58, 71, 59],
}
LINEARS = ["self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj",
           "mlp.gate_proj", "mlp.up_proj", "mlp.down_proj"]
REPO = Path(__file__).resolve().parents[2]


def quantise(w: np.ndarray, group: int):
    """w [out, in] float32 -> q [in, out] (0..15), z [in/G, out], s fp16 [in/G, out], dequantised [out, in]."""
    out_f, in_f = w.shape
    assert in_f % group == 0
    wg = w.reshape(out_f, in_f // group, group).astype(np.float32)
    mx, mn = wg.max(axis=2), wg.min(axis=2)
    s = (np.maximum(mx - mn, 1e-5) / 15).astype(np.float16)          # [out, in/G]
    sf = s.astype(np.float32)
    z = np.clip(-np.round(mn / sf), 0, 15)                           # [out, in/G]
    q = np.clip(np.round(wg / sf[:, :, None]) + z[:, :, None], 0, 15)  # [out, in/G, G]
    deq = ((q - z[:, :, None]) * sf[:, :, None]).astype(np.float32)
    # exactness of (q - z) * s in float32: |q - z| <= 15 times an fp16 value
    assert np.array_equal(deq.astype(np.float64), (q - z[:, :, None]).astype(np.float64) * sf[:, :, None].astype(np.float64))
    q = q.reshape(out_f, in_f).T.astype(np.uint32)                   # [in, out]
    return q, z.T.astype(np.uint32), s.T.copy(), deq.reshape(out_f, in_f)


def pack(v: np.ndarray) -> np.ndarray:
    """[rows, out] of 4-bit values -> int32 [rows, out/8] in AutoAWQ's order."""
    rows, out_f = v.shape
    assert out_f % 8 == 0 and v.max() <= 15
    p = np.zeros((rows, out_f // 8), dtype=np.uint32)
    for c in range(out_f // 8):
        for i in range(8):
            p[:, c] |= v[:, 8 * c + ORDER[i]] << np.uint32(4 * i)
    return p.view(np.int32)


def unpack_awq(p: np.ndarray) -> np.ndarray:
    """AutoAWQ's unpack_awq + reverse_awq_order, in torch as packing_utils.py writes them."""
    t = torch.from_numpy(p.copy())
    shifts = torch.arange(0, 32, 4, dtype=torch.int32)
    iw = torch.bitwise_right_shift(t[:, :, None], shifts[None, None, :]).to(torch.int8)
    iw = iw.view(iw.shape[0], -1)
    order = torch.arange(iw.shape[-1], dtype=torch.int32).view(-1, 8)[:, REVERSE_ORDER].view(-1)
    iw = iw[:, order]
    return torch.bitwise_and(iw, 0xF).numpy().astype(np.uint32)


def sha256(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=REPO / "tests" / "data" / "awq")
    args = ap.parse_args()

    import safetensors.numpy
    import transformers
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(SEED)
    cfg = LlamaConfig(vocab_size=128, hidden_size=128, intermediate_size=256, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2, head_dim=32, max_position_embeddings=256,
                      rms_norm_eps=1e-5, rope_theta=10000.0, tie_word_embeddings=False,
                      attn_implementation="eager")
    model = LlamaForCausalLM(cfg).eval()
    sd = model.state_dict()
    with torch.no_grad():
        for name, t in sd.items():
            if name.endswith("norm.weight"):
                t.copy_(1 + NORM_SCALE * torch.randn_like(t))
            elif name == "model.embed_tokens.weight":
                t.copy_(EMBED_STD * torch.randn_like(t))
            elif name.endswith(".weight"):
                t.copy_(INIT_STD * torch.randn_like(t))
        # stored F16: the reference uses the rounded values
        for name, t in sd.items():
            if not any(name.endswith(l + ".weight") for l in LINEARS):
                t.copy_(t.to(torch.float16).to(torch.float32))
    float_weights = {k: v.detach().clone() for k, v in model.state_dict().items()}

    args.out.mkdir(parents=True, exist_ok=True)
    for n, toks in PROMPTS.items():
        np.asarray(toks, dtype="<i4").tofile(args.out / f"tokens_{n}.i32.bin")

    record = {"seed": SEED, "group_size": GROUP, "torch": torch.__version__, "transformers": transformers.__version__,
              "numpy": np.__version__, "python": platform.python_version(), "variants": {}}
    for variant, keep in (("", None), ("keep", ["down_proj"])):
        tensors: dict[str, np.ndarray] = {}
        deq_state = {}
        for name, t in float_weights.items():
            lin = next((l for l in LINEARS if name.endswith(l + ".weight")), None)
            if lin is None:
                tensors[name] = t.numpy().astype(np.float16)
                deq_state[name] = t
                continue
            if keep and any(k in name for k in keep):
                w16 = t.numpy().astype(np.float16)
                tensors[name] = w16
                deq_state[name] = torch.from_numpy(w16.astype(np.float32))
                continue
            w = t.numpy()
            q, z, s, deq = quantise(w, GROUP)
            qweight, qzeros = pack(q), pack(z)
            assert qweight.shape == (w.shape[1], w.shape[0] // 8) and qweight.dtype == np.int32
            assert qzeros.shape == (w.shape[1] // GROUP, w.shape[0] // 8)
            assert s.shape == (w.shape[1] // GROUP, w.shape[0]) and s.dtype == np.float16
            # round trip through AutoAWQ's own unpacking, and W[k][n] = (q - z) * s from it
            uq, uz = unpack_awq(qweight), unpack_awq(qzeros)
            assert np.array_equal(uq, q) and np.array_equal(uz, z)
            zz = np.repeat(uz, GROUP, axis=0).astype(np.float32)
            ss = np.repeat(s, GROUP, axis=0).astype(np.float32)
            assert np.array_equal(((uq.astype(np.float32) - zz) * ss).T, deq)
            base = name[: -len(".weight")]
            tensors[base + ".qweight"] = qweight
            tensors[base + ".qzeros"] = qzeros
            tensors[base + ".scales"] = s
            deq_state[name] = torch.from_numpy(deq)
        model.load_state_dict(deq_state)
        d = args.out / ("hf" if not variant else "hf-" + variant)
        d.mkdir(parents=True, exist_ok=True)
        model.config.save_pretrained(d)
        conf = json.loads((d / "config.json").read_text())
        conf["quantization_config"] = {"quant_method": "awq", "version": "gemm", "bits": 4, "group_size": GROUP,
                                       "zero_point": True, "modules_to_not_convert": keep}
        conf["torch_dtype"] = "float16"
        conf["architectures"] = ["LlamaForCausalLM"]
        (d / "config.json").write_text(json.dumps(conf, indent=2, sort_keys=True) + "\n")
        safetensors.numpy.save_file(tensors, str(d / "model.safetensors"))
        (d / "model.safetensors").chmod(0o644)
        suffix = "" if not variant else "_" + variant
        rec = {"dir": d.name, "modules_to_not_convert": keep, "files": {}}
        with torch.no_grad():
            for n, toks in PROMPTS.items():
                logits = model(torch.tensor([toks])).logits[0].float().numpy()
                p = args.out / f"logits{suffix}_{n}.f32.bin"
                logits.astype("<f4").tofile(p)
                rec["files"][p.name] = sha256(p)
                rec[f"max_abs_logit_{n}"] = float(np.abs(logits).max())
        for f in sorted(d.iterdir()):
            rec["files"][f"{d.name}/{f.name}"] = sha256(f)
        record["variants"][variant or "main"] = rec
    for n in PROMPTS:
        record[f"tokens_{n}"] = sha256(args.out / f"tokens_{n}.i32.bin")
    (args.out / "versions.json").write_text(json.dumps(record, indent=2) + "\n")
    print(json.dumps(record, indent=2))


if __name__ == "__main__":
    main()
