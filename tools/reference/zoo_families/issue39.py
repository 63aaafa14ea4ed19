"""The issue-39 families (MoE routers and shared experts, multi-head latent attention, gpt-oss), one
module each over zoo_families/moe.py. make_zoo_fixture.py calls `register(zoo)` after the issue-40
families; a module must not import torch or transformers at import time.

Regenerate (the fixtures are byte-reproducible; flags as used):
    PY=/work/venv-ref/bin/python; S=tools/reference/make_zoo_fixture.py; L="--llama-cpp <llama.cpp tree> --work <dir>"
    $PY $S mixtral $L --save-hf
    $PY $S qwen2moe $L --save-hf
    $PY $S olmoe $L --seed 20240609            (the default seed has a router near tie)
    $PY $S granitemoe $L
    $PY $S glm4moe $L
    $PY $S deepseek2-lite $L --save-hf --seed 20240608   (the default seed has a router near tie)
    $PY $S deepseek2-v3 $L
    $PY $S gpt-oss $L
"""
from __future__ import annotations

import importlib

MODULES = ["mixtral", "qwen2moe", "olmoe", "granitemoe", "glm4moe", "deepseek2", "gpt_oss"]


def register(zoo) -> None:
    for name in MODULES:
        try:
            mod = importlib.import_module(f"{__package__}.{name}")
        except ModuleNotFoundError as e:          # (modules are added one family at a time)
            if e.name == f"{__package__}.{name}":
                continue
            raise
        for fam_name, fam in mod.families(zoo).items():
            assert fam_name not in zoo.FAMILIES, fam_name
            zoo.FAMILIES[fam_name] = fam
