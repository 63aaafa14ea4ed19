"""The zoo families added for issue 40, one small module each.

Each module <family>.py defines `families(zoo) -> dict[str, zoo.Family]`, where `zoo` is the
make_zoo_fixture module (for Family, the perturbation rule and _transformers_class): its
transformers config, converter class and shims, the checks that tie the GGUF to the config, and
its own float64 numpy forward pass built from npf.py. `register(zoo)` adds them to zoo.FAMILIES.
A module must not import torch or transformers at import time (make_exact_reference.py imports
make_zoo_fixture without them being needed).
"""
from __future__ import annotations

import importlib

MODULES = ["gemma", "seed_oss", "ernie4_5", "arcee", "glm4", "hunyuan_dense", "exaone4", "cohere2",
           "olmo3", "apertus", "ministral3", "falcon"]


def register(zoo) -> None:
    for name in MODULES:
        mod = importlib.import_module(f"{__name__}.{name}")
        for fam_name, fam in mod.families(zoo).items():
            assert fam_name not in zoo.FAMILIES, fam_name
            zoo.FAMILIES[fam_name] = fam
