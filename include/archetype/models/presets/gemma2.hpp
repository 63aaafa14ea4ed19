#pragma once
// Gemma 2 (GGUF `gemma2`; llama.cpp's src/models/gemma2.cpp graph):
//
//   RoPE on NeoX pairs (from the conventions), the same base on every layer
//   Interleave<dynamic, SlidingWindow<>, Causal> + RollingCache
//                      windowed and global layers alternate (period 2 unless the file's
//                      gemma2.attention.sliding_window_pattern says otherwise: layer 0 windowed)
//   SelfAttentionWith<qk_norm::none>   no QK norm (Gemma 3 added it)
//   GeGLU              down(gelu_tanh(gate x) * up x), GELU in float32 as transformers'
//                      gelu_pytorch_tanh (not llama.cpp's fp16 table)
//   PrePostNorm<RMSNorm>  norms before and after each sublayer (the converter stored 1 + w)
//   ScaledEmbedding    embedding rows times sqrt(n_embd)
//   AttentionSoftCap   scores c tanh(s / c), c = gemma2.attn_logit_softcapping
//   LogitSoftCap       logits c tanh(x / c), c = gemma2.final_logit_softcapping
//
//   QueryPreAttnScale<46>  gemma2.attention.scale, else 1/sqrt(key_length), or
//                      1/sqrt(n_embd / n_head) for the 46-layer 27B, as llama.cpp decides
//                      (llama.cpp's GGUF does not carry transformers' query_pre_attn_scalar)
//
// The quirks read their own keys (policies/attention_softcap.hpp, logit_softcap.hpp,
// attention_scale.hpp). The attention scale is 1/sqrt(key_length), or
// 1/sqrt(n_embd / n_head) for the 46-layer 27B, as llama.cpp decides: the GGUF does not
// carry transformers' query_pre_attn_scalar.
#include <cmath>

#include "archetype/io/arch/conventions.hpp"
#include "archetype/models/decoder.hpp"
#include "archetype/policies/attention_scale.hpp"
#include "archetype/policies/attention_softcap.hpp"
#include "archetype/policies/embedding.hpp"
#include "archetype/policies/logit_softcap.hpp"
#include "archetype/policies/norm_sandwich.hpp"

namespace archetype::presets {

using Gemma2 = Decoder<GQA<dynamic, dynamic>, RoPE, Interleave<dynamic, SlidingWindow<>, Causal>, RollingCache,
                      SelfAttentionWith<qk_norm::none>, GeGLU, PrePostNorm<RMSNorm>, ScaledEmbedding,
                      AttentionSoftCap, LogitSoftCap, QueryPreAttnScale<46>>;

struct gemma2_architecture {
    static constexpr std::string_view gguf_name = "gemma2";
    using model = Gemma2;
    static constexpr arch::gguf_conventions conventions{
        .rope_neox = true, .window_period_default = 2};
};

} // namespace archetype::presets
