#!/usr/bin/env python3
"""Golden fixture for the ModernBERT encoder of the zoo, made by Hugging Face transformers.

The encoder counterpart of make_zoo_fixture.py (same seed, prompts, dummy vocabulary and
converter wrapper, imported from it):
  1. builds a tiny random ModernBertModel with transformers (float32, eager attention):
     4 layers, of which layers 0 and 3 attend globally and layers 1 and 2 through a
     symmetric window (global_attn_every_n_layers = 3: layer il is global iff il % 3 == 0),
     local_attention = 8 (a query sees keys at distance <= 4, so both prompts cross it),
     a global RoPE base of 160000 and a local one of 10000, GeGLU with erf GELU
     (hidden_activation "gelu"), LayerNorms without bias (ModernBERT's norm_bias=False),
     no attention/MLP biases (ModernBERT's defaults: llama.cpp's modern-bert has no bias
     tensors). Norm weights are perturbed to 1 + 0.3 randn, weights ~ N(0, 0.2), token
     embeddings ~ N(0, 1);
  2. saves it as a Hugging Face checkpoint in a work directory OUTSIDE the repository;
  3. converts it with llama.cpp's convert_hf_to_gguf.py (--outtype f32), the converter's
     ModernBertModel.set_vocab replaced by make_zoo_fixture's dummy vocabulary;
  4. runs transformers on the 7- and 40-token prompts and keeps the last hidden state
     (after final_norm) of every position;
  5. checks the GGUF: every checkpoint tensor bit-exact in it, the window / pattern /
     RoPE bases under llama.cpp's keys; and runs an independent float64 numpy forward on
     the GGUF that must match transformers (and must NOT match when the window, the
     local RoPE base or the erf GELU is replaced, so each of them is exercised);
  6. writes OUT/modern-bert/: model.gguf, tokens_<n>.i32.bin, hidden_<n>.f32.bin
     (little-endian float32, row-major [n_tokens, hidden_size]), the checkpoint (hf/:
     config.json, model.safetensors) and versions.json.

Usage:
    /work/venv/bin/python tools/reference/make_zoo_encoder_fixture.py \\
        --llama-cpp /work/peers/llama.cpp --work /work/zoo-work

--family nomic-bert makes tests/data/zoo/nomic-bert/ instead (tools/reference/zoo_families/
nomic_bert.py: a tiny transformers NomicBertModel with a truncated bert-base-uncased WordPiece
vocabulary; --bert-vocab names the directory with vocab.txt, --llama-embd a llama.cpp embedding
harness whose agreement goes into versions.json).
"""
from __future__ import annotations

import argparse
import json
import math
import platform
import re
import shutil
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import make_zoo_fixture as zoo  # noqa: E402

FAMILY = "modern-bert"
LOCAL_ATTENTION = 8          # total window: |q - k| <= 4
GLOBAL_EVERY = 3
GLOBAL_THETA = 160000.0
LOCAL_THETA = 10000.0

CONFIG = dict(
    vocab_size=128, hidden_size=64, intermediate_size=96, num_hidden_layers=4,
    num_attention_heads=4, hidden_activation="gelu", max_position_embeddings=256,
    local_attention=LOCAL_ATTENTION, global_attn_every_n_layers=GLOBAL_EVERY,
    global_rope_theta=GLOBAL_THETA, local_rope_theta=LOCAL_THETA,
    norm_eps=1e-5, norm_bias=False, attention_bias=False, mlp_bias=False,
    pad_token_id=0, bos_token_id=1, eos_token_id=2, cls_token_id=1, sep_token_id=2,
    attn_implementation="eager", dtype="float32",
)


def perturb(model) -> list[str]:
    import torch
    touched = []
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.ndim == 1 and "norm" in name:
                p.copy_(1.0 + zoo.NORM_SCALE * torch.randn_like(p))
                kind = "norm"
            elif name.endswith("tok_embeddings.weight"):
                p.copy_(zoo.EMBED_STD * torch.randn_like(p))
                kind = "embedding"
            elif p.ndim == 2:
                p.copy_(zoo.INIT_STD * torch.randn_like(p))
                kind = "weight"
            else:
                raise RuntimeError(f"no perturbation rule for parameter {name} {tuple(p.shape)}")
            touched.append(f"{name} ({kind})")
    return touched


def numpy_forward(t: dict[str, np.ndarray], meta: dict, ids: list[int], *, window: int | None,
                  local_theta: float, gelu: str = "erf") -> np.ndarray:
    """float64 ModernBERT on the GGUF tensors (llama.cpp's modern-bert graph): embedding
    LayerNorm; per layer x += Wo attn(RoPE(norm(x))) (layer 0 without the attention norm
    when the file has none), x += down(gelu(up_a) * up_b) of norm(x); final LayerNorm."""
    a = "modern-bert"
    E = int(meta[f"{a}.embedding_length"])
    H = int(meta[f"{a}.attention.head_count"])
    L = int(meta[f"{a}.block_count"])
    # the converter writes ModernBERT's `norm_eps` under the RMS key (find_hparam order in
    # conversion/base.py), although every norm of the model is a LayerNorm
    eps = float(meta.get(f"{a}.attention.layer_norm_epsilon", meta.get(f"{a}.attention.layer_norm_rms_epsilon")))
    period = int(meta[f"{a}.attention.sliding_window_pattern"])
    base = float(meta[f"{a}.rope.freq_base"])
    D = E // H
    n = len(ids)
    f64 = {k: v.astype(np.float64) for k, v in t.items()}

    def ln(x, w):
        mu = x.mean(-1, keepdims=True)
        var = ((x - mu) ** 2).mean(-1, keepdims=True)
        return (x - mu) / np.sqrt(var + eps) * w

    def rope(x, theta):          # x [n, H, D], NeoX halves
        half = D // 2
        inv = theta ** (-np.arange(half, dtype=np.float64) * 2 / D)
        ang = np.arange(n, dtype=np.float64)[:, None] * inv[None, :]
        c, s = np.cos(ang)[:, None, :], np.sin(ang)[:, None, :]
        x1, x2 = x[..., :half], x[..., half:]
        return np.concatenate([x1 * c - x2 * s, x2 * c + x1 * s], -1)

    def act(x):
        if gelu == "erf":
            return 0.5 * x * (1 + np.vectorize(math.erf)(x / math.sqrt(2)))
        return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))

    x = ln(f64["token_embd.weight"][ids], f64["token_embd_norm.weight"])
    used = {"token_embd.weight", "token_embd_norm.weight", "output_norm.weight"}
    pos = np.arange(n)
    for il in range(L):
        p = f"blk.{il}."
        is_global = il % period == 0
        h = ln(x, f64[p + "attn_norm.weight"]) if p + "attn_norm.weight" in f64 else x
        qkv = h @ f64[p + "attn_qkv.weight"].T
        q, k, v = (qkv[:, i * E:(i + 1) * E].reshape(n, H, D) for i in range(3))
        theta = base if is_global else local_theta
        q, k = rope(q, theta), rope(k, theta)
        s = np.einsum("qhd,khd->hqk", q, k) / math.sqrt(D)
        if not is_global and window is not None:
            s = np.where(np.abs(pos[:, None] - pos[None, :]) <= window // 2, s, -np.inf)
        s = np.exp(s - s.max(-1, keepdims=True))
        s /= s.sum(-1, keepdims=True)
        o = np.einsum("hqk,khd->qhd", s, v).reshape(n, E)
        x = x + o @ f64[p + "attn_output.weight"].T
        h = ln(x, f64[p + "ffn_norm.weight"])
        u = h @ f64[p + "ffn_up.weight"].T
        F = u.shape[1] // 2
        x = x + (act(u[:, :F]) * u[:, F:]) @ f64[p + "ffn_down.weight"].T
        used |= {p + s_ for s_ in ("attn_norm.weight", "attn_qkv.weight", "attn_output.weight",
                                   "ffn_norm.weight", "ffn_up.weight", "ffn_down.weight")} & set(f64)
    assert used == set(f64), f"numpy pass left tensors unused: {set(f64) - used}"
    return ln(x, f64["output_norm.weight"])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--llama-cpp", type=Path, required=True)
    ap.add_argument("--llama-cpp-commit", default=None)
    ap.add_argument("--work", type=Path, required=True)
    ap.add_argument("--out", type=Path, default=zoo.REPO / "tests" / "data" / "zoo")
    ap.add_argument("--seed", type=int, default=zoo.SEED)
    ap.add_argument("--family", choices=[FAMILY, "nomic-bert"], default=FAMILY,
                    help="nomic-bert: tools/reference/zoo_families/nomic_bert.py")
    ap.add_argument("--bert-vocab", type=Path, default=None,
                    help="nomic-bert: a directory with bert-base-uncased's vocab.txt")
    ap.add_argument("--llama-embd", type=Path, default=None,
                    help="nomic-bert: a llama.cpp embedding harness (outside the repository) for the agreement")
    args = ap.parse_args()
    if args.family == "nomic-bert":
        from zoo_families import nomic_bert
        if args.bert_vocab is None:
            args.bert_vocab = nomic_bert.DEFAULT_BERT_VOCAB
        nomic_bert.make(args, zoo)
        return

    work = args.work.resolve() / FAMILY
    if work.is_relative_to(zoo.REPO):
        sys.exit(f"--work {work} is inside the repository; use a directory outside it")
    out = args.out.resolve() / FAMILY
    hf_dir = work / "hf"
    for d in (hf_dir, out):
        d.mkdir(parents=True, exist_ok=True)

    import torch
    import transformers
    torch.set_num_threads(1)
    torch.manual_seed(args.seed)
    config = transformers.ModernBertConfig(**CONFIG)
    assert config.layer_types == ["full_attention", "sliding_attention", "sliding_attention", "full_attention"], \
        config.layer_types
    model = transformers.ModernBertModel(config)
    perturbed = perturb(model)
    model = model.to(torch.float32).eval()
    assert model.config._attn_implementation == "eager"

    for f in hf_dir.iterdir():
        f.unlink()
    model.save_pretrained(hf_dir)

    fam = zoo.Family(config_cls=None, model_cls=None, config_kwargs={}, perturb=perturb,
                     converter_class=("conversion.bert", "ModernBertModel"), gguf_arch=FAMILY,
                     llama_arch_enum="LLM_ARCH_MODERN_BERT", rope_style="neox", required_tensors=[],
                     numpy_forward=None)
    gguf_work = work / "model.gguf"
    conv_args = zoo.convert_to_gguf(fam, args.llama_cpp.resolve(), hf_dir, gguf_work,
                                    model_name="zoo-modern-bert-tiny")
    commit = zoo.llama_cpp_commit(args.llama_cpp, args.llama_cpp_commit)

    hidden: dict[int, np.ndarray] = {}
    with torch.no_grad():
        for n, ids in zoo.PROMPTS.items():
            h = model(input_ids=torch.tensor([ids], dtype=torch.long)).last_hidden_state[0]
            hidden[n] = np.ascontiguousarray(h.to(torch.float32).numpy(), dtype="<f4")
            assert hidden[n].shape == (n, config.hidden_size)

    meta, tensors, table = zoo.read_gguf(gguf_work)
    for k, v in meta.items():
        print(f"  {k} = {zoo.short(v)}")
    for name, shape, ttype in table:
        print(f"  {name:32s} {str(shape):12s} {ttype}")
    a = FAMILY
    assert meta["general.architecture"] == a
    assert all(tt == "F32" for _, _, tt in table)
    assert int(meta[f"{a}.attention.sliding_window"]) == LOCAL_ATTENTION
    assert int(meta[f"{a}.attention.sliding_window_pattern"]) == GLOBAL_EVERY
    assert float(meta[f"{a}.rope.freq_base"]) == GLOBAL_THETA
    assert float(meta[f"{a}.rope.freq_base_swa"]) == LOCAL_THETA
    sd = {k: v.detach().numpy() for k, v in model.state_dict().items()}
    assert len(sd) == len(tensors), (len(sd), len(tensors))
    for k, v in sd.items():
        cands = [nm for nm, t in tensors.items() if t.shape == v.shape and np.array_equal(t, v)]
        assert len(cands) == 1, f"{k}: {len(cands)} GGUF tensors equal to it"
    print(f"all {len(sd)} checkpoint tensors bit-exact in the GGUF")

    checks: dict = {}
    for label, kw, want_match in (("numpy_float64_vs_transformers_max_abs_diff",
                                   dict(window=LOCAL_ATTENTION, local_theta=LOCAL_THETA), True),
                                  ("numpy_float64_without_window_vs_transformers_max_abs_diff",
                                   dict(window=None, local_theta=LOCAL_THETA), False),
                                  ("numpy_float64_local_layers_with_global_base_vs_transformers_max_abs_diff",
                                   dict(window=LOCAL_ATTENTION, local_theta=GLOBAL_THETA), False),
                                  ("numpy_float64_tanh_gelu_vs_transformers_max_abs_diff",
                                   dict(window=LOCAL_ATTENTION, local_theta=LOCAL_THETA, gelu="tanh"), False)):
        d = {}
        for n, ids in zoo.PROMPTS.items():
            ref = numpy_forward(tensors, meta, ids, **kw)
            d[str(n)] = float(np.abs(ref - hidden[n].astype(np.float64)).max())
        print(f"{label}: {d}")
        checks[label] = d
        if want_match:
            assert max(d.values()) < 1e-4, d
        else:
            assert d["40"] > 1e-4, d   # the 40-token prompt exercises each feature
    spread = {str(n): float(h.std()) for n, h in hidden.items()}
    assert min(spread.values()) > 0.5, spread

    shutil.copyfile(gguf_work, out / "model.gguf")
    written = ["model.gguf"]
    (out / "hf").mkdir(exist_ok=True)   # the checkpoint itself (archetype loads it directly too)
    for name in ("config.json", "model.safetensors"):
        shutil.copyfile(hf_dir / name, out / "hf" / name)
        written.append(f"hf/{name}")
    for n, ids in zoo.PROMPTS.items():
        np.asarray(ids, dtype="<i4").tofile(out / f"tokens_{n}.i32.bin")
        hidden[n].tofile(out / f"hidden_{n}.f32.bin")
        written += [f"tokens_{n}.i32.bin", f"hidden_{n}.f32.bin"]
    gguf_py_version = re.search(r'^version\s*=\s*"([^"]+)"',
                                (args.llama_cpp / "gguf-py" / "pyproject.toml").read_text(), re.M)
    import safetensors
    versions = {
        "family": FAMILY,
        "reference": "Hugging Face transformers ModernBertModel, float32, eager attention, CPU, "
                     "model.eval(), torch.no_grad(): last_hidden_state (after final_norm)",
        "versions": {"python": platform.python_version(), "torch": torch.__version__,
                     "transformers": transformers.__version__, "safetensors": safetensors.__version__,
                     "numpy": np.__version__, "llama_cpp_commit": commit,
                     "gguf_py": gguf_py_version.group(1) if gguf_py_version else "unknown"},
        "converter": {"script": "convert_hf_to_gguf.py (llama.cpp tree at llama_cpp_commit, its own gguf-py)",
                      "args": [{str(hf_dir): "<work>/hf", str(gguf_work): "<work>/model.gguf"}.get(x, x)
                               for x in conv_args],
                      "patched": "conversion.bert.ModernBertModel.set_vocab -> make_zoo_fixture's dummy vocabulary"},
        "seed": args.seed,
        "perturbed": perturbed,
        "config": json.loads(config.to_json_string()),
        "window_rule": "layer il global iff il % global_attn_every_n_layers == 0; on the other layers key k "
                       "visible to query q iff |q - k| <= local_attention // 2 (transformers "
                       "sliding_window_bidirectional_overlay; llama.cpp LLAMA_SWA_TYPE_SYMMETRIC)",
        "prompts": {str(n): ids for n, ids in zoo.PROMPTS.items()},
        "hidden_layout": "little-endian float32, row-major [n_tokens, hidden_size], every position",
        "checks": {**checks, "hidden_std": spread, "gguf_tensors_bit_exact_to_checkpoint": True},
        "files": {nm: {"bytes": (out / nm).stat().st_size, "sha256": zoo.sha256(out / nm)} for nm in written},
    }
    (out / "versions.json").write_text(json.dumps(versions, indent=2) + "\n")
    print(f"wrote {', '.join(written + ['versions.json'])} to {out}")


if __name__ == "__main__":
    main()
