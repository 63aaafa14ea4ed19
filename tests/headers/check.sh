#!/usr/bin/env bash
# Header self-containment: every public header compiles alone (it includes
# what it uses). Lists the headers at test time, so new ones are covered.
# usage: check.sh CXX SOURCE_ROOT [flags...]
set -u
cxx=$1; root=$2; shift 2
# --no-mpi: this build has no Open MPI, leave out the headers that include <mpi.h>
skip=""; if [ "${1:-}" = "--no-mpi" ]; then shift; skip=mpi; fi
cd "$root/include" || exit 1
headers=$(find archetype -name '*.hpp' | sort)
[ -n "$skip" ] && headers=$(grep -L '#include <mpi.h>' $headers)
flags=(-std=c++20 -fsyntax-only -Wall -Wextra -Wpedantic -Werror -Wno-maybe-uninitialized -Wno-uninitialized -march=native -DXTENSOR_USE_XSIMD -DXTENSOR_DEFAULT_ALIGNMENT=64 -I. "$@")
fail=0; n=0
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
export cxx tmp
printf '%s\n' $headers | xargs -P "$(nproc)" -I{} bash -c '
  h={}; f="$tmp/$(echo "$h" | tr / _).cpp"
  printf "#include \"%s\"\n#include \"%s\"\n" "$h" "$h" > "$f"   # twice: include guards work
  if ! out=$("$cxx" '"${flags[*]}"' "$f" 2>&1); then echo "NOT SELF-CONTAINED: $h"; echo "$out" | head -15; exit 1; fi' || fail=1
n=$(printf '%s\n' $headers | wc -l)
[ $fail -eq 0 ] && echo "all $n headers compile alone" || { echo "some headers do not compile alone"; exit 1; }
