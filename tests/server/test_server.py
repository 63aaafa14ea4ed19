"""Suite 'server': `archetype serve` against the real `openai` Python client (max_retries=0)
and raw HTTP, on a random-weight model the test writes (tests/server/write_tiny_model.cpp).

    python test_server.py ARCHETYPE WRITE_TINY_MODEL ZOO_DIR

Two servers: the main one (--parallel 16, an API key) for the API's routes, the
concurrency, fault and memory cases; a small one (--parallel 1 --queue 1) for the queue
bound and SIGTERM; and an encoder (the zoo's nomic-bert, ZOO_DIR/nomic-bert) for
/v1/embeddings of an encoder file against transformers' pooled embedding.
"""
import base64
import http.client
import json
import math
import os
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import urllib.request

import openai

ARCHETYPE, WRITER, ZOO = sys.argv[1], sys.argv[2], sys.argv[3]
KEY = "test-key-0123456789"
MODEL = "tiny.gguf"
CTX = 4096


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    def __init__(self, model, *flags):
        self.port = free_port()
        env = dict(os.environ, MALLOC_ARENA_MAX="2")
        self.proc = subprocess.Popen(
            [ARCHETYPE, "serve", "--model", model, "--port", str(self.port), "--threads", "2", *flags],
            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.time() + 30
        while True:
            try:
                with urllib.request.urlopen(self.url("/health"), timeout=1) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if self.proc.poll() is not None or time.time() > deadline:
                raise RuntimeError("archetype serve did not start: " + self.proc.stderr.read().decode())
            time.sleep(0.05)

    def url(self, path):
        return f"http://127.0.0.1:{self.port}{path}"

    def client(self, key=KEY):
        return openai.OpenAI(base_url=self.url("/v1"), api_key=key, max_retries=0, timeout=60)

    def raw(self, method, path, body=None, headers=None):
        """(status, headers, body bytes) of one request over a fresh connection."""
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        h = {"Authorization": "Bearer " + KEY, "Content-Type": "application/json"}
        h.update(headers or {})
        c.request(method, path, body=body, headers=h)
        r = c.getresponse()
        out = (r.status, dict(r.getheaders()), r.read())
        c.close()
        return out

    def metrics(self):
        _, _, body = self.raw("GET", "/metrics")
        out = {}
        for line in body.decode().splitlines():
            if line and not line.startswith("#"):
                k, v = line.split()
                out[k] = float(v)
        return out

    def rss(self):
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
        raise RuntimeError("no VmRSS")

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc.stderr.close()


def open_stream(port, body):
    """A raw streaming request: the socket after the request is sent."""
    s = socket.create_connection(("127.0.0.1", port), timeout=30)
    data = json.dumps(body).encode()
    s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + KEY.encode() +
              b"\r\nContent-Type: application/json\r\nContent-Length: " + str(len(data)).encode() + b"\r\n\r\n" + data)
    return s


def error_of(body):
    e = json.loads(body)["error"]
    assert isinstance(e["message"], str) and e["message"], e
    return e


class ServerTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.model = os.path.join(cls.tmp.name, MODEL)
        subprocess.run([WRITER, cls.model], check=True)
        cls.srv = Server(cls.model, "--parallel", "16", "--queue", "32", "--ctx", str(CTX), "--api-key", KEY,
                         "--max-body", "65536")
        cls.c = cls.srv.client()

    @classmethod
    def tearDownClass(cls):
        cls.srv.stop()
        cls.tmp.cleanup()

    # ---- the API's routes, through the openai client --------------------------------
    def test_models_and_health(self):
        self.assertEqual([m.id for m in self.c.models.list().data], [MODEL])
        with urllib.request.urlopen(self.srv.url("/health")) as r:  # no key needed
            self.assertEqual(json.loads(r.read())["status"], "ok")

    def test_chat_and_its_stream_agree(self):
        msgs = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "Hello there"}]
        r = self.c.chat.completions.create(model=MODEL, messages=msgs, max_tokens=24, temperature=0)
        ch = r.choices[0]
        self.assertEqual(ch.message.role, "assistant")
        self.assertIn(ch.finish_reason, ("stop", "length"))
        self.assertEqual(r.usage.total_tokens, r.usage.prompt_tokens + r.usage.completion_tokens)
        self.assertGreater(r.usage.prompt_tokens, 10)  # the ChatML rendering of two messages
        self.assertLessEqual(r.usage.completion_tokens, 24)
        parts, finish, usage = [], None, None
        for chunk in self.c.chat.completions.create(model=MODEL, messages=msgs, max_tokens=24, temperature=0,
                                                    stream=True, stream_options={"include_usage": True}):
            if chunk.usage:
                usage = chunk.usage
            for c in chunk.choices:
                parts.append(c.delta.content or "")
                finish = c.finish_reason or finish
        self.assertEqual("".join(parts), ch.message.content)
        self.assertEqual(finish, ch.finish_reason)
        self.assertEqual(usage.completion_tokens, r.usage.completion_tokens)

    def test_sse_wire_format(self):
        status, headers, body = self.srv.raw("POST", "/v1/completions", json.dumps(
            {"model": MODEL, "prompt": "abc", "max_tokens": 5, "stream": True, "temperature": 0}),
            {"Accept-Encoding": "gzip"})
        self.assertEqual(status, 200)
        self.assertEqual(headers["Content-Type"], "text/event-stream")
        self.assertNotIn("Content-Encoding", headers)
        events = [e for e in body.decode().split("\n\n") if e]
        self.assertTrue(all(e.startswith("data: ") for e in events))
        self.assertEqual(events[-1], "data: [DONE]")
        last = json.loads(events[-2][6:])
        self.assertEqual(last["choices"][0]["finish_reason"], "length")

    def test_completion_max_tokens(self):
        r = self.c.completions.create(model=MODEL, prompt="The", max_tokens=7, temperature=0,
                                      extra_body={"ignore_eos": True})
        self.assertEqual(r.choices[0].finish_reason, "length")
        self.assertEqual(r.usage.completion_tokens, 7)
        self.assertEqual(r.usage.prompt_tokens, 3)  # byte-level: one token per byte

    def test_stop_strings(self):
        kw = dict(model=MODEL, prompt="Once upon", max_tokens=60, temperature=0, extra_body={"ignore_eos": True})
        whole = self.c.completions.create(**kw).choices[0].text
        # a two-character stop string from the middle of the greedy text
        i = next(i for i in range(len(whole) // 3, len(whole) - 2) if "\ufffd" not in whole[i:i + 2])
        stop = whole[i:i + 2]
        r = self.c.completions.create(stop=[stop], **kw)
        self.assertEqual(r.choices[0].finish_reason, "stop")
        self.assertEqual(r.choices[0].text, whole[:whole.find(stop)])
        streamed = "".join(c.choices[0].text for c in self.c.completions.create(stop=stop, stream=True, **kw)
                           if c.choices)
        self.assertEqual(streamed, whole[:whole.find(stop)])

    def test_embeddings_float_and_base64(self):
        texts = ["first text", "a second, longer text"]
        f = self.c.embeddings.create(model=MODEL, input=texts, encoding_format="float")
        b = self.c.embeddings.create(model=MODEL, input=texts)  # the client asks for base64
        self.assertEqual(len(f.data), 2)
        for x, y in zip(f.data, b.data):
            self.assertEqual(len(x.embedding), 256)
            self.assertEqual(x.embedding, y.embedding)  # float32 either way
            self.assertAlmostEqual(math.sqrt(sum(v * v for v in x.embedding)), 1.0, places=5)
        self.assertNotEqual(f.data[0].embedding, f.data[1].embedding)
        status, _, body = self.srv.raw("POST", "/v1/embeddings", json.dumps(
            {"model": MODEL, "input": "first text", "encoding_format": "base64"}))
        raw = base64.b64decode(json.loads(body)["data"][0]["embedding"])
        self.assertEqual(list(struct.unpack(f"<{len(raw) // 4}f", raw)), f.data[0].embedding)
        self.assertEqual(f.usage.prompt_tokens, len("first text") + len("a second, longer text"))

    def test_api_key(self):
        with self.assertRaises(openai.AuthenticationError):
            self.srv.client(key="wrong").models.list()
        status, _, body = self.srv.raw("GET", "/v1/models", headers={"Authorization": ""})
        self.assertEqual(status, 401)
        self.assertEqual(error_of(body)["code"], "invalid_api_key")

    # ---- 16 concurrent greedy streams == the same requests one at a time -------------
    def test_concurrent_streams_match_sequential(self):
        prompts = [f"Request number {i}: " + "x" * (i * 7) for i in range(16)]

        def run(p):
            return "".join(c.choices[0].text for c in self.c.completions.create(
                model=MODEL, prompt=p, max_tokens=40, temperature=0, stream=True, extra_body={"ignore_eos": True})
                if c.choices)

        alone = [run(p) for p in prompts]
        together = [None] * 16
        threads = [threading.Thread(target=lambda i=i: together.__setitem__(i, run(prompts[i]))) for i in range(16)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(together, alone)
        self.assertGreater(len(set(alone)), 1)

    # ---- bad input and faults ----------------------------------------------------
    def test_malformed_json(self):
        status, headers, body = self.srv.raw("POST", "/v1/chat/completions", b'{"model": "tiny.gguf", "messages": [')
        self.assertEqual(status, 400)
        self.assertIn("not valid JSON", error_of(body)["message"])

    def test_invalid_utf8(self):
        status, _, body = self.srv.raw("POST", "/v1/completions", b'{"model": "tiny.gguf", "prompt": "a\xff\xfeb"}')
        self.assertEqual(status, 400)
        error_of(body)

    def test_wrong_types_and_unknown_fields(self):
        for bad, param in [({"max_tokens": "5"}, "max_tokens"), ({"temperature": "hot"}, "temperature"),
                           ({"stream": 1}, "stream"), ({"stop": 5}, "stop"), ({"prompt": {"a": 1}}, "prompt"),
                           ({"bogus_field": 1}, "bogus_field"), ({"temperature": 9}, "temperature"),
                           ({"presence_penalty": 0.5}, "presence_penalty"), ({"n": 2}, "n")]:
            body = {"model": MODEL, "prompt": "hi"}
            body.update(bad)
            with self.assertRaises(openai.BadRequestError) as cm:
                self.c.completions.create(**{k: v for k, v in body.items() if k in ("model", "prompt")},
                                          extra_body={k: v for k, v in body.items() if k not in ("model", "prompt")})
            self.assertEqual(cm.exception.body["param"], param, bad)
        with self.assertRaises(openai.BadRequestError):
            self.c.chat.completions.create(model=MODEL, messages=[{"role": "wizard", "content": "x"}])
        with self.assertRaises(openai.BadRequestError):
            self.c.chat.completions.create(model=MODEL, messages=[])

    def test_body_over_the_limit(self):
        status, _, body = self.srv.raw("POST", "/v1/completions",
                                       json.dumps({"model": MODEL, "prompt": "x" * 70000}).encode())
        self.assertEqual(status, 413)
        error_of(body)

    def test_prompt_longer_than_the_context(self):
        with self.assertRaises(openai.BadRequestError) as cm:
            self.c.completions.create(model=MODEL, prompt=list(range(1, 251)) * 20, max_tokens=4)  # 5000 ids
        msg = cm.exception.body["message"]
        self.assertIn("5000", msg)
        self.assertIn(str(CTX), msg)

    def test_max_tokens_over_the_limit(self):
        with self.assertRaises(openai.BadRequestError) as cm:
            self.c.completions.create(model=MODEL, prompt="hi", max_tokens=CTX + 1)
        self.assertIn(str(CTX + 1), cm.exception.body["message"])
        self.assertIn(str(CTX), cm.exception.body["message"])

    def test_unknown_model(self):
        with self.assertRaises(openai.NotFoundError) as cm:
            self.c.completions.create(model="gpt-4", prompt="hi", max_tokens=2)
        self.assertEqual(cm.exception.body["code"], "model_not_found")

    def test_unknown_route(self):
        status, _, body = self.srv.raw("GET", "/v1/nothing")
        self.assertEqual(status, 404)
        error_of(body)

    def test_disconnect_mid_stream_frees_the_sequence(self):
        before = self.srv.metrics()["archetype_generated_tokens_total"]
        s = open_stream(self.srv.port, {"model": MODEL, "prompt": "go", "max_tokens": CTX - 8, "stream": True,
                                        "temperature": 0, "ignore_eos": True})
        got = b""
        while got.count(b"data: ") < 5:
            got += s.recv(4096)
        s.close()
        deadline = time.time() + 10
        while self.srv.metrics()["archetype_active_sequences"] != 0:
            self.assertLess(time.time(), deadline, "the sequence of a closed stream was not released")
            time.sleep(0.02)
        made = self.srv.metrics()["archetype_generated_tokens_total"] - before
        self.assertLess(made, CTX - 8)  # cancelled, not run to its end

    # ---- memory: resident size after request 2,000 within 5 % of after request 200 ----
    def test_zz_resident_memory_is_stable(self):
        def burst(n):
            def work(k):
                for i in range(k):
                    self.c.completions.create(model=MODEL, prompt=f"memory probe {i % 37}", max_tokens=3,
                                              temperature=0.7, seed=i)
            threads = [threading.Thread(target=work, args=(n // 8,)) for _ in range(8)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()

        burst(200)
        at_200 = self.srv.rss()
        burst(1800)
        at_2000 = self.srv.rss()
        print(f"resident memory: {at_200} bytes after 200 requests, {at_2000} after 2000", file=sys.stderr)
        self.assertLessEqual(at_2000, at_200 * 1.05)
        m = self.srv.metrics()
        self.assertEqual(m["archetype_active_sequences"], 0)
        self.assertEqual(m["archetype_queued_requests"], 0)


class SmallServerTest(unittest.TestCase):
    """--parallel 1 --queue 1: the third concurrent request is refused; SIGTERM drains."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.model = os.path.join(cls.tmp.name, MODEL)
        subprocess.run([WRITER, cls.model], check=True)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def long_stream(self, srv):
        s = open_stream(srv.port, {"model": MODEL, "prompt": "go", "max_tokens": CTX - 8, "stream": True,
                                   "temperature": 0, "ignore_eos": True})
        first = s.recv(4096)
        self.assertIn(b"200 OK", first)
        return s

    def test_queue_bound_then_503(self):
        srv = Server(self.model, "--parallel", "1", "--queue", "1", "--ctx", str(CTX), "--api-key", KEY)
        try:
            running = self.long_stream(srv)  # holds the one sequence
            queued = open_stream(srv.port, {"model": MODEL, "prompt": "wait", "max_tokens": 2, "stream": True})
            deadline = time.time() + 10
            while srv.metrics()["archetype_queued_requests"] != 1:
                self.assertLess(time.time(), deadline)
                time.sleep(0.01)
            with self.assertRaises(openai.InternalServerError) as cm:
                srv.client().completions.create(model=MODEL, prompt="no room", max_tokens=2)
            self.assertEqual(cm.exception.status_code, 503)
            self.assertEqual(srv.metrics()["archetype_requests_rejected_total"], 1)
            running.close()
            queued.close()
        finally:
            srv.stop()

    def test_sigterm_closes_streams_and_exits_0(self):
        srv = Server(self.model, "--parallel", "1", "--ctx", str(CTX), "--api-key", KEY, "--grace", "0")
        s = self.long_stream(srv)
        srv.proc.send_signal(signal.SIGTERM)
        rest = b""
        s.settimeout(20)
        while not rest.endswith(b"0\r\n\r\n"):  # the chunked body's end
            more = s.recv(65536)
            if not more:
                break
            rest += more
        s.close()
        self.assertEqual(srv.proc.wait(timeout=20), 0)
        self.assertIn(b"data: [DONE]", rest)
        self.assertIn(b'"finish_reason":"stop"', rest)
        srv.stop()


class EncoderServerTest(unittest.TestCase):
    """An encoder file serves /v1/embeddings: the zoo's tiny nomic-bert (a real WordPiece
    vocabulary; mean pooling from the file, then L2) against the embedding transformers'
    NomicBertModel computed for the same ids (tests/data/zoo/nomic-bert/embedding_N.f32.bin)."""

    @classmethod
    def setUpClass(cls):
        cls.dir = os.path.join(ZOO, "nomic-bert")
        cls.srv = Server(os.path.join(cls.dir, "model.gguf"), "--api-key", KEY)
        cls.c = cls.srv.client()
        with open(os.path.join(cls.dir, "versions.json")) as f:
            cls.texts = json.load(f)["texts"]

    @classmethod
    def tearDownClass(cls):
        cls.srv.stop()

    def read(self, name, fmt):
        with open(os.path.join(self.dir, name), "rb") as f:
            raw = f.read()
        return list(struct.unpack(f"<{len(raw) // 4}{fmt}", raw))

    def test_embeddings_match_transformers(self):
        for n in (7, 40):
            ids, want = self.read(f"tokens_{n}.i32.bin", "i"), self.read(f"embedding_{n}.f32.bin", "f")
            by_ids = self.c.embeddings.create(model="model.gguf", input=[ids], encoding_format="float")
            got = by_ids.data[0].embedding
            self.assertEqual(len(got), len(want))
            self.assertLessEqual(max(abs(a - b) for a, b in zip(got, want)), 1e-4 * max(1.0, max(map(abs, want))))
            self.assertEqual(by_ids.usage.prompt_tokens, n)
            # the text, tokenised by the server ([CLS] ... [SEP]), is the same ids, so the same vector
            by_text = self.c.embeddings.create(model="model.gguf", input=self.texts[str(n)])  # base64 on the wire
            self.assertEqual(by_text.data[0].embedding, got)

    def test_chat_and_completions_are_refused_by_an_encoder(self):
        for call in (lambda: self.c.chat.completions.create(model="model.gguf", messages=[{"role": "user", "content": "hi"}]),
                     lambda: self.c.completions.create(model="model.gguf", prompt="hi", max_tokens=2)):
            with self.assertRaises(openai.BadRequestError) as cm:
                call()
            self.assertIn("encoder", str(cm.exception))

    def test_input_longer_than_the_encoder_takes(self):
        status, _, body = self.srv.raw("POST", "/v1/embeddings", json.dumps({"model": "model.gguf", "input": [[101] * 100000]}))
        self.assertEqual(status, 400)
        self.assertIn("100000", error_of(body)["message"])


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0], "-v"])
