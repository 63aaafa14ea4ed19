#!/usr/bin/env bash
# The before/after dump check of a refactoring (issue 37): two builds of the archetype
# program, OLD and NEW, run `logits` (every registered decoder, RWKV) and `embed`
# (encoders) on every model file of tests/data and ../shared/fixtures, in the three
# feedings, and the outputs must be equal byte for byte. Prints one line per run and
# ends with "N identical, N differ, N skipped" (skipped: a file neither program loads,
# e.g. a tokenizer-only vocabulary). Exit status 1 when any output differs.
#   bash tools/compare-logits.sh OLD/archetype NEW/archetype [extra model files...]
set -uo pipefail
OLD=$1 NEW=$2; shift 2
cd "$(dirname "$0")/.."
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
same=0 differ=0 skipped=0
IDS="3,17,42,99,5,64,1,7,7,12,100,2,9"
models=$(find tests/data/zoo tests/data/transformer ../shared/fixtures/transformer ../shared/fixtures/rwkv \
           -name '*.gguf' -o -name 'tiny-rwkv-*.bin' 2>/dev/null | sort)
for m in $models "$@"; do
  for mode in batch sequential chunked; do
    if "$OLD" logits --model "$m" --ids "$IDS" --out "$T/old.bin" --mode "$mode" --threads 2 >/dev/null 2>"$T/old.err"; then
      if ! "$NEW" logits --model "$m" --ids "$IDS" --out "$T/new.bin" --mode "$mode" --threads 2 >/dev/null 2>"$T/new.err"; then
        echo "DIFFER  $m $mode: the new program refuses it: $(tail -1 "$T/new.err")"; differ=$((differ + 1)); continue
      fi
      if cmp -s "$T/old.bin" "$T/new.bin"; then same=$((same + 1)); echo "same    $m $mode"
      else differ=$((differ + 1)); echo "DIFFER  $m $mode"; fi
    elif "$OLD" embed --model "$m" --ids "$IDS" --pooling none --out "$T/old.bin" >/dev/null 2>&1; then
      [ "$mode" = batch ] || continue
      if "$NEW" embed --model "$m" --ids "$IDS" --pooling none --out "$T/new.bin" >/dev/null 2>"$T/new.err" &&
         cmp -s "$T/old.bin" "$T/new.bin"; then same=$((same + 1)); echo "same    $m embed"
      else differ=$((differ + 1)); echo "DIFFER  $m embed $(tail -1 "$T/new.err")"; fi
    else
      [ "$mode" = batch ] && { skipped=$((skipped + 1)); echo "skipped $m: $(tail -1 "$T/old.err")"; }
    fi
  done
done
echo "$same identical, $differ differ, $skipped skipped"
[ "$differ" -eq 0 ]
