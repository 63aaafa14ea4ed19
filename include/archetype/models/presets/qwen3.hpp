#pragma once
// Qwen3 (GGUF `qwen3`): Llama with a per-head RMSNorm on queries and keys before
// RoPE (attn_q_norm / attn_k_norm, bound by SelfAttention whenever the file has
// them), RoPE on NeoX pairs, a head dimension of its own ({arch}.attention.key_length).
#include "archetype/io/arch/conventions.hpp"
#include "archetype/models/decoder.hpp"

namespace archetype::presets {

using Qwen3 = Decoder<GQA<dynamic, dynamic>, RoPENeox, Causal, FullCache, SwiGLU, RMSNorm>;

struct qwen3_architecture {
    static constexpr std::string_view gguf_name = "qwen3";
    using model = Qwen3;
    static constexpr arch::gguf_conventions conventions{.rope_neox = true};
};

} // namespace archetype::presets
