#!/usr/bin/env python3
"""Golden fixtures for tiny random-weight models ("zoo"), made by Hugging Face transformers.

For one model family (FAMILIES below; now: qwen2) this script
  1. builds a tiny random model with transformers (fixed seed, float32, eager attention),
     with weights large enough that the logits spread over several units and with every
     bias and norm weight perturbed away from its default (0 / 1), so that a loader that
     drops or misplaces one of them is caught;
  2. saves it as a Hugging Face checkpoint (config.json + model.safetensors) in a work
     directory OUTSIDE the repository;
  3. converts that checkpoint to GGUF (all tensors F32) with llama.cpp's own
     convert_hf_to_gguf.py, run in this process with `--outtype f32`. The only change is the
     vocabulary step: a tiny random model has no tokenizer, and the converter's tokenizer
     code refuses an unknown one, so the family's converter class gets its `set_vocab`
     replaced (monkeypatched here; the converter file is not edited) by one that writes a
     dummy byte-level-BPE vocabulary of the model's size ("<t0>".."<tN-1>", see
     dummy_set_vocab). Only token ids are used by the fixture;
  4. runs transformers (model.eval(), torch.no_grad(), float32, eager attention) on two
     prompts (7 and 40 token ids), one batch each, and keeps the logits of every position;
  5. checks the GGUF: prints every metadata key and the tensor table, asserts the family's
     required tensors (e.g. the q/k/v biases) are present and F32, asserts the GGUF tensors
     equal the checkpoint's bit for bit, confirms from llama.cpp's source (when the tree has
     src/llama-model.cpp) the RoPE style llama.cpp uses for the architecture, and runs an
     independent float64 numpy forward pass on the GGUF tensors and hyperparameters that
     must match the transformers logits (asserted; --no-numpy-check skips it);
  6. writes into OUT/<family>/:
        model.gguf                     the converted model (all F32)
        tokens_7.i32.bin, tokens_40.i32.bin     the prompts, raw little-endian int32
        logits_7.f32.bin, logits_40.f32.bin     transformers' logits, raw little-endian
                                                float32, row-major [n_tokens, n_vocab]
        versions.json                  versions, seed, config, checks, sha256 of each file

Requirements (a virtual environment OUTSIDE the repository; see tools/reference/README.md):
    numpy, torch (CPU is enough), transformers, safetensors, sentencepiece (imported by the
    converter's vocab code), requests/pyyaml/tqdm (gguf-py), and a llama.cpp tree holding
    convert_hf_to_gguf.py, conversion/ and gguf-py/ (the converter is run against the
    tree's own gguf-py, so converter and GGUF library match).

Usage:
    /work/venv-ref/bin/python tools/reference/make_zoo_fixture.py qwen2 \\
        --llama-cpp /work/peers/llama.cpp --work /work/zoo-work
    (--out defaults to tests/data/zoo of this repository; --llama-cpp-commit overrides the
    commit read from the tree's COMMIT file or git HEAD.)
"""
from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import logging
import os
import platform
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, Callable

import numpy as np

SEED = 20240607
INIT_STD = 0.2        # std of every Linear weight (transformers' default 0.02 gives ~zero logits)
EMBED_STD = 1.0       # std of the token embedding rows
BIAS_SCALE = 0.5      # biases ~ BIAS_SCALE * randn
NORM_SCALE = 0.3      # norm weights ~ 1 + NORM_SCALE * randn

PROMPTS: dict[int, list[int]] = {
    7: [6, 9, 91, 104, 83, 82, 10],
    40: [38, 106, 12, 100, 44, 91, 10, 87, 88, 26, 66, 106, 127, 106, 72, 51, 105, 64, 99, 94,
         103, 75, 66, 50, 43, 114, 32, 65, 19, 8, 67, 4, 120, 68, 93, 22, 124, 58, 71, 59],
}

REPO = Path(__file__).resolve().parents[2]


# ----------------------------------------------------------------------------------------
# families


def _perturb_biases_and_norms(model) -> list[str]:
    """Every Linear weight ~ N(0, INIT_STD), embeddings ~ N(0, EMBED_STD), every bias ~
    BIAS_SCALE * randn, every norm weight ~ 1 + NORM_SCALE * randn. Uses the global torch RNG
    (seeded by the caller), parameters in named_parameters() order. Returns what it touched."""
    import torch
    touched = []
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith(".bias"):
                p.copy_(BIAS_SCALE * torch.randn_like(p))
                kind = "bias"
            elif "norm" in name and p.ndim == 1:
                p.copy_(1.0 + NORM_SCALE * torch.randn_like(p))
                kind = "norm"
            elif "embed_tokens" in name:
                p.copy_(EMBED_STD * torch.randn_like(p))
                kind = "embedding"
            elif p.ndim == 2:
                p.copy_(INIT_STD * torch.randn_like(p))
                kind = "weight"
            else:
                raise RuntimeError(f"no perturbation rule for parameter {name} {tuple(p.shape)}")
            touched.append(f"{name} ({kind})")
    return touched


def _qwen2_config():
    from transformers import Qwen2Config
    return Qwen2Config


def _qwen2_model():
    from transformers import Qwen2ForCausalLM
    return Qwen2ForCausalLM


@dataclasses.dataclass
class Family:
    config_cls: Callable[[], Any]          # lazily imported transformers config class
    model_cls: Callable[[], Any]           # lazily imported transformers *ForCausalLM class
    config_kwargs: dict[str, Any]
    perturb: Callable[[Any], list[str]]    # (model) -> description of what was set
    converter_class: tuple[str, str]       # (module in llama.cpp's conversion/, class) to patch
    gguf_arch: str                         # general.architecture expected in the GGUF
    llama_arch_enum: str                   # llama.cpp's LLM_ARCH_* (for the RoPE-style check)
    rope_style: str                        # "neox" (rotate halves) or "norm" (adjacent pairs)
    required_tensors: list[str]            # per block ({bid}) or global names that must be F32
    numpy_forward: Callable[..., np.ndarray]


def numpy_forward_llama_like(tensors: dict[str, np.ndarray], meta: dict[str, Any], arch: str,
                             ids: list[int], rope_style: str) -> np.ndarray:
    """float64 reference for a pre-norm decoder (Llama/Qwen2 shape): RMSNorm, RoPE, causal
    GQA attention with optional q/k/v/o biases, SwiGLU MLP, final RMSNorm, output head.
    Everything (sizes, eps, rope base) is read from the GGUF, not from transformers."""
    f64 = lambda n: tensors[n].astype(np.float64)  # noqa: E731
    n_layer = int(meta[f"{arch}.block_count"])
    n_embd = int(meta[f"{arch}.embedding_length"])
    n_head = int(meta[f"{arch}.attention.head_count"])
    n_head_kv = int(meta[f"{arch}.attention.head_count_kv"])
    eps = float(meta[f"{arch}.attention.layer_norm_rms_epsilon"])
    base = float(meta[f"{arch}.rope.freq_base"])
    hd = int(meta.get(f"{arch}.attention.key_length", n_embd // n_head))
    n_rot = int(meta.get(f"{arch}.rope.dimension_count", hd))
    assert n_rot == hd, "partial rotary not handled here"
    n = len(ids)

    def rms(x, w):
        return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * w

    def lin(x, name):
        y = x @ f64(name + ".weight").T
        if name + ".bias" in tensors:
            y = y + f64(name + ".bias")
        return y

    pos = np.arange(n, dtype=np.float64)
    inv = base ** (-np.arange(0, hd, 2, dtype=np.float64) / hd)       # [hd/2]
    ang = pos[:, None] * inv[None, :]                                   # [n, hd/2]
    cos, sin = np.cos(ang)[:, None, :], np.sin(ang)[:, None, :]          # [n, 1, hd/2]

    def rope(x):  # x [n, heads, hd]
        if rope_style == "neox":
            a, b = x[..., : hd // 2], x[..., hd // 2:]
            return np.concatenate([a * cos - b * sin, b * cos + a * sin], axis=-1)
        if rope_style == "norm":
            a, b = x[..., 0::2], x[..., 1::2]
            out = np.empty_like(x)
            out[..., 0::2] = a * cos - b * sin
            out[..., 1::2] = b * cos + a * sin
            return out
        raise ValueError(rope_style)

    mask = np.triu(np.full((n, n), -np.inf), k=1)
    x = f64("token_embd.weight")[np.asarray(ids)]
    for il in range(n_layer):
        p = f"blk.{il}."
        h = rms(x, f64(p + "attn_norm.weight"))
        q = rope(lin(h, p + "attn_q").reshape(n, n_head, hd))
        k = rope(lin(h, p + "attn_k").reshape(n, n_head_kv, hd))
        v = lin(h, p + "attn_v").reshape(n, n_head_kv, hd)
        group = n_head // n_head_kv
        o = np.empty((n, n_head, hd))
        for hh in range(n_head):
            kv = hh // group
            s = q[:, hh, :] @ k[:, kv, :].T / np.sqrt(hd) + mask
            s = np.exp(s - s.max(axis=-1, keepdims=True))
            s /= s.sum(axis=-1, keepdims=True)
            o[:, hh, :] = s @ v[:, kv, :]
        x = x + lin(o.reshape(n, n_head * hd), p + "attn_output")
        h = rms(x, f64(p + "ffn_norm.weight"))
        g, u = lin(h, p + "ffn_gate"), lin(h, p + "ffn_up")
        x = x + lin(g / (1.0 + np.exp(-g)) * u, p + "ffn_down")
    x = rms(x, f64("output_norm.weight"))
    head = "output" if "output.weight" in tensors else "token_embd"
    return lin(x, head)


FAMILIES: dict[str, Family] = {
    "qwen2": Family(
        config_cls=_qwen2_config,
        model_cls=_qwen2_model,
        config_kwargs=dict(
            vocab_size=128, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
            num_attention_heads=4, num_key_value_heads=2,              # head_dim 16
            max_position_embeddings=256,
            rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
            rms_norm_eps=1e-6, tie_word_embeddings=False, use_sliding_window=False,
            hidden_act="silu", attention_dropout=0.0,
            bos_token_id=1, eos_token_id=2,
            attn_implementation="eager", dtype="float32",
        ),
        perturb=_perturb_biases_and_norms,
        converter_class=("conversion.qwen", "Qwen2Model"),
        gguf_arch="qwen2",
        llama_arch_enum="LLM_ARCH_QWEN2",
        rope_style="neox",
        required_tensors=[
            "token_embd.weight", "output_norm.weight", "output.weight",
            "blk.{bid}.attn_norm.weight",
            "blk.{bid}.attn_q.weight", "blk.{bid}.attn_q.bias",
            "blk.{bid}.attn_k.weight", "blk.{bid}.attn_k.bias",
            "blk.{bid}.attn_v.weight", "blk.{bid}.attn_v.bias",
            "blk.{bid}.attn_output.weight", "blk.{bid}.ffn_norm.weight",
            "blk.{bid}.ffn_gate.weight", "blk.{bid}.ffn_up.weight", "blk.{bid}.ffn_down.weight",
        ],
        numpy_forward=numpy_forward_llama_like,
    ),
}


# ----------------------------------------------------------------------------------------
# the converter


DUMMY_BOS, DUMMY_EOS = 1, 2


def make_dummy_set_vocab(calls: list[int]):
    def dummy_set_vocab(self) -> None:
        """Replacement for the converter's set_vocab: a GPT-2-style ("gpt2", pre "default")
        vocabulary of vocab_size tokens "<t0>".."<tN-1>", all NORMAL except BOS (1) and EOS
        (2), which are CONTROL; no BOS/EOS added automatically. A "gpt2" vocabulary needs a
        merges array (llama.cpp and archetype both require the key, and gguf-py drops an
        empty array), so it has one merge, "< t", whose result is not a token: it never
        applies. The fixture only uses token ids."""
        import gguf
        n = int(self.hparams["vocab_size"])
        tokens = [f"<t{i}>" for i in range(n)]
        types = [gguf.TokenType.NORMAL] * n
        types[DUMMY_BOS] = gguf.TokenType.CONTROL
        types[DUMMY_EOS] = gguf.TokenType.CONTROL
        w = self.gguf_writer
        w.add_tokenizer_model("gpt2")
        w.add_tokenizer_pre("default")
        w.add_token_list(tokens)
        w.add_token_types(types)
        w.add_token_merges(["< t"])
        w.add_bos_token_id(DUMMY_BOS)
        w.add_eos_token_id(DUMMY_EOS)
        w.add_add_bos_token(False)
        w.add_add_eos_token(False)
        calls.append(n)
    return dummy_set_vocab


def convert_to_gguf(fam: Family, llama_cpp: Path, hf_dir: Path, out_file: Path, model_name: str):
    """Runs llama.cpp's convert_hf_to_gguf.main() in this process with the family's
    converter class's set_vocab replaced."""
    sys.path.insert(0, str(llama_cpp / "gguf-py"))
    sys.path.insert(0, str(llama_cpp))
    import gguf  # noqa: F401  (the tree's gguf-py)
    assert Path(gguf.__file__).resolve().is_relative_to((llama_cpp / "gguf-py").resolve()), gguf.__file__
    import importlib
    convert = importlib.import_module("convert_hf_to_gguf")
    mod = importlib.import_module(fam.converter_class[0])
    cls = getattr(mod, fam.converter_class[1])
    calls: list[int] = []
    original = cls.__dict__.get("set_vocab")
    cls.set_vocab = make_dummy_set_vocab(calls)
    argv = ["convert_hf_to_gguf.py", str(hf_dir), "--outtype", "f32", "--outfile", str(out_file),
            "--model-name", model_name]
    saved_argv = sys.argv
    try:
        sys.argv = argv
        convert.main()
    finally:
        sys.argv = saved_argv
        if original is not None:
            cls.set_vocab = original
    assert calls, f"{fam.converter_class[1]}.set_vocab was not the one called: the converter picked another class"
    return argv[1:]


def llama_cpp_commit(llama_cpp: Path, override: str | None) -> str:
    if override:
        return override
    if (llama_cpp / "COMMIT").is_file():
        return (llama_cpp / "COMMIT").read_text().strip()
    try:
        return subprocess.run(["git", "-C", str(llama_cpp), "rev-parse", "HEAD"], check=True,
                              capture_output=True, text=True).stdout.strip()
    except Exception:
        return "unknown"


def rope_style_in_llama_cpp(llama_cpp: Path, arch_enum: str) -> str | None:
    """Which RoPE llama.cpp's llama_model_rope_type() returns for arch_enum (the first
    `return` after its `case`), or None when the tree has no src/llama-model.cpp."""
    src = llama_cpp / "src" / "llama-model.cpp"
    if not src.is_file():
        return None
    text = src.read_text()
    start = text.find("llama_rope_type llama_model_rope_type(")
    assert start >= 0, "llama_model_rope_type not found"
    end = text.find("\n}\n", start)
    body = text[start:end]
    m = re.search(r"case\s+" + re.escape(arch_enum) + r"\s*:", body)
    assert m, f"{arch_enum} not in llama_model_rope_type"
    r = re.search(r"return\s+([^;]+);", body[m.end():])
    value = r.group(1).strip()
    return {"LLAMA_ROPE_TYPE_NEOX": "neox", "LLAMA_ROPE_TYPE_NORM": "norm"}.get(value, value)


# ----------------------------------------------------------------------------------------
# GGUF inspection


def read_gguf(path: Path):
    from gguf import GGUFReader, GGMLQuantizationType
    r = GGUFReader(str(path))
    meta: dict[str, Any] = {}
    for key, field in r.fields.items():
        if key.startswith("GGUF."):
            continue
        meta[key] = field.contents()
    tensors, table = {}, []
    for t in r.tensors:
        table.append((t.name, [int(d) for d in t.shape], GGMLQuantizationType(t.tensor_type).name))
        tensors[t.name] = np.array(t.data)
    return meta, tensors, table


def short(v: Any) -> str:
    if isinstance(v, list) and len(v) > 8:
        return f"[{', '.join(repr(x) for x in v[:6])}, ... ({len(v)} items)]"
    return repr(v)


# ----------------------------------------------------------------------------------------


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("family", choices=sorted(FAMILIES))
    ap.add_argument("--llama-cpp", type=Path, required=True,
                    help="llama.cpp tree with convert_hf_to_gguf.py, conversion/, gguf-py/")
    ap.add_argument("--llama-cpp-commit", default=None, help="commit to record (default: DIR/COMMIT or git HEAD)")
    ap.add_argument("--work", type=Path, required=True, help="work directory outside the repository")
    ap.add_argument("--out", type=Path, default=REPO / "tests" / "data" / "zoo")
    ap.add_argument("--seed", type=int, default=SEED)
    ap.add_argument("--no-numpy-check", action="store_true")
    args = ap.parse_args()

    fam = FAMILIES[args.family]
    work = args.work.resolve() / args.family
    if work.is_relative_to(REPO):
        sys.exit(f"--work {work} is inside the repository; use a directory outside it")
    out = args.out.resolve() / args.family
    hf_dir = work / "hf"
    for d in (hf_dir, out):
        d.mkdir(parents=True, exist_ok=True)

    import torch
    import transformers
    torch.set_num_threads(1)

    # 1. the model
    torch.manual_seed(args.seed)
    config = fam.config_cls()(**fam.config_kwargs)
    model = fam.model_cls()(config)
    perturbed = fam.perturb(model)
    model = model.to(torch.float32).eval()
    assert model.config._attn_implementation == "eager", model.config._attn_implementation

    # 2. the checkpoint
    for f in hf_dir.iterdir():
        f.unlink()
    model.save_pretrained(hf_dir)
    print(f"HF checkpoint: {sorted(p.name for p in hf_dir.iterdir())} in {hf_dir}")

    # 3. the GGUF
    gguf_work = work / "model.gguf"
    conv_args = convert_to_gguf(fam, args.llama_cpp.resolve(), hf_dir, gguf_work,
                                model_name=f"zoo-{args.family}-tiny")
    commit = llama_cpp_commit(args.llama_cpp, args.llama_cpp_commit)

    # 4. transformers logits
    logits: dict[int, np.ndarray] = {}
    with torch.no_grad():
        for n, ids in PROMPTS.items():
            assert len(ids) == n and max(ids) < config.vocab_size
            out_t = model(input_ids=torch.tensor([ids], dtype=torch.long), use_cache=False)
            lg = out_t.logits[0].to(torch.float32).numpy()
            assert lg.shape == (n, config.vocab_size)
            logits[n] = np.ascontiguousarray(lg, dtype="<f4")
    spread = {n: float(lg.std()) for n, lg in logits.items()}
    max_abs = max(float(np.abs(lg).max()) for lg in logits.values())
    print(f"transformers logits: max |logit| {max_abs:.4f}, std per prompt {spread}")
    assert min(spread.values()) > 0.5, "logits too flat to catch a wrong computation"

    # 5. checks on the GGUF
    meta, tensors, table = read_gguf(gguf_work)
    print(f"\nGGUF {gguf_work} ({gguf_work.stat().st_size} bytes) metadata:")
    for k, v in meta.items():
        print(f"  {k} = {short(v)}")
    print("tensors (name, ggml shape ne[0..], type):")
    for name, shape, ttype in table:
        print(f"  {name:32s} {str(shape):12s} {ttype}")
    assert meta["general.architecture"] == fam.gguf_arch, meta["general.architecture"]
    assert all(ttype == "F32" for _, _, ttype in table), "not every tensor is F32"
    types = {name: ttype for name, _, ttype in table}
    n_layer = int(meta[f"{fam.gguf_arch}.block_count"])
    for pattern in fam.required_tensors:
        for bid in (range(n_layer) if "{bid}" in pattern else [None]):
            name = pattern.format(bid=bid)
            assert types.get(name) == "F32", f"{name} missing or not F32"
    # the GGUF holds exactly the checkpoint's values
    sd = {k: v.detach().numpy() for k, v in model.state_dict().items()}
    assert len(sd) == len(tensors), (len(sd), len(tensors))
    matched = 0
    for k, v in sd.items():
        cands = [name for name, t in tensors.items() if t.shape == v.shape and np.array_equal(t, v)]
        assert len(cands) == 1, f"{k}: {len(cands)} GGUF tensors equal to it"
        matched += 1
    print(f"all {matched} checkpoint tensors found bit-exact in the GGUF")
    rope = rope_style_in_llama_cpp(args.llama_cpp, fam.llama_arch_enum)
    if rope is None:
        print(f"(no src/llama-model.cpp in {args.llama_cpp}: RoPE style not checked against llama.cpp)")
    else:
        print(f"llama.cpp's llama_model_rope_type({fam.llama_arch_enum}) -> {rope}")
        assert rope == fam.rope_style, (rope, fam.rope_style)

    numpy_diff = None
    if not args.no_numpy_check:
        numpy_diff = {}
        for n, ids in PROMPTS.items():
            ref = fam.numpy_forward(tensors, meta, fam.gguf_arch, ids, fam.rope_style)
            d = float(np.abs(ref - logits[n].astype(np.float64)).max())
            numpy_diff[n] = d
            print(f"numpy float64 forward on the GGUF vs transformers, n={n}: max |diff| {d:.3e}")
        assert max(numpy_diff.values()) < 1e-4, numpy_diff

    # 6. outputs
    shutil.copyfile(gguf_work, out / "model.gguf")
    written = ["model.gguf"]
    for n, ids in PROMPTS.items():
        np.asarray(ids, dtype="<i4").tofile(out / f"tokens_{n}.i32.bin")
        logits[n].tofile(out / f"logits_{n}.f32.bin")
        written += [f"tokens_{n}.i32.bin", f"logits_{n}.f32.bin"]
    gguf_py_version = re.search(r'^version\s*=\s*"([^"]+)"',
                                (args.llama_cpp / "gguf-py" / "pyproject.toml").read_text(), re.M)
    import safetensors
    versions = {
        "family": args.family,
        "reference": "Hugging Face transformers, float32, eager attention, CPU, model.eval(), torch.no_grad()",
        "versions": {
            "python": platform.python_version(),
            "torch": torch.__version__,
            "transformers": transformers.__version__,
            "safetensors": safetensors.__version__,
            "numpy": np.__version__,
            "llama_cpp_commit": commit,
            "gguf_py": gguf_py_version.group(1) if gguf_py_version else "unknown",
        },
        "converter": {
            "script": "convert_hf_to_gguf.py (llama.cpp tree at llama_cpp_commit, its own gguf-py)",
            "args": [{str(hf_dir): "<work>/hf", str(gguf_work): "<work>/model.gguf"}.get(a, a) for a in conv_args],
            "patched": f"{fam.converter_class[0]}.{fam.converter_class[1]}.set_vocab -> dummy vocabulary "
                       f"('gpt2', pre 'default', tokens '<t0>'..'<t{config.vocab_size - 1}>', "
                       f"bos {DUMMY_BOS}, eos {DUMMY_EOS} CONTROL, merges ['< t'], add_bos/add_eos false)",
        },
        "seed": args.seed,
        "init": {
            "rng": "torch.manual_seed(seed) before constructing the model, then parameters in "
                   "named_parameters() order",
            "linear_weight_std": INIT_STD, "embedding_std": EMBED_STD,
            "bias": f"{BIAS_SCALE} * randn", "norm_weight": f"1 + {NORM_SCALE} * randn",
        },
        "config": json.loads(config.to_json_string()),
        "rope_style": fam.rope_style,
        "prompts": {str(n): ids for n, ids in PROMPTS.items()},
        "logits_layout": "little-endian float32, row-major [n_tokens, vocab_size], every position",
        "checks": {
            "max_abs_logit": max_abs,
            "logit_std": {str(n): s for n, s in spread.items()},
            "numpy_float64_vs_transformers_max_abs_diff":
                None if numpy_diff is None else {str(n): d for n, d in numpy_diff.items()},
            "gguf_tensors_bit_exact_to_checkpoint": True,
        },
        "files": {name: {"bytes": (out / name).stat().st_size, "sha256": sha256(out / name)} for name in written},
    }
    (out / "versions.json").write_text(json.dumps(versions, indent=2) + "\n")
    written.append("versions.json")
    print(f"\nwrote {', '.join(written)} to {out}")


if __name__ == "__main__":
    main()
