#!/usr/bin/env python3
"""Small Hugging Face tokenizer.json files and their reference tokenizations
(tests/data/tokenizer/hf/<name>/{tokenizer.json,cases.json}).

Requirements (a virtual environment OUTSIDE the repository, e.g. /work/venv):
    python3 -m venv /work/venv && /work/venv/bin/pip install tokenizers
No download of any kind: the tokenizers are TRAINED here, deterministically, on text that is on
the machine (the licence texts under /usr/share/common-licenses, the strings of
tests/data/tokenizer/{smollm2,gemma3}.json and a fixed block of digits, code and non-Latin text).

Usage:
    /work/venv/bin/python tools/reference/make_hf_tokenizer_fixtures.py [--out DIR] \
        [--llama-inp /root/.cache/archetype-models/llama-vocab/ggml-vocab-gpt-2.gguf.inp]

It makes five tokenizer.json files, each a small BPE (BpeTrainer, no randomness) wrapped in the
pipeline of a real model family's tokenizer.json:
- gpt2:    ByteLevel(use_regex) pre-tokenizer, ByteLevel decoder and post-processor (which adds
           no token), <|endoftext|> as a special added token after the learned vocabulary.
- llama3:  Split(Llama-3 regex, isolated) + ByteLevel(use_regex=False), BPE with
           ignore_merges=true, <|begin_of_text|> <|end_of_text|>, TemplateProcessing that puts
           <|begin_of_text|> before each sequence. The vocabulary also holds a few whole words
           that the merges cannot build ("shortcut" tokens, listed in cases.json), so that
           ignore_merges changes results.
- qwen2:   NFC normalizer, Split(Qwen2 regex: single digits, isolated) + ByteLevel(use_regex=False),
           <|endoftext|> <|im_start|> <|im_end|>, ByteLevel post-processor (adds nothing).
- smollm:  Digits(individual) + ByteLevel(use_regex) pre-tokenizer, three special tokens, no
           post-processor.
- spm_bpe: the Llama-2 / Mistral layout: normalizer Prepend("▁") + Replace(" ", "▁"), no
           pre-tokenizer, BPE(byte_fallback, fuse_unk, unk "<unk>"), vocabulary <unk> <s> </s>,
           <0x00>..<0xFF> (ids 3..258), then the learned pieces; TemplateProcessing "<s> $A";
           decoder Replace("▁"," ") + ByteFallback + Fuse + Strip(" ", 1, 0). The trainer cannot
           lay out such a vocabulary, so it is trained on the normalised corpus (split before each
           "▁" for training only) and the JSON is written here; characters outside its limited
           alphabet (emoji, most CJK, "\\n") therefore encode to <0x..> byte tokens.

cases.json holds, for every test string, ids = tok.encode(s, add_special_tokens=False).ids and
ids_special = tok.encode(s, add_special_tokens=True).ids (only where it differs from ids), where tok is
tokenizers.Tokenizer.from_file(<the written tokenizer.json>). The references are Hugging Face
tokenizers, never archetype. Test strings: every "text" of tests/data/tokenizer/smollm2.json and
gemma3.json, a block of hard strings (whitespace runs, contractions in any case, digit runs,
quotes, special tokens inside text, punctuation before newlines, a 2000-character mix, non-BMP
characters, the empty string) and the strings of llama.cpp's tokenizer test input
(ggml-vocab-gpt-2.gguf.inp, split on "\\n__ggml_vocab_test__\\n" as tests/test-tokenizer-0.cpp
read_tests does). Duplicates are dropped, first occurrence kept.
"""
import argparse
import hashlib
import json
import os
import platform
import re
import sys

import tokenizers
from tokenizers import (AddedToken, Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers,
                        processors, trainers)

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LICENSES = "/usr/share/common-licenses"
LICENSE_FILES = ["GPL-3", "Apache-2.0", "LGPL-3", "MPL-2.0", "Artistic", "BSD", "CC0-1.0"]
LLAMA_INP = "/root/.cache/archetype-models/llama-vocab/ggml-vocab-gpt-2.gguf.inp"

LLAMA3_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|"
                  r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
QWEN2_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}|"
                 r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")

# Fixed extra training text, so that digits, code and non-Latin scripts get merges.
EXTRA_CORPUS = """\
0 1 2 3 4 5 6 7 8 9 10 11 12 20 42 99 100 123 256 512 1000 1024 2023 2024 2025 4096 65536
3.14159 2.71828 1.41421 0.5 0.25 -1 -273.15 1e-10 1,000,000 12:30:45 2024-01-15 v1.2.3 0x1F 0xFF
1234567890 9876543210 1111 2222 3333 4444 5555 6666 7777 8888 9999 31415926535 27182818284
#include <vector>
#include <string>
int main(int argc, char** argv) { return 0; }
for (int i = 0; i < n; ++i) { x[i] += y[i] * 2; }
std::vector<int> v = {1, 2, 3}; auto it = v.begin();
def f(x):
    return x ** 2 + 1
if __name__ == "__main__":
    print("hello, world")
    for i in range(10):
        print(i)
class Tokenizer:
    def __init__(self, vocab, merges):
        self.vocab = vocab
        self.merges = merges
{"key": [1, 2, 3], "value": null, "ok": true}
SELECT id, name FROM users WHERE id = 42 ORDER BY name;
<html><body><div class="x">hi</div></body></html>
https://example.com/path?q=1&r=2#frag user@example.com ~/.bashrc && echo $HOME
Привет, мир! Это тестовое предложение. Я люблю читать книги и писать программы.
Москва — столица России. Сегодня хорошая погода, и мы идём гулять в парк.
нещо на Български език. Україна, Київ, Львів. Добрий день!
你好，世界！这是一个测试句子。我想在苹果公司工作。今天天气很好，我们去公园散步吧。
中文分词测试。人工智能正在改变世界。我们学习机器学习和自然语言处理。
日本語のテキストです。今日は良い天気ですね。カタカナ ひらがな 漢字
안녕하세요 세계. 한국어 문장입니다.
Ελληνικά γράμματα. שלום עולם. مرحبا بالعالم. नमस्ते दुनिया.
😀 😃 😄 😁 👍 👍🏽 ❤️ ✅ 🚀 🎉 😀😃😄 I ❤️ NY ✓ ✗ ★ → ← ∑ ∫ √ ∞ ≠ ≤ ≥ α β γ € £ ¥
Crème brûlée, café, naïve, résumé, Ångström, Über straße, señor niño, façade, Dvořák, Łódź.
"""

# Whole pre-tokens put into llama3's vocabulary without merges that build them (the trained
# vocabulary alone gives the same ids with and without ignore_merges on every test string).
SHORTCUT_WORDS = [" tokenizer", " archetype", " Llama", " merges"]


def corpus_lines(repo):
    lines = []
    for name in LICENSE_FILES:
        with open(os.path.join(LICENSES, name), encoding="utf-8") as f:
            lines.extend(f.read().split("\n"))
    for name in ["smollm2", "gemma3"]:
        lines.extend(c["text"] for c in fixture_cases(repo, name))
    lines.extend(EXTRA_CORPUS.split("\n"))
    return [l for l in lines if l.strip()]


def fixture_cases(repo, name):
    with open(os.path.join(repo, "tests", "data", "tokenizer", name + ".json"), encoding="utf-8") as f:
        return json.load(f)["cases"]


def read_llama_inp(path):
    """tests/test-tokenizer-0.cpp read_tests: split the whole file on "\\n__ggml_vocab_test__\\n"."""
    with open(path, encoding="utf-8", newline="") as f:
        raw = f.read()
    sep = "\n__ggml_vocab_test__\n"
    out, pos = [], 0
    while pos < len(raw):
        nxt = raw.find(sep, pos)
        if nxt < 0:
            out.append(raw[pos:])
            break
        out.append(raw[pos:nxt])
        pos = nxt + len(sep)
    return out


def hard_strings():
    s = [
        "", "a   b", "   x", "x   ", "a \t b", "\n\n  \t\nfoo", "  \n", " \n", "\t\n", "word   \n  next",
        " \t ", "  \r\n  ", "a\r\nb", "\u00a0x\u00a0y", "\u3000x",
        "I'M", "They'Re", "don'T", "WE'VE", "You'LL", "she'D", "IT'S", "they're", "I'm", "'s", "'S",
        "'hello'", "rock 'n' roll", "''quoted''", "x's y'all", "'''", "a'b'c",
        "1", "12", "123", "1234", "12345", "123456", "1234567", "3.14159", "x1y22z333", "a 1 22 333 4444",
        "1,234,567.89", "007", "١٢٣ ١٢٣٤", "１２３４",
        "a<|endoftext|>b", "<|endoftext|>", "<|im_start|>user\nhi<|im_end|>", "<|im_start|><|im_end|>",
        "<s>x</s>", "<s> x </s>", "<unk>", "<|begin_of_text|>Hi<|end_of_text|>",
        " <|endoftext|> ", "<|endoftext", "endoftext|>",
        "!!!\n\n", "?.\r\n", "...\n", ";\n\n\n", " !!\n", "--\r\n\r\n", "()\n)",
        "𝔘𝔫𝔦𝔠𝔬𝔡𝔢", "🦙", "🦙🦙 llama", "𠀀𠀁", "\U0010FFFD", "a😀b", "😶\u200d🌫️",
        "e\u0301 \u00e9", "A\u030a", "Ѐ vs Е\u0300", "▁a▁▁b", "ǅ", "İ", "ß",
        "Привет мир 123", "中文字符测试", "龘", "한", "tokenizer archetype Llama ignore_merges merges",
        " tokenizer", " tokenizers", "the tokenizer's", " Llama-3 Llama", "ignore_merges=true", " merges merged",
    ]
    pieces = ["Hello", " world", "   ", "I'M", " they'Re", "\n\n", "\t", "1234567", " 3.14159",
              " x1y22z333", " 'hello'", " rock 'n' roll", "<|endoftext|>", "<|im_start|>user\n",
              "hi", "<|im_end|>", "<s>", "</s>", "!!!\n\n", "?.\r\n", " 🦙", "𝔘𝔫𝔦", " 𠀀",
              " Привет", " 中文", " café", " e\u0301", " don'T", "  \n", "\n\n  \t\nfoo", " tokenizer"]
    mix, i = "", 0
    while len(mix) < 2000:
        mix += pieces[i % len(pieces)] + (" " if i % 3 == 0 else "")
        i += 1
    s.append(mix[:2000])
    return s


def test_strings(repo, llama_inp):
    out = []
    for name in ["smollm2", "gemma3"]:
        out.extend(c["text"] for c in fixture_cases(repo, name))
    out.extend(hard_strings())
    out.extend(read_llama_inp(llama_inp))
    seen, uniq = set(), []
    for s in out:
        if s not in seen:
            seen.add(s)
            uniq.append(s)
    return uniq


def byte_level_tokenizer(lines, vocab_size, pre_tokenizer, normalizer=None, ignore_merges=False):
    tok = Tokenizer(models.BPE(ignore_merges=ignore_merges))
    if normalizer is not None:
        tok.normalizer = normalizer
    tok.pre_tokenizer = pre_tokenizer
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, min_frequency=2, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), special_tokens=[])
    tok.train_from_iterator(lines, trainer=trainer)
    return tok


def make_gpt2(lines):
    tok = byte_level_tokenizer(lines, 800, pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True))
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    # GPT-2's own file marks <|endoftext|> normalized=true (it has no normalizer, so it is moot).
    tok.add_special_tokens([AddedToken("<|endoftext|>", special=True, normalized=True)])
    return json.loads(tok.to_str()), {}


def make_llama3(lines):
    pre = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(LLAMA3_PATTERN), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=True, use_regex=False)])
    tok = byte_level_tokenizer(lines, 900, pre, ignore_merges=True)
    d = json.loads(tok.to_str())
    notes = {}
    if d["model"].get("ignore_merges") is not True:
        notes["ignore_merges"] = "set to true by hand in the JSON (the trainer dropped it)"
        d["model"]["ignore_merges"] = True
    # Whole words in the vocabulary that the merges do not build: with ignore_merges they are one
    # token, without it several.
    byte_enc = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    shortcuts = []
    for w in SHORTCUT_WORDS:
        piece = "".join(p for p, _ in byte_enc.pre_tokenize_str(w))
        if piece not in d["model"]["vocab"]:
            d["model"]["vocab"][piece] = len(d["model"]["vocab"])
            shortcuts.append(piece)
    notes["shortcut_tokens"] = {p: d["model"]["vocab"][p] for p in shortcuts}
    tok = Tokenizer.from_str(json.dumps(d))
    tok.add_special_tokens([AddedToken("<|begin_of_text|>", special=True, normalized=False),
                            AddedToken("<|end_of_text|>", special=True, normalized=False)])
    bos = tok.token_to_id("<|begin_of_text|>")
    tok.post_processor = processors.TemplateProcessing(
        single="<|begin_of_text|> $A", pair="<|begin_of_text|>:0 $A:0 <|begin_of_text|>:1 $B:1",
        special_tokens=[("<|begin_of_text|>", bos)])
    return json.loads(tok.to_str()), notes


def make_qwen2(lines):
    pre = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(QWEN2_PATTERN), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=False, use_regex=False)])
    tok = byte_level_tokenizer(lines, 900, pre, normalizer=normalizers.NFC())
    tok.post_processor = processors.ByteLevel(add_prefix_space=False, trim_offsets=False, use_regex=False)
    tok.add_special_tokens([AddedToken(t, special=True, normalized=False)
                            for t in ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]])
    return json.loads(tok.to_str()), {}


def make_smollm(lines):
    pre = pre_tokenizers.Sequence([
        pre_tokenizers.Digits(individual_digits=True),
        pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=True, use_regex=True)])
    tok = byte_level_tokenizer(lines, 700, pre)
    tok.add_special_tokens([AddedToken(t, special=True, normalized=False)
                            for t in ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]])
    return json.loads(tok.to_str()), {}


def make_spm_bpe(lines):
    # Train on the normalised text; split before each "▁" for training only (as SentencePiece
    # never merges across a word start), and keep the alphabet small so that byte fallback is used.
    # Control characters (newline, tab, CR) are left out of the alphabet, as in Llama 2's vocabulary:
    # they encode to <0x0A>, <0x09>, <0x0D>.
    pieces = [p for l in lines for p in re.split(r"[\n\r\t]+", l) if p.strip()]
    norm = ["\u2581" + p.replace(" ", "\u2581") for p in pieces]
    # The alphabet: the 120 most frequent characters, ties by code point. (BpeTrainer's own
    # limit_alphabet breaks ties in hash order, so its output changes from run to run.) Training
    # text is cut at every other character.
    counts = {}
    for p in norm:
        for ch in p:
            counts[ch] = counts.get(ch, 0) + 1
    alphabet = set(sorted(counts, key=lambda ch: (-counts[ch], ord(ch)))[:120])
    train = []
    for p in norm:
        seg = ""
        for ch in p:
            if ch in alphabet:
                seg += ch
            elif seg:
                train.append(seg)
                seg = ""
        if seg:
            train.append(seg)
    t = Tokenizer(models.BPE())
    t.pre_tokenizer = pre_tokenizers.Split("\u2581", behavior="merged_with_next")
    trainer = trainers.BpeTrainer(vocab_size=1000 - 259, min_frequency=2, show_progress=False,
                                  special_tokens=[])
    t.train_from_iterator(train, trainer=trainer)
    learned = json.loads(t.to_str())["model"]
    vocab = {"<unk>": 0, "<s>": 1, "</s>": 2}
    for b in range(256):
        vocab["<0x%02X>" % b] = 3 + b
    for piece, _ in sorted(learned["vocab"].items(), key=lambda kv: kv[1]):
        if piece not in vocab:
            vocab[piece] = len(vocab)
    merges = [tuple(m) if isinstance(m, list) else tuple(m.split(" ")) for m in learned["merges"]]
    tok = Tokenizer(models.BPE(vocab, merges, unk_token="<unk>", fuse_unk=True, byte_fallback=True,
                               ignore_merges=False))
    tok.normalizer = normalizers.Sequence([normalizers.Prepend("\u2581"), normalizers.Replace(" ", "\u2581")])
    tok.pre_tokenizer = None
    tok.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in ["<unk>", "<s>", "</s>"]])
    tok.post_processor = processors.TemplateProcessing(
        single="<s> $A", pair="<s>:0 $A:0 <s>:1 $B:1", special_tokens=[("<s>", 1)])
    tok.decoder = decoders.Sequence([decoders.Replace("\u2581", " "), decoders.ByteFallback(), decoders.Fuse(),
                                     decoders.Strip(" ", 1, 0)])
    return json.loads(tok.to_str()), {"layout": "vocabulary laid out by this script (trainer cannot)"}


def make_spm_metaspace(lines):
    # The same model as spm_bpe in the newer layout (Mistral v0.3, Llama 2 files re-saved by
    # recent tokenizers): no normaliser, a Metaspace pre-tokenizer with prepend_scheme "first"
    # (the "▁" prefix only on the text at the very start, not after an added token), split off.
    d, _ = make_spm_bpe(lines)
    tok = Tokenizer.from_str(json.dumps(d))
    tok.normalizer = None
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="\u2581", prepend_scheme="first", split=False)
    tok.decoder = decoders.Metaspace(replacement="\u2581", prepend_scheme="first", split=False)
    return json.loads(tok.to_str()), {"layout": "spm_bpe's model with Metaspace(prepend_scheme=first, split=False)"}


def make_unigram(lines):
    # A Unigram model (UnigramTrainer: EM over a seed vocabulary, then pruning) in the layout of
    # tokenizers' SentencePiece-unigram files (T5, ALBERT, XLM-R re-saved): NFC normaliser (the
    # real files' "Precompiled" charsmap is not supported), Metaspace(always, split=True), <unk> <s>
    # </s> first, TemplateProcessing "$A </s>" as T5 (no BOS). Without byte_fallback, characters
    # outside the trained alphabet (emoji, most CJK) are <unk>, runs of them fused into one.
    tok = Tokenizer(models.Unigram())
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="\u2581", prepend_scheme="always", split=True)
    tok.decoder = decoders.Metaspace(replacement="\u2581", prepend_scheme="always", split=True)
    trainer = trainers.UnigramTrainer(vocab_size=900, special_tokens=["<unk>", "<s>", "</s>"], unk_token="<unk>",
                                      max_piece_length=12, show_progress=False)
    tok.train_from_iterator(lines, trainer)
    tok.post_processor = processors.TemplateProcessing(single="$A </s>", pair="$A </s> $B </s>",
                                                       special_tokens=[("</s>", 2)])
    d = json.loads(tok.to_str())
    assert d["model"]["unk_id"] == 0 and not d["model"].get("byte_fallback", False)
    return d, {"layout": "UnigramTrainer(vocab_size=900, max_piece_length=12); NFC; Metaspace(always, split=True)"}


def make_unigram_bytes(lines):
    # The same pieces with byte fallback: <0x00>..<0xFF> appended to the vocabulary (score -30,
    # below every learned piece), byte_fallback = true, Metaspace(prepend_scheme "first",
    # split=False: the whole text one word), no normaliser, "<s> $A </s>". Unknown characters
    # (fused runs) become one <0x..> token per UTF-8 byte.
    d, _ = make_unigram(lines)
    d["model"]["vocab"] += [[f"<0x{b:02X}>", -30.0] for b in range(256)]
    d["model"]["byte_fallback"] = True
    tok = Tokenizer.from_str(json.dumps(d))
    tok.normalizer = None
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="\u2581", prepend_scheme="first", split=False)
    tok.decoder = decoders.Sequence([decoders.Metaspace(replacement="\u2581", prepend_scheme="first", split=False),
                                     decoders.ByteFallback()])
    tok.post_processor = processors.TemplateProcessing(single="<s> $A </s>", pair="<s> $A </s> $B </s>",
                                                       special_tokens=[("<s>", 1), ("</s>", 2)])
    return json.loads(tok.to_str()), {"layout": "make_unigram's pieces + <0x00>..<0xFF> (score -30), byte_fallback, "
                                                "Metaspace(first, split=False)"}


def dump_json(obj, depth=0):
    """Indented JSON that keeps each vocabulary entry, each merge and each case on one line, so
    that the files stay small (the whole of tests/data/tokenizer/hf/ is kept under 500 KB) and
    diffable. Any JSON reader sees the same value as json.dumps would give."""
    pad, pad1 = " " * depth, " " * (depth + 1)

    def flat(v):
        return json.dumps(v, ensure_ascii=False, separators=(",", ":"))

    def simple(v):
        return not isinstance(v, (dict, list)) or (
            isinstance(v, list) and all(not isinstance(x, (dict, list)) for x in v))

    if isinstance(obj, dict):
        if not obj:
            return "{}"
        items = [f"{pad1}{json.dumps(k, ensure_ascii=False)}: {dump_json(v, depth + 1)}" for k, v in obj.items()]
        return "{\n" + ",\n".join(items) + "\n" + pad + "}"
    if isinstance(obj, list):
        if simple(obj) and len(flat(obj)) <= 100:
            return flat(obj)
        if all(simple(x) or (isinstance(x, dict) and all(simple(v) for v in x.values())) for x in obj):
            return "[\n" + ",\n".join(pad1 + flat(x) for x in obj) + "\n" + pad + "]"
        return "[\n" + ",\n".join(pad1 + dump_json(x, depth + 1) for x in obj) + "\n" + pad + "]"
    return json.dumps(obj, ensure_ascii=False)


MAKERS = [("gpt2", make_gpt2), ("llama3", make_llama3), ("qwen2", make_qwen2), ("smollm", make_smollm),
          ("spm_bpe", make_spm_bpe), ("spm_metaspace", make_spm_metaspace), ("unigram", make_unigram),
          ("unigram_bytes", make_unigram_bytes)]


def check_spm(tok):
    for s in ["🦙", "龘", "\n", "\t"]:
        toks = tok.encode(s, add_special_tokens=False).tokens
        byte_toks = [t for t in toks if t.startswith("<0x") and t.endswith(">")]
        assert len(byte_toks) == len(s.encode("utf-8")), (s, toks)
    assert tok.token_to_id("<0x00>") == 3 and tok.token_to_id("<0xFF>") == 258
    assert [tok.token_to_id(t) for t in ["<unk>", "<s>", "</s>"]] == [0, 1, 2]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=os.path.join(REPO, "tests", "data", "tokenizer", "hf"))
    ap.add_argument("--llama-inp", default=LLAMA_INP)
    ap.add_argument("--only", default="", help="comma-separated names to (re)make (default: all)")
    args = ap.parse_args()
    only = set(filter(None, args.only.split(",")))

    lines = corpus_lines(REPO)
    strings = test_strings(REPO, args.llama_inp)
    versions = {"python": platform.python_version(), "tokenizers": tokenizers.__version__}
    print(f"corpus: {len(lines)} lines, {sum(len(l) for l in lines)} chars; {len(strings)} test strings")
    total = 0
    for name, make in MAKERS:
        if only and name not in only:
            continue
        d, notes = make(lines)
        text = dump_json(d) + "\n"
        assert json.loads(text) == d
        tok = Tokenizer.from_str(text)  # must load as written
        if name.startswith("spm_"):
            check_spm(tok)
        outdir = os.path.join(args.out, name)
        os.makedirs(outdir, exist_ok=True)
        tpath = os.path.join(outdir, "tokenizer.json")
        with open(tpath, "w", encoding="utf-8", newline="\n") as f:
            f.write(text)
        tok = Tokenizer.from_file(tpath)
        cases = []
        changed_by_ignore_merges = 0
        if name == "llama3":
            d2 = json.loads(text)
            d2["model"]["ignore_merges"] = False
            tok_nm = Tokenizer.from_str(json.dumps(d2))
        for s in strings:
            ids = tok.encode(s, add_special_tokens=False).ids
            case = {"text": s, "ids": ids}
            special = tok.encode(s, add_special_tokens=True).ids
            if special != ids:  # left out where the post-processor adds nothing (saves ~150 KB)
                case["ids_special"] = special
            cases.append(case)
            if name == "llama3" and tok_nm.encode(s, add_special_tokens=False).ids != ids:
                changed_by_ignore_merges += 1
        if name == "llama3":
            notes["cases_changed_by_ignore_merges"] = changed_by_ignore_merges
        out = {
            "tokenizer": name,
            "reference": f"Hugging Face tokenizers {tokenizers.__version__}, tokenizers.Tokenizer.from_file",
            "versions": versions,
            "tokenizer_json_sha256": hashlib.sha256(text.encode("utf-8")).hexdigest(),
            "vocab_size": tok.get_vocab_size(with_added_tokens=True),
            "notes": notes,
            "cases": cases,
        }
        cpath = os.path.join(outdir, "cases.json")
        with open(cpath, "w", encoding="utf-8", newline="\n") as f:
            f.write(dump_json(out) + "\n")
        st, sc = os.path.getsize(tpath), os.path.getsize(cpath)
        total += st + sc
        print(f"{name:8s} vocab {tok.get_vocab_size(with_added_tokens=True):5d} "
              f"(model {tok.get_vocab_size(with_added_tokens=False)}), merges {len(d['model'].get('merges', [])):4d}, "
              f"tokenizer.json {st:6d} B, cases.json {sc:6d} B, {len(cases)} cases"
              + (f", notes {notes}" if notes else ""))
    print(f"total {total} B under {args.out}")


if __name__ == "__main__":
    sys.exit(main())
