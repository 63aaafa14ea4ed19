"""Shared pieces of the issue-40 family modules (no torch/transformers at import time)."""
from __future__ import annotations

from typing import Any

VOCAB = 256          # the dummy vocabulary's size (the prompts use ids < 128)


def base_config(**overrides: Any) -> dict[str, Any]:
    """The zoo's tiny decoder sizes: hidden 64, 4 query heads / 2 KV heads of 16, FFN 128, 2 layers,
    vocabulary 256, context 256, eager attention, float32, BOS 1 / EOS 2, no pad token."""
    cfg: dict[str, Any] = dict(
        vocab_size=VOCAB, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, head_dim=16,
        max_position_embeddings=256,
        rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
        attention_dropout=0.0,
        bos_token_id=1, eos_token_id=2, pad_token_id=None,
        attn_implementation="eager", dtype="float32",
    )
    cfg.update(overrides)
    return cfg


LLAMA_BLOCK_TENSORS = [
    "blk.{bid}.attn_norm.weight",
    "blk.{bid}.attn_q.weight", "blk.{bid}.attn_k.weight", "blk.{bid}.attn_v.weight",
    "blk.{bid}.attn_output.weight", "blk.{bid}.ffn_norm.weight",
    "blk.{bid}.ffn_gate.weight", "blk.{bid}.ffn_up.weight", "blk.{bid}.ffn_down.weight",
]
