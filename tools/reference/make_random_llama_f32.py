#!/usr/bin/env python3
"""A random Llama-architecture F32 GGUF with a real tokenizer, for issue 41 item 6's ternary
comparison (docs/weights.md, "Real files"): `llama-quantize --pure` turns it into a random
ternary TQ1_0 / TQ2_0 file (every matrix, the embedding and the head included), which
llama-perplexity and `archetype perplexity` / `archetype logits` then read. Every row width is
a multiple of 256, so no tensor falls back to another type.

  make_random_llama_f32.py TOKENIZER.gguf OUT.gguf [--layers 4] [--embd 512] [--ff 1536] [--seed 1]

TOKENIZER.gguf: a model whose tokenizer.* keys are copied (SmolLM2's: 49152 tokens, BPE).
Weights: N(0, 1/fan_in) matrices (the head N(0, 16/fan_in), so the logits spread over a few
units and the top-1 is not decided by rounding noise), N(0, 1) embedding, unit norms.
Not a fixture: the file stays outside the repository. Needs numpy and gguf-py.
"""
import argparse

import numpy as np
from gguf import GGUFReader, GGUFValueType, GGUFWriter


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("tokenizer")
    ap.add_argument("out")
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--embd", type=int, default=512)
    ap.add_argument("--ff", type=int, default=1536)
    ap.add_argument("--heads", type=int, default=8)
    ap.add_argument("--kv-heads", type=int, default=4)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    assert a.embd % 256 == 0 and a.ff % 256 == 0, "row widths must be multiples of 256 (TQ super-blocks)"
    rng = np.random.default_rng(a.seed)
    r = GGUFReader(a.tokenizer)
    tokens = r.fields["tokenizer.ggml.tokens"].contents()
    n_vocab = len(tokens)
    head_dim = a.embd // a.heads

    w = GGUFWriter(a.out, "llama")
    w.add_name("random ternary test model")
    w.add_block_count(a.layers)
    w.add_context_length(2048)
    w.add_embedding_length(a.embd)
    w.add_feed_forward_length(a.ff)
    w.add_head_count(a.heads)
    w.add_head_count_kv(a.kv_heads)
    w.add_rope_dimension_count(head_dim)
    w.add_rope_freq_base(10000.0)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_vocab_size(n_vocab)
    w.add_file_type(0)
    for name, f in r.fields.items():
        if not name.startswith("tokenizer."):
            continue
        vtype = f.types[0]
        if vtype == GGUFValueType.ARRAY:
            w.add_key_value(name, f.contents(), vtype, f.types[-1])
        else:
            w.add_key_value(name, f.contents(), vtype)

    def mat(rows, cols, gain=1.0):  # ggml shape [cols, rows]: numpy [rows, cols]
        return (rng.standard_normal((rows, cols)) * np.sqrt(gain / cols)).astype(np.float32)

    w.add_tensor("token_embd.weight", rng.standard_normal((n_vocab, a.embd)).astype(np.float32))
    kv = a.kv_heads * head_dim
    for i in range(a.layers):
        p = f"blk.{i}."
        w.add_tensor(p + "attn_norm.weight", np.ones(a.embd, np.float32))
        w.add_tensor(p + "attn_q.weight", mat(a.embd, a.embd))
        w.add_tensor(p + "attn_k.weight", mat(kv, a.embd))
        w.add_tensor(p + "attn_v.weight", mat(kv, a.embd))
        w.add_tensor(p + "attn_output.weight", mat(a.embd, a.embd))
        w.add_tensor(p + "ffn_norm.weight", np.ones(a.embd, np.float32))
        w.add_tensor(p + "ffn_gate.weight", mat(a.ff, a.embd))
        w.add_tensor(p + "ffn_up.weight", mat(a.ff, a.embd))
        w.add_tensor(p + "ffn_down.weight", mat(a.embd, a.ff))
    w.add_tensor("output_norm.weight", np.ones(a.embd, np.float32))
    w.add_tensor("output.weight", mat(n_vocab, a.embd, 16.0))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


if __name__ == "__main__":
    main()
