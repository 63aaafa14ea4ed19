#pragma once
// Gemma 3 as a Decoder<...> built from policies. Each line of the alias is one
// feature of the architecture (llama.cpp's src/models/gemma3.cpp graph):
//
//   GQA<Hq, Hkv>                      grouped-query heads (270M: 4 query heads, 1 KV head, 256 wide)
//   WindowedRoPEBase<10000, RoPE>     NeoX pairs; base rope.freq_base on global layers and
//                                     rope.freq_base_swa on windowed ones, from the file (10000
//                                     when the file does not say)
//   Interleave<6, SlidingWindow<512>, Causal>
//                                     five windowed layers, then one global (il % 6 < 5 is windowed)
//   RollingCache                      the windowed layers keep a ring of 512 cells per sequence
//   SelfAttentionWith<qk_norm::rms>   per-head RMSNorm of Q and K before RoPE
//   GeGLU                             down(gelu_tanh(gate x) * up x)
//   PrePostNorm<RMSNorm>              an RMSNorm before and after attention and the FFN
//                                     (the GGUF converter already stored Gemma's 1 + w)
//   ScaledEmbedding                   embedding rows times sqrt(n_embd)
//   LogitSoftCap                      logits c tanh(x / c) when the file gives
//                                     gemma3.final_logit_softcapping (the 270M file does not)
//
//   QueryPreAttnScale<62>             gemma3.attention.scale, else 1/sqrt(key_length), or
//                                     1/sqrt(n_embd / n_head) for the 62-layer 27B
//                                     (query_pre_attn_scalar, as llama.cpp decides)
//
// Read from the file, not compiled: the tied output head (no output.weight).
//
//   auto model = archetype::load_model<archetype::presets::Gemma3_270M>("gemma-3-270m-q4_k_m.gguf");
#include <cmath>

#include "archetype/core/dims.hpp"
#include "archetype/io/arch/conventions.hpp"
#include "archetype/models/decoder.hpp"
#include "archetype/policies/attention_scale.hpp"
#include "archetype/policies/embedding.hpp"
#include "archetype/policies/logit_softcap.hpp"
#include "archetype/policies/norm_sandwich.hpp"
#include "archetype/policies/position/windowed_rope_base.hpp"

namespace archetype::presets {

template <dim_t Hq = dynamic, dim_t Hkv = dynamic>
using Gemma3 = Decoder<GQA<Hq, Hkv>, WindowedRoPEBase<10000, RoPE>, Interleave<6, SlidingWindow<512>, Causal>, RollingCache,
                       SelfAttentionWith<qk_norm::rms>, GeGLU, PrePostNorm<RMSNorm>, ScaledEmbedding, LogitSoftCap,
                       QueryPreAttnScale<62>>;

/// Gemma 3 270M: 4 query heads share one KV head.
using Gemma3_270M = Gemma3<4, 1>;

/// `gemma3` files: presets::Gemma3 with the window and the layer pattern from the file.
using Gemma3FromFile = Decoder<GQA<dynamic, dynamic>, WindowedRoPEBase<10000, RoPE>, Interleave<dynamic, SlidingWindow<>, Causal>, RollingCache,
                               SelfAttentionWith<qk_norm::rms>, GeGLU, PrePostNorm<RMSNorm>, ScaledEmbedding,
                               LogitSoftCap, QueryPreAttnScale<62>>;

/// What a gemma3 file implies (llama.cpp's llama_model_gemma3::load_arch_hparams): NeoX
/// pairs (the windowed layers' RoPE base is the preset's: WindowedRoPEBase); the layer pattern to a period of 6; the embedding is scaled.
struct gemma3_architecture {
    static constexpr std::string_view gguf_name = "gemma3";
    using model = Gemma3FromFile;
    static constexpr arch::gguf_conventions conventions{.rope_neox = true,
                                                        .window_period_default = 6};
};

/// Dimensions of Gemma 3 270M (gemma-3-270m GGUF metadata).
inline constexpr transformer_dims gemma3_270m_dims{.n_layer = 18, .n_embd = 640, .n_vocab = 262144, .n_ff = 2048,
                                                    .n_head = 4, .n_head_kv = 1, .head_dim = 256, .window = 512,
                                                    .n_expert = 1, .n_expert_used = 1, .tied_output = true};

} // namespace archetype::presets
