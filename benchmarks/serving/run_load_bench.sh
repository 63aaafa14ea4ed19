#!/usr/bin/env bash
# The serving load benchmark (docs/serving.md): archetype serve and, with LLAMA_SERVER set
# (path of a llama-server built from the same llama.cpp tree), llama-server on the same
# model with the same threads and parallel sequences (its -c = ctx x N: its context is the
# total over its sequences), each driven by load_bench.py at each client count N (one
# server start per N). Loopback only; bounded by load_bench.py's counts and time limit.
# usage: run_load_bench.sh ARCHETYPE MODEL.gguf [CLIENTS=1,8,32,64] [CTX=1200] [THREADS=2]
set -u
exe=$1; model=$2; clients=${3:-1,8,32,64}; ctx=${4:-1200}; threads=${5:-2}
here=$(dirname "$0")
id=$(basename "$model")
port=${PORT:-18777}
wait_up() { for _ in $(seq 600); do curl -sf "http://127.0.0.1:$port/health" >/dev/null && return 0; sleep 0.1; done; return 1; }
run() { # LABEL N COMMAND...
  local label=$1 n=$2; shift 2
  "$@" >/tmp/load_bench_server.log 2>&1 &
  local pid=$!
  wait_up || { echo "$label did not start"; cat /tmp/load_bench_server.log; kill $pid; return 1; }
  python3 "$here/load_bench.py" --port "$port" --model "$id" --clients "$n" --requests "${REQUESTS:-1}" \
    --label "$label" | tail -n +2
  kill -TERM $pid; wait $pid
}
echo "model $id, ctx $ctx per sequence, $threads threads, f16 KV cache, prompts 100-1000 tokens, 128 generated"
python3 "$here/load_bench.py" --help >/dev/null
printf "%12s %3s %4s %7s %7s %8s %9s %9s %8s %8s %10s\n" server N req tokens "wall s" tok/s "TTFT p50" "TTFT p99" \
  "ITL p50" "ITL p99" "client CPU"
for n in ${clients//,/ }; do
  run archetype "$n" "$exe" serve --model "$model" --port "$port" --threads "$threads" --parallel "$n" --ctx "$ctx" \
    --kv f16 --queue 64
  if [ -n "${LLAMA_SERVER:-}" ]; then
    # OpenMP threads that spin on a shared, loaded machine starve: passive waits (measured:
    # 2.2x faster at N = 1 there); on an idle machine spinning is faster
    # (LLAMA_OMP_WAIT_POLICY=active: docs/serving.md's idle table)
    run llama-server "$n" env OMP_WAIT_POLICY="${LLAMA_OMP_WAIT_POLICY:-passive}" "$LLAMA_SERVER" -m "$model" --port "$port" -t "$threads" -np "$n" -c $((ctx * n)) \
      --no-webui
  fi
done
