#!/usr/bin/env bash
# Runs the built `archetype inspect` / `archetype quantize` like a user would.
#   test_tools.sh EXE crafted             hostile and odd inputs: status 1..63, one stderr line
#   test_tools.sh EXE fixtures DIR        every fixture GGUF inspects; quantize + inspect
set -u
# $1: the program, or a command that runs it (a cross build: "qemu-aarch64 path"), split on blanks
read -r -a exe <<<"$1"; mode=$2; fixtures=${3:-}
tmp=$(mktemp -d /tmp/archetype-tools-test.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails+1)); }

# expect_error ARGS...: non-zero status below 64 (no signal, no hang), exactly one line on stderr
expect_error() {
  timeout 60 "${exe[@]}" "$@" >"$tmp/out" 2>"$tmp/err"; local rc=$?
  local lines; lines=$(wc -l <"$tmp/err")
  if [ $rc -eq 0 ] || [ $rc -ge 64 ]; then fail "'$*' exited $rc"; fi
  if [ "$lines" -ne 1 ]; then fail "'$*' wrote $lines lines on stderr:"; cat "$tmp/err"; fi
  echo "ok ($rc): $* -> $(cat "$tmp/err")"
}
# expect_ok ARGS...: status 0; output in $tmp/out
expect_ok() {
  timeout 120 "${exe[@]}" "$@" >"$tmp/out" 2>"$tmp/err"; local rc=$?
  if [ $rc -ne 0 ]; then fail "'$*' exited $rc: $(cat "$tmp/err")"; else echo "ok: $*"; fi
}
expect_line() { # REGEX: a line of the last output matches
  grep -Eq -- "$1" "$tmp/out" || fail "no line matching '$1' in the output of the last command"
}

if [ "$mode" = crafted ]; then
  # a minimal valid file: v3, no tensors, general.architecture = "x"
  printf 'GGUF\x03\0\0\0\0\0\0\0\0\0\0\0\x01\0\0\0\0\0\0\0\x14\0\0\0\0\0\0\0general.architecture\x08\0\0\0\x01\0\0\0\0\0\0\0x' >"$tmp/ok.gguf"
  expect_ok inspect "$tmp/ok.gguf"
  expect_line '^architecture: x$'
  expect_line '^tensors: 0'
  head -c 30 "$tmp/ok.gguf" >"$tmp/trunc.gguf"
  expect_error inspect "$tmp/trunc.gguf"
  printf 'GGUF\x03\0\0\0\xff\xff\xff\xff\xff\xff\xff\xff\0\0\0\0\0\0\0\0' >"$tmp/count.gguf"
  expect_error inspect "$tmp/count.gguf"
  printf 'GGUF\x03\0\0\0\0\0\0\0\0\0\0\0\x01\0\0\0\0\0\0\0\x01\0\0\0\0\0\0\0k\x09\0\0\0\x09\0\0\0\x01\0\0\0\0\0\0\0' >"$tmp/nest.gguf"
  expect_error inspect "$tmp/nest.gguf"
  head -c 4096 /dev/urandom >"$tmp/random.bin"
  expect_error inspect "$tmp/random.bin"
  : >"$tmp/empty.gguf"
  expect_error inspect "$tmp/empty.gguf"
  printf '\x10\0\0\0\0\0\0\0{"a":1}' >"$tmp/st.safetensors"
  expect_error inspect "$tmp/st.safetensors"   # until the safetensors hook is filled in
  expect_error inspect /nonexistent/model.gguf
  expect_error inspect /
  expect_error inspect
  expect_error inspect a b
  expect_error quantize "$tmp/ok.gguf" "$tmp/q.gguf" IQ2_XS
  expect_error quantize "$tmp/trunc.gguf" "$tmp/q.gguf" Q8_0
  expect_error quantize "$tmp/ok.gguf" "$tmp/ok.gguf" Q8_0
  expect_error quantize "$tmp/ok.gguf"
  expect_ok quantize "$tmp/ok.gguf" "$tmp/q.gguf" Q8_0
  expect_ok inspect "$tmp/q.gguf"
  expect_line 'general.file_type +UINT32 +7$'
  expect_ok inspect --help
elif [ "$mode" = fixtures ]; then
  while IFS= read -r -d '' f; do
    expect_ok inspect "$f"
    expect_line '^tensors: [0-9]+'
  done < <(find "$fixtures" -name '*.gguf' -print0)
  r="$fixtures/rwkv/tiny-rwkv-6v0-1m-F32.gguf"
  expect_ok inspect "$r"
  expect_line '^architecture: rwkv6$'
  expect_line '^tensors: 294,'
  expect_line 'tokenizer\.ggml\.tokens +ARRAY\[STRING\] +\[.*\] \(256 items\)$'
  expect_line ' blk\.0\.time_mix_w2\.weight +F32 +\[32, 64, 5\] '
  expect_line ' blk\.0\.time_mix_lerp_fused\.weight +F32 +\[64, 1, 1, 5\] '
  expect_line ' output\.weight +F32 +\[64, 256\] '
  expect_ok inspect "$fixtures/transformer/mellum-swa/model.gguf"
  expect_line 'sliding_window_pattern +ARRAY\[BOOL\] +\[true, true\]$'
  expect_line ' blk\.1\.ffn_down_exps\.weight +F32 +\[96, 64, 1\] '
  expect_ok quantize "$r" "$tmp/q4.gguf" Q4_0 --quiet
  expect_ok inspect "$tmp/q4.gguf"
  expect_line ' blk\.11\.channel_mix_key\.weight +Q4_0 +\[64, 224\] '
  expect_line ' blk\.11\.time_mix_w1\.weight +F32 +\[64, 160\] '
  expect_line 'general.file_type +UINT32 +2$'
else
  fail "unknown mode $mode"
fi
echo "$fails failure(s)"
[ $fails -eq 0 ]
