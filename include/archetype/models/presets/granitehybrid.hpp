#pragma once
// Granite-4.0-H (GGUF `granitehybrid`): Mamba-2 layers where head_count_kv[il] == 0 and GQA
// attention elsewhere (HybridMixer), each followed by a SwiGLU feed-forward — or, where the
// file has expert_count > 0 (Granite-4.0-H-tiny), a mixture of experts (softmax top-k,
// renormalised) plus an ungated shared expert of expert_shared_feed_forward_length; Granite's
// multipliers (embedding, residual, logit divisor, attention.scale). NoPE, as llama.cpp reads
// rope.scaling.finetuned = false; a file that says true or nothing (Bamba: RoPE) has no entry
// yet. The dense and MoE files are two entries, chosen by accepts(); the dense files write the
// shared expert's width too, which nothing reads (llama.cpp reads it only for MoE).
#include "archetype/io/key_ledger.hpp"
#include "archetype/models/decoder.hpp"

namespace archetype::presets {

template <bool Moe>
struct granitehybrid_entry {
    static constexpr std::string_view gguf_name = "granitehybrid";
    using model = Decoder<GQA<dynamic, dynamic>, NoPE, Causal, FullCache, RMSNorm,
                          std::conditional_t<Moe, MoE<dynamic, dynamic, SwiGLU, SoftmaxRouter<>, SharedExpertOfLength>, SwiGLU>,
                          EmbeddingMultiplier, ResidualMultiplier<>, LogitDivisor, HybridMixer<SelfAttention, Mamba2>, AttentionScaleKey>;
    static constexpr known_unused_key known_unused_keys[] = {{"{arch}.expert_shared_feed_forward_length", "dense: no experts"}};
    static bool accepts(const gguf::file& f) { return (f.get_or<std::uint64_t>("granitehybrid.expert_count", 0) > 0) == Moe &&
                                                      !f.get_or<bool>("granitehybrid.rope.scaling.finetuned", true); }
};
using granitehybrid_architecture = granitehybrid_entry<false>;
using granitehybrid_moe_architecture = granitehybrid_entry<true>;

} // namespace archetype::presets
