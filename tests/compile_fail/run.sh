#!/usr/bin/env bash
# Compile-fail test: compiles CASE.cpp and checks that it fails with the text
# given on its first line ("// expect: TEXT"), or succeeds ("// expect-ok").
# Also checks that the error is short: one static_assert, not a cascade.
# usage: run.sh CXX INCLUDE_DIR CASE.cpp [extra flags...]
set -u
cxx=$1; inc=$2; src=$3; shift 3
first=$(head -n1 "$src")
out=$("$cxx" -std=c++20 -fsyntax-only -I"$inc" "$@" "$src" 2>&1); rc=$?
case "$first" in
  "// expect-ok"*)
    if [ $rc -ne 0 ]; then echo "FAIL: expected $src to compile:"; echo "$out" | head -20; exit 1; fi
    echo "ok: compiles"; exit 0;;
  "// expect: "*)
    want=${first#"// expect: "}
    if [ $rc -eq 0 ]; then echo "FAIL: $src compiled but should fail with: $want"; exit 1; fi
    if ! grep -qF -- "$want" <<<"$out"; then
      echo "FAIL: $src failed without the expected message: $want"; echo "$out" | head -30; exit 1; fi
    n=$(grep -c "error:" <<<"$out")
    echo "ok: fails with the expected message ($n error lines)"
    if [ "$n" -gt 3 ]; then echo "FAIL: $n errors: the message should not cascade"; echo "$out" | grep "error:"; exit 1; fi
    exit 0;;
  *) echo "FAIL: $src has no // expect line"; exit 1;;
esac
