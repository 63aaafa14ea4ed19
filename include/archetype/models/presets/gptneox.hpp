#pragma once
// GPT-NeoX / Pythia (GGUF `gptneox`): a parallel residual block with two LayerNorms,
// x + attn(ln1(x)) + mlp(ln2(x)) (ParallelResidualTwoNorms, which also reads
// gptneox.use_parallel_residual), one fused attn_qkv with its bias, RoPE on NeoX pairs
// over the first rope.dimension_count dimensions of each head (rotary_pct), a GELU (erf,
// Hugging Face's "gelu") MLP with biases, an untied head.
#include "archetype/io/arch/conventions.hpp"
#include "archetype/models/decoder.hpp"

namespace archetype::presets {

using GPTNeoX = Decoder<MHA<dynamic>, RoPENeox, Causal, FullCache, GeluMLPWith<gelu_form::erf>, LayerNorm,
                       ParallelResidualTwoNorms>;

struct gptneox_architecture {
    static constexpr std::string_view gguf_name = "gptneox";
    using model = GPTNeoX;
    static constexpr arch::gguf_conventions conventions{.rope_neox = true};
};

} // namespace archetype::presets
