#pragma once
// Granite-4.0-H (GGUF `granitehybrid`): Mamba-2 layers where head_count_kv[il] == 0 and GQA
// attention elsewhere (HybridMixer), each followed by a SwiGLU feed-forward; Granite's
// multipliers (embedding, residual, logit divisor, attention.scale). Positions as llama.cpp
// reads rope.scaling.finetuned: false = NoPE (Granite-4.0-H), true or absent = RoPE (Bamba);
// each is its own entry, chosen by accepts(). The MoE variants (expert_count > 0) have no
// entry yet: the dense feed-forward refuses their expert tensors by name.
#include "archetype/io/key_ledger.hpp"
#include "archetype/models/decoder.hpp"

namespace archetype::presets {

template <bool Rope>
struct granitehybrid_entry {
    static constexpr std::string_view gguf_name = "granitehybrid";
    using model = Decoder<GQA<dynamic, dynamic>, std::conditional_t<Rope, RoPE, NoPE>, Causal, FullCache, SwiGLU, RMSNorm,
                          EmbeddingMultiplier, ResidualMultiplier<>, LogitDivisor, HybridMixer<SelfAttention, Mamba2>>;
    static constexpr known_unused_key known_unused_keys[] = {
        {"{arch}.expert_shared_feed_forward_length", "written without experts too; llama.cpp reads it only for MoE"}};
    static bool accepts(const gguf::file& f) { return f.get_or<bool>("granitehybrid.rope.scaling.finetuned", true) == Rope; }
};
using granitehybrid_architecture = granitehybrid_entry<false>;
using granitehybrid_rope_architecture = granitehybrid_entry<true>;

} // namespace archetype::presets
