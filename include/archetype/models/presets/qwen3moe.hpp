#pragma once
// Qwen3-MoE (GGUF `qwen3moe`): Qwen3 (per-head QK RMSNorm, NeoX RoPE) with a mixture of
// SwiGLU experts in every layer: the top expert_used_count of expert_count, weighted by
// their router probabilities renormalised over the selected (llama.cpp always does;
// transformers when norm_topk_prob is set).
#include "archetype/io/arch/conventions.hpp"
#include "archetype/models/decoder.hpp"

namespace archetype::presets {

using Qwen3Moe = Decoder<GQA<dynamic, dynamic>, RoPENeox, Causal, FullCache, MoE<dynamic, dynamic, SwiGLU>, RMSNorm>;

struct qwen3moe_architecture {
    static constexpr std::string_view gguf_name = "qwen3moe";
    using model = Qwen3Moe;
    static constexpr arch::gguf_conventions conventions{.rope_neox = true};
};

} // namespace archetype::presets
