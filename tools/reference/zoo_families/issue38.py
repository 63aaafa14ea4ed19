"""The issue-38 families (state-space and hybrid models: Mamba, Mamba-2, gated DeltaNet and the hybrids
built from them), one module each over zoo_families/ssm.py (the float64 numpy mechanisms, written once).
make_zoo_fixture.py calls `register(zoo)` after the issue-39 families; a module must not import torch
or transformers at import time.

Regenerate (the fixtures are byte-reproducible; flags as used):
    PY=/work/venv-ref/bin/python; S=tools/reference/make_zoo_fixture.py; L="--llama-cpp <llama.cpp tree> --work <dir>"
    $PY $S mamba2 $L --save-hf
    $PY $S granitehybrid $L --save-hf
    $PY $S granitehybrid-rope $L --save-hf
    $PY $S granitehybrid-moe $L
    $PY $S mamba $L
    $PY $S nemotron_h $L
    $PY $S falcon-h1 $L
    $PY $S qwen3next $L
    $PY $S qwen35 $L
    $PY $S jamba $L
"""
from __future__ import annotations

import importlib

MODULES = ["mamba2", "granitehybrid", "mamba", "nemotron_h", "falcon_h1", "qwen3next", "qwen35", "jamba"]


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
