#pragma once
// nomic-embed (GGUF `nomic-bert`; llama.cpp src/models/bert.cpp): a BERT whose positions are
// NeoX RoPE instead of a learned table, with fused Q|K|V, a SwiGLU MLP (ffn_gate through
// SiLU, ffn_up, ffn_down), post-norm LayerNorms with biases, token types; the pooling from
// the file (mean), then L2.
#include "archetype/io/arch/conventions.hpp"
#include "archetype/models/encoder.hpp"

namespace archetype::presets {

using NomicBert = Encoder<RoPE, SwiGLU>;

struct nomic_bert_architecture {
    static constexpr std::string_view gguf_name = "nomic-bert";
    using model = NomicBert;
    static constexpr arch::gguf_conventions conventions{.rope_neox = true};
};

} // namespace archetype::presets
