#!/usr/bin/env bash
# The archetype program's choice of instruction-set level (docs/kernels.md):
#   test_isa_cli.sh PROGRAM EXPECTED BUILT RUNNABLE
# PROGRAM may be a command with arguments (qemu-x86_64 -cpu Haswell-v2 .../archetype).
# EXPECTED: the level `archetype version` must report without ARCHETYPE_ISA;
# BUILT / RUNNABLE: comma-separated levels of the build, and those this CPU runs.
set -u
program=$1; expected=$2; IFS=, read -ra built <<<"$3"; IFS=, read -ra runnable <<<"$4"
tmp=$(mktemp -d /tmp/archetype-isa-test.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails+1)); }
contains() { local x; for x in "${@:2}"; do [ "$x" = "$1" ] && return 0; done; return 1; }

# version_is LEVEL [ENV...]: `archetype version` exits 0 and reports LEVEL
version_is() {
  local want=$1; shift
  env "$@" $program version >"$tmp/out" 2>"$tmp/err"; local rc=$?
  if [ $rc -ne 0 ]; then fail "$* version exited $rc: $(cat "$tmp/err")"; return; fi
  grep -qx "isa: $want" "$tmp/out" || fail "$* version: expected 'isa: $want', got: $(grep '^isa' "$tmp/out")"
  echo "ok: ${*:-(no ARCHETYPE_ISA)} -> $(grep '^isa:' "$tmp/out")"
}
# refused VALUE REGEX: ARCHETYPE_ISA=VALUE makes every command exit 2 with one stderr line matching REGEX
refused() {
  ARCHETYPE_ISA=$1 $program version >"$tmp/out" 2>"$tmp/err"; local rc=$?
  [ $rc -eq 2 ] || fail "ARCHETYPE_ISA=$1: exit status $rc, expected 2"
  [ "$(wc -l <"$tmp/err")" -eq 1 ] || fail "ARCHETYPE_ISA=$1: $(wc -l <"$tmp/err") lines on stderr"
  grep -Eq -- "$2" "$tmp/err" || fail "ARCHETYPE_ISA=$1: stderr '$(cat "$tmp/err")' does not match '$2'"
  [ -s "$tmp/out" ] && fail "ARCHETYPE_ISA=$1: the command ran anyway"
  echo "ok: ARCHETYPE_ISA=$1 refused: $(cat "$tmp/err")"
}

version_is "$expected"
version_is "$expected" ARCHETYPE_ISA=        # empty: automatic
for l in "${runnable[@]}"; do version_is "$l" ARCHETYPE_ISA="$l"; done
refused bogus "ARCHETYPE_ISA='bogus' is not an instruction-set level"
refused AVX2 "ARCHETYPE_ISA='AVX2' is not an instruction-set level"
for l in generic avx2 avxvnni avx512 neon neon_dotprod; do
  if ! contains "$l" "${built[@]}"; then
    refused "$l" "ARCHETYPE_ISA=$l: this build has no $l kernels \\(it has: "
  elif ! contains "$l" "${runnable[@]}"; then
    refused "$l" "ARCHETYPE_ISA=$l: this CPU cannot run it \\(it lacks "
  fi
done
# the level reaches the command: a forced level still runs a real command
ARCHETYPE_ISA=${runnable[0]} $program mask --kind causal --n 3 >"$tmp/out" 2>"$tmp/err" ||
  fail "ARCHETYPE_ISA=${runnable[0]} mask failed: $(cat "$tmp/err")"

[ $fails -eq 0 ] && echo "all isa checks passed" || { echo "$fails failure(s)"; exit 1; }
