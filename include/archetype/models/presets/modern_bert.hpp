#pragma once
// ModernBERT (GGUF `modern-bert`; llama.cpp's src/models/modern-bert.cpp graph,
// transformers' ModernBertModel), an Encoder<...> built from policies:
//
//   RoPE                         NeoX pairs; base rope.freq_base on the global layers,
//                                rope.freq_base_swa on the windowed ones (transformers'
//                                global_rope_theta / local_rope_theta)
//   Interleave<dynamic, SymmetricWindow<>, Bidirectional, interleave_order::global_first>
//                                a global layer, then windowed ones (layer il global iff
//                                il % N == 0, N = global_attn_every_n_layers, default 3); a
//                                windowed query sees keys at |q - k| <= local_attention / 2
//   GeGLUWith<gelu_form::erf>        down(gelu(Wi_first_half x) * Wi_second_half x), the erf GELU
//                                of hidden_activation "gelu" (a file naming another activation
//                                is refused by name); Wi stays fused in ffn_up
//   PreNorm<LayerNormNoBias>     LayerNorms without bias before each sub-layer, on the
//                                embedding and at the end; layer 0 has no attention norm
//   SequentialBlockFirstNormOptional  the pre-norm block whose layer 0 may lack that norm
//                                (on the core, Encoder::core; the encoder session reads the
//                                same fact from the conventions' first_attn_norm_optional)
//
// Read from the file: every dimension, the window, the pattern, both RoPE bases, the eps
// (the converter stores it under layer_norm_rms_epsilon), the pooling (none by default).
#include "archetype/io/arch/conventions.hpp"
#include "archetype/models/encoder.hpp"

namespace archetype::presets {

using ModernBert = Encoder<RoPE, Interleave<dynamic, SymmetricWindow<>, Bidirectional, interleave_order::global_first>,
                           GeGLUWith<gelu_form::erf>, PreNorm<LayerNormNoBias>, SequentialBlockFirstNormOptional>;

struct modern_bert_architecture {
    static constexpr std::string_view gguf_name = "modern-bert";
    using model = ModernBert;
    static constexpr arch::gguf_conventions conventions{.rope_neox = true,
                                                        .window_period_default = 3,
                                                        .window_global_first = true,
                                                        .first_attn_norm_optional = true,
                                                        .layer_norm_eps_in_rms_key = true};
};

} // namespace archetype::presets
