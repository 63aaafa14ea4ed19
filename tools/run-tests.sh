#!/usr/bin/env bash
# The README's test command: configure, build and run every test suite, then
# print one closing line "N passed, N failed" summed over every meson test run.
# meson's exit status is not reliable (failures modulo 256, 125 on build error),
# so the counts come from its summaries.
set -uo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
JOBS=${JOBS:-$(nproc)}

total_ok=0; total_fail=0
# run_suite DIR [meson test args...]: adds its summary to the totals
run_suite() {
  local dir=$1; shift
  local log="$dir/test-output.txt"
  meson test -C "$dir" --print-errorlogs --num-processes "$JOBS" "$@" 2>&1 | tee "$log"
  local counts
  counts=$(awk '/^Ok:/{ok=$2; s=1} /^Expected Fail:/{xf=$3} /^Fail:/{f=$2} /^Unexpected Pass:/{up=$3} /^Timeout:/{to=$2}
    END{ if(!s){print "0 1"} else {printf "%d %d\n", ok+xf, f+up+to} }' "$log")
  total_ok=$((total_ok + ${counts% *})); total_fail=$((total_fail + ${counts#* }))
}

if [ ! -f "$BUILD/build.ninja" ]; then
  meson setup "$BUILD" --buildtype=release || { echo "0 passed, 1 failed"; exit 1; }
fi
if ! ninja -C "$BUILD" -j "$JOBS"; then
  echo "build failed"; echo "0 passed, 1 failed"; exit 1
fi
run_suite "$BUILD"

# The fixture suite must have run when ../shared/fixtures exists.
if [ -d ../shared/fixtures ]; then
  n_fix=$(meson test -C "$BUILD" --list 2>/dev/null | grep -c '^archetype:fixtures / ' || true)
  if [ "$n_fix" -eq 0 ] && [ "${ARCHETYPE_REQUIRE_FIXTURES:-0}" = 1 ]; then
    echo "fixtures folder present but the fixtures suite has no test"; total_fail=$((total_fail + 1))
  fi
fi

echo "${total_ok} passed, ${total_fail} failed"
[ "$total_fail" -eq 0 ]
