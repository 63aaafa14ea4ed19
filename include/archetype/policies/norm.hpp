#pragma once
// Norm axis. eps comes from the model file.
#include <string>

#include "archetype/core/policy.hpp"

namespace archetype {

/// x / sqrt(mean(x^2) + eps) * w
struct RMSNorm {
    using axis = archetype::axis::norm;
    static constexpr std::string_view name = "RMSNorm";
    static constexpr bool has_bias = false;
    static std::string describe() { return "RMSNorm"; }
};
/// (x - mean) / sqrt(var + eps) * w + b
struct LayerNorm {
    using axis = archetype::axis::norm;
    static constexpr std::string_view name = "LayerNorm";
    static constexpr bool has_bias = true;
    static std::string describe() { return "LayerNorm"; }
};
/// LayerNorm over each head's slice, then w, b over all (RWKV ln_x).
struct GroupNorm {
    using axis = archetype::axis::norm;
    static constexpr std::string_view name = "GroupNorm";
    static constexpr bool has_bias = true;
    static std::string describe() { return "GroupNorm"; }
};

} // namespace archetype
