#pragma once
// Granite-4.0-H (GGUF `granitehybrid`): Mamba-2 layers where head_count_kv[il] == 0 and GQA
// attention elsewhere (HybridMixer), each followed by a SwiGLU feed-forward — or, where the
// file has expert_count > 0 (Granite-4.0-H-tiny), a mixture of experts (softmax top-k,
// renormalised) plus an ungated shared expert of expert_shared_feed_forward_length; Granite's
// multipliers (embedding, residual, logit divisor, attention.scale). llama.cpp switches RoPE
// on rope.scaling.finetuned (granite-hybrid.cpp; absent reads as true): false is NoPE
// (Granite-4.0-H), true or absent is RoPE on the attention layers (Bamba; a
// GraniteMoeHybrid with position_embedding_type "rope"), adjacent pairs as llama.cpp's
// LLAMA_ROPE_TYPE_NORM for this architecture (the converter permutes q/k as for llama), base
// and rotated width from rope.freq_base / rope.dimension_count. Three entries, chosen by
// accepts(): dense NoPE, MoE NoPE, dense RoPE (a MoE file with RoPE has none). The dense
// files write the shared expert's width too, which nothing reads (llama.cpp reads it only
// for MoE).
#include "archetype/io/key_ledger.hpp"
#include "archetype/models/decoder.hpp"

namespace archetype::presets {

template <bool Moe, class Position = NoPE>
struct granitehybrid_entry {
    static constexpr std::string_view gguf_name = "granitehybrid";
    using model = Decoder<GQA<dynamic, dynamic>, Position, Causal, FullCache, RMSNorm,
                          std::conditional_t<Moe, MoE<dynamic, dynamic, SwiGLU, SoftmaxRouter<>, SharedExpertOfLength>, SwiGLU>,
                          EmbeddingMultiplier, ResidualMultiplier<>, LogitDivisor, HybridMixer<SelfAttention, Mamba2>, AttentionScaleKey>;
    static constexpr known_unused_key known_unused_keys[] = {{"{arch}.expert_shared_feed_forward_length", "dense: no experts"}};
    static bool accepts(const gguf::file& f) { return (f.get_or<std::uint64_t>("granitehybrid.expert_count", 0) > 0) == Moe &&
                                                      f.get_or<bool>("granitehybrid.rope.scaling.finetuned", true) == Position::rotary; }
};
using granitehybrid_architecture = granitehybrid_entry<false>;
using granitehybrid_moe_architecture = granitehybrid_entry<true>;
using granitehybrid_rope_architecture = granitehybrid_entry<false, RoPE>;

} // namespace archetype::presets
