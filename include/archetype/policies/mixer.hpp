#pragma once
// Mixer axis: what mixes information across positions. Self-attention here;
// the RWKV time mixes live in policies/rwkv.hpp.
#include <string>

#include "archetype/core/policy.hpp"

namespace archetype {

/// Whether attention applies an RMSNorm to each head of Q and K before RoPE.
enum class qk_norm { from_file, none, rms };

/// Multi-head self-attention (heads, position, mask and cache are their own axes).
template <qk_norm QKNorm = qk_norm::from_file>
struct SelfAttentionWith {
    using axis = archetype::axis::mixer;
    static constexpr std::string_view name = "SelfAttention";
    static constexpr bool attention = true;
    static constexpr qk_norm qk = QKNorm;
    static std::string describe() {
        return std::string("SelfAttention") + (QKNorm == qk_norm::rms ? "(QK RMSNorm)" : "");
    }
};
using SelfAttention = SelfAttentionWith<>;

} // namespace archetype
