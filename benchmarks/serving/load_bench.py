#!/usr/bin/env python3
"""Load benchmark of an OpenAI-compatible server (archetype serve, llama-server): N concurrent
streaming clients over loopback, each sending R completion requests one after another.

A light asynchronous raw-HTTP/1.1 client (asyncio streams, no dependencies), the same for
every server; its own CPU share is reported (process time / wall time), so that a client
that saturates a core is seen. Prompts are token ids (the same lengths on every server),
lengths uniform in [--prompt-min, --prompt-max] from a seeded generator, --gen tokens each
with ignore_eos (both servers take it), greedy.

Reported per N: total generated tokens/s (tokens / wall time of the whole run), time to
first token p50/p99, inter-token latency p50/p99 (gaps between streamed chunks with text).
Bounded: R requests per client and --time-limit seconds in all; loopback only.

    load_bench.py --port 8080 --model ID --clients 1,8,32,64 [--requests 2] [--vocab-min 300 --vocab-max 40000]
"""
import argparse
import asyncio
import json
import random
import statistics
import sys
import time


def pct(xs, p):
    if not xs:
        return float("nan")
    xs = sorted(xs)
    k = min(len(xs) - 1, max(0, int(round(p / 100 * (len(xs) - 1)))))
    return xs[k]


async def one_request(port, body):
    """(ttft, [inter-token gaps], chunks with text) of one streamed completion."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    data = json.dumps(body).encode()
    writer.write(b"POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                 b"Connection: close\r\nContent-Length: " + str(len(data)).encode() + b"\r\n\r\n" + data)
    await writer.drain()
    t0 = time.perf_counter()
    status = await reader.readline()
    if b" 200 " not in status:
        rest = await reader.read()
        raise RuntimeError(f"HTTP {status!r}: {rest[:300]!r}")
    while (await reader.readline()) not in (b"\r\n", b""):
        pass
    ttft, last, gaps, chunks = None, None, [], 0
    buf = b""
    done = False
    while not done:
        block = await reader.read(65536)
        if not block:
            break
        buf += block
        # SSE events end with a blank line; chunked framing lines (hex sizes) are skipped
        while b"\n\n" in buf:
            event, buf = buf.split(b"\n\n", 1)
            for line in event.split(b"\n"):
                line = line.strip()
                if not line.startswith(b"data: "):
                    continue
                payload = line[6:]
                if payload == b"[DONE]":
                    done = True
                    break
                try:
                    j = json.loads(payload)
                except ValueError:
                    continue
                ch = j.get("choices") or []
                if ch and ch[0].get("text"):
                    now = time.perf_counter()
                    if ttft is None:
                        ttft = now - t0
                    else:
                        gaps.append(now - last)
                    last = now
                    chunks += 1
    writer.close()
    return ttft, gaps, chunks


async def client(port, model, prompts, gen, deadline, out):
    for p in prompts:
        if time.perf_counter() > deadline:
            return
        body = {"model": model, "prompt": p, "max_tokens": gen, "temperature": 0, "stream": True,
                "ignore_eos": True}
        out.append(await one_request(port, body))


async def run_level(port, model, n, requests, gen, lo, hi, vmin, vmax, limit, seed):
    rng = random.Random(seed * 1000 + n)
    work = [[[rng.randrange(vmin, vmax) for _ in range(rng.randint(lo, hi))] for _ in range(requests)]
            for _ in range(n)]
    results = []
    cpu0, t0 = time.process_time(), time.perf_counter()
    await asyncio.gather(*(client(port, model, w, gen, t0 + limit, results) for w in work))
    wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    ttfts = [r[0] for r in results if r[0] is not None]
    gaps = [g for r in results for g in r[1]]
    # one chunk per token for both servers with these prompts; the requested count otherwise
    tokens = sum(max(r[2], 0) for r in results)
    return {"clients": n, "requests": len(results), "tokens": tokens, "wall_s": wall,
            "tokens_per_s": tokens / wall, "ttft_p50": pct(ttfts, 50), "ttft_p99": pct(ttfts, 99),
            "itl_p50": pct(gaps, 50), "itl_p99": pct(gaps, 99), "client_cpu": cpu / wall}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--clients", default="1,8,32,64")
    ap.add_argument("--requests", type=int, default=2)
    ap.add_argument("--gen", type=int, default=128)
    ap.add_argument("--prompt-min", type=int, default=100)
    ap.add_argument("--prompt-max", type=int, default=1000)
    ap.add_argument("--vocab-min", type=int, default=300)
    ap.add_argument("--vocab-max", type=int, default=40000)
    ap.add_argument("--time-limit", type=float, default=600)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--label", default="")
    a = ap.parse_args()
    print(f"{'server':>12} {'N':>3} {'req':>4} {'tokens':>7} {'wall s':>7} {'tok/s':>8} {'TTFT p50':>9} "
          f"{'TTFT p99':>9} {'ITL p50':>8} {'ITL p99':>8} {'client CPU':>10}")
    for n in [int(x) for x in a.clients.split(",")]:
        r = asyncio.run(run_level(a.port, a.model, n, a.requests, a.gen, a.prompt_min, a.prompt_max, a.vocab_min,
                                  a.vocab_max, a.time_limit, a.seed))
        print(f"{a.label:>12} {n:>3} {r['requests']:>4} {r['tokens']:>7} {r['wall_s']:>7.1f} {r['tokens_per_s']:>8.1f} "
              f"{r['ttft_p50']:>8.3f}s {r['ttft_p99']:>8.3f}s {r['itl_p50'] * 1000:>6.1f}ms {r['itl_p99'] * 1000:>6.1f}ms "
              f"{r['client_cpu'] * 100:>9.1f}%", flush=True)


if __name__ == "__main__":
    sys.exit(main())
