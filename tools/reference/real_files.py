#!/usr/bin/env python3
"""Issue 41 item 6 (docs/weights.md, "Real files"): measurements of llama-quantize's files.

  real_files.py share FILE.gguf TYPE
      bytes of the file's tensors per ggml type, and the share in TYPE (e.g. IQ2_XS)
  real_files.py chunks BASE.kld OUTDIR N MODEL.gguf
      the first N chunks of the tokens that `llama-perplexity --kl-divergence-base BASE.kld`
      saved, as OUTDIR/chunk<i>.i32 (int32 ids, the first one replaced by the model's BOS when
      the model adds one, as llama-perplexity feeds them), for `archetype logits --tokens`
  real_files.py compare BASE.kld MODEL.gguf LOGITS0.f32 [LOGITS1.f32 ...]
      archetype's logits of chunks 0, 1, ... (`archetype logits --out`, float32
      [n_ctx x n_vocab]) against llama.cpp's saved log-probabilities of the same chunks:
      the statistics `llama-perplexity --kl-divergence` prints, computed as it does
      (tools/perplexity/perplexity.cpp, log_softmax with a base): "same top" (archetype's
      argmax is llama.cpp's; llama.cpp's from its 16-bit log-probabilities, first maximum),
      mean KL(llama.cpp || archetype) over tokens whose llama.cpp log-probability is > -16,
      and the perplexity of both over the scored positions (the second half of each chunk).

The .kld layout (llama.cpp's perplexity()): "_logits_", int32 n_ctx, int32 n_vocab, int32
n_chunk, int32 tokens[n_chunk * n_ctx], then per chunk n_ctx - 1 - n_ctx/2 rows of
nv = 2*((n_vocab+1)/2) + 4 uint16: float scale, float min_log_prob, then per token
round((logit - min_logit) / scale) (0 below max_logit - 16).
Needs numpy and gguf-py (PYTHONPATH=<llama.cpp>/gguf-py).
"""
import os
import sys

import numpy as np


def read_kld(path):
    with open(path, "rb") as f:
        if f.read(8) != b"_logits_":
            sys.exit(f"{path}: not a llama-perplexity --kl-divergence-base file")
        n_ctx, n_vocab, n_chunk = np.fromfile(f, dtype=np.int32, count=3)
    tok_off = 8 + 12
    tokens = np.memmap(path, dtype=np.int32, mode="r", offset=tok_off, shape=(n_chunk * n_ctx,))
    nv = 2 * ((n_vocab + 1) // 2) + 4
    rows = n_ctx - 1 - n_ctx // 2
    probs = np.memmap(path, dtype=np.uint16, mode="r", offset=tok_off + 4 * n_chunk * n_ctx,
                      shape=(n_chunk, rows, nv))
    return int(n_ctx), int(n_vocab), int(n_chunk), tokens, probs


def bos_of(model):
    from gguf import GGUFReader
    r = GGUFReader(model)

    def field(name):
        f = r.fields.get(name)
        return None if f is None else f.parts[f.data[0]][0]
    add = field("tokenizer.ggml.add_bos_token")
    # llama.cpp's default when the key is absent: SPM/BPE vocabularies add BOS (llama-vocab.cpp);
    # both models here carry the key
    if add is None:
        sys.exit(f"{model}: no tokenizer.ggml.add_bos_token; say the BOS rule explicitly")
    return int(field("tokenizer.ggml.bos_token_id")) if bool(add) else -1


def cmd_share(path, target):
    from gguf import GGUFReader
    r = GGUFReader(path)
    per = {}
    for t in r.tensors:
        name = t.tensor_type.name
        per[name] = per.get(name, 0) + int(t.n_bytes)
    total = sum(per.values())
    parts = ", ".join(f"{k} {100 * v / total:.1f} %" for k, v in sorted(per.items(), key=lambda kv: -kv[1]))
    print(f"{os.path.basename(path)}: {total} tensor bytes; in {target}: {100 * per.get(target, 0) / total:.1f} %; ({parts})")


def cmd_chunks(kld, outdir, n, model):
    n_ctx, _, n_chunk, tokens, _ = read_kld(kld)
    bos = bos_of(model)
    os.makedirs(outdir, exist_ok=True)
    for i in range(min(n, n_chunk)):
        ids = np.array(tokens[i * n_ctx:(i + 1) * n_ctx], dtype=np.int32)
        if bos >= 0:
            ids[0] = bos
        ids.tofile(os.path.join(outdir, f"chunk{i}.i32"))


def cmd_compare(kld, model, logits_files):
    n_ctx, n_vocab, n_chunk, tokens, probs = read_kld(kld)
    first = n_ctx // 2
    same = count = 0
    kl_sum = nll = nll_base = 0.0
    for c, lf in enumerate(logits_files):
        lg = np.fromfile(lf, dtype=np.float32)
        if lg.size != n_ctx * n_vocab:
            sys.exit(f"{lf}: {lg.size} floats, expected n_ctx {n_ctx} x n_vocab {n_vocab}")
        lg_all = lg.reshape(n_ctx, n_vocab)[first:n_ctx - 1]
        nxt_all = np.array(tokens[c * n_ctx + first + 1:(c + 1) * n_ctx], dtype=np.int64)
        for b in range(0, len(nxt_all), 32):  # row blocks: Gemma's 262144-wide rows in float64
            lg = lg_all[b:b + 32].astype(np.float64)
            base = probs[c, b:b + 32]
            nxt = nxt_all[b:b + 32]
            hdr = np.ascontiguousarray(base[:, :4]).view(np.float32)  # scale, min_log_prob per row
            scale, min_lp = hdr[:, 0:1].astype(np.float64), hdr[:, 1:2].astype(np.float64)
            lp_base = scale * base[:, 4:4 + n_vocab].astype(np.float64) + min_lp
            mx = lg.max(axis=1, keepdims=True)
            lp = lg - mx - np.log(np.exp(lg - mx).sum(axis=1, keepdims=True))
            r = np.arange(len(nxt))
            nll += float(-lp[r, nxt].sum())
            nll_base += float(-lp_base[r, nxt].sum())
            kl_sum += float(np.where(lp_base > -16.0, np.exp(lp_base) * (lp_base - lp), 0.0).sum())
            same += int((lg.argmax(axis=1) == base[:, 4:4 + n_vocab].argmax(axis=1)).sum())
        count += len(nxt_all)
    print(f"{os.path.basename(model)}: {len(logits_files)} chunks of {n_ctx}, {count} positions: same top "
          f"{same}/{count} ({100 * same / count:.2f} %), mean KL(llama.cpp || archetype) {kl_sum / count:.5f}, "
          f"PPL archetype {np.exp(nll / count):.4f} llama.cpp {np.exp(nll_base / count):.4f}")


def main():
    a = sys.argv[1:]
    if len(a) == 3 and a[0] == "share":
        cmd_share(a[1], a[2])
    elif len(a) == 5 and a[0] == "chunks":
        cmd_chunks(a[1], a[2], int(a[3]), a[4])
    elif len(a) >= 4 and a[0] == "compare":
        cmd_compare(a[1], a[2], a[3:])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
