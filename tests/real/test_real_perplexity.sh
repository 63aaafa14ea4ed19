#!/usr/bin/env bash
# `archetype perplexity` against llama-perplexity on the same file and text
# (tests/data/real/llama_perplexity.txt): same chunk count, |PPL / PPL_llama - 1| <= 1 %,
# with the default batches (mixed: int8 activations except the FFN down projection's;
# kernels/batch_activations.hpp) and with --activations int8 (llama.cpp's rounding). The
# exact mode is checked against the float64 model by test_real_exact.
#   test_real_perplexity.sh ARCHETYPE DATA_FILE   (ARCHETYPE_MODELS_DIR set)
set -euo pipefail
prog=$1 data=$2
text=/usr/share/common-licenses/GPL-3
want_sha=$(awk '$1 == "text_sha256" {print $2}' "$data")
[ -f "$text" ] || { echo "FAIL: $text is missing (Debian package base-files)"; exit 1; }
got_sha=$(sha256sum "$text" | cut -d' ' -f1)
[ "$got_sha" = "$want_sha" ] || { echo "FAIL: $text has sha256 $got_sha, the stored values are for $want_sha"; exit 1; }
fail=0
while read -r name rel chunks ppl_llama err_llama secs_llama; do
  case $name in ''|'#'*|text_sha256) continue ;; esac
  model=$ARCHETYPE_MODELS_DIR/$rel
  [ -f "$model" ] || { echo "FAIL: $model is missing"; fail=1; continue; }
  for activations in default int8; do
  t0=$(date +%s.%N)
  out=$("$prog" perplexity --model "$model" --file "$text" --ctx 512 --threads 2 $([ $activations = default ] || echo --activations $activations) 2>/dev/null)
  t1=$(date +%s.%N)
  echo "$name ($activations): $out" | head -2
  ppl=$(sed -n 's/^Final estimate: PPL = \([0-9.]*\) +\/- .*/\1/p' <<<"$out")
  n=$(sed -n 's/^\([0-9]*\) chunks,.*/\1/p' <<<"$out")
  [ -n "$ppl" ] || { echo "FAIL: $name ($activations): no 'Final estimate' line"; fail=1; continue; }
  [ "$n" = "$chunks" ] || { echo "FAIL: $name: $n chunks, llama-perplexity scored $chunks"; fail=1; }
  awk -v a="$ppl" -v b="$ppl_llama" -v n="$name ($activations)" -v t0="$t0" -v t1="$t1" -v sl="$secs_llama" 'BEGIN {
    s = t1 - t0; r = a / b; d = r - 1; if (d < 0) d = -d
    printf "%s: PPL %s vs llama-perplexity %s: ratio %.5f (|ratio - 1| = %.2f %%, bound 1 %%); %.1f s (llama-perplexity %s s when recorded)\n", n, a, b, r, 100 * d, s, sl
    exit (d <= 0.01) ? 0 : 1 }' || { echo "FAIL: $name ($activations): PPL off by more than 1 %"; fail=1; }
  done
done < "$data"
exit $fail
