#pragma once
// Norm axis. eps comes from the model file.
#include <string>

#include "archetype/core/policy.hpp"
#include "archetype/kernels/norm.hpp"
#include "archetype/policies/impl.hpp"

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
template <>
struct norm_impl<RMSNorm> {
    /// y = norm(x) over n values; w may be null (= 1); b unused.
    static void apply(const float* x, const float* w, const float*, float* y, std::size_t n, float eps) noexcept {
        kernels::rms_norm(x, w, y, n, eps);
    }
};
template <>
struct norm_impl<LayerNorm> {
    static void apply(const float* x, const float* w, const float* b, float* y, std::size_t n, float eps) noexcept {
        kernels::layer_norm(x, w, b, y, n, eps);
    }
};

/// LayerNorm over each head's slice, then w, b over all (RWKV ln_x).
struct GroupNorm {
    using axis = archetype::axis::norm;
    static constexpr std::string_view name = "GroupNorm";
    static constexpr bool has_bias = true;
    static std::string describe() { return "GroupNorm"; }
};

} // namespace archetype
