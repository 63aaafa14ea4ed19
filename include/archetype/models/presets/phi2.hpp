#pragma once
// Phi-2 (GGUF `phi2`): a parallel residual block on one shared LayerNorm,
// x + attn(ln(x)) + mlp(ln(x)) (ParallelResidual), q/k/v (or one fused attn_qkv) with
// biases, RoPE on NeoX pairs over the first rope.dimension_count dimensions of each head
// (partial_rotary_factor), a GELU (tanh, "gelu_new") MLP with biases, and a biased head
// (output.bias, bound whenever the file has it).
#include "archetype/io/arch/conventions.hpp"
#include "archetype/models/decoder.hpp"

namespace archetype::presets {

using Phi2 = Decoder<MHA<dynamic>, RoPENeox, Causal, FullCache, GeluMLP, LayerNorm, ParallelResidual>;

struct phi2_architecture {
    static constexpr std::string_view gguf_name = "phi2";
    using model = Phi2;
    static constexpr arch::gguf_conventions conventions{.rope_neox = true};
};

} // namespace archetype::presets
