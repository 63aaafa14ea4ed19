#pragma once
// Norm axis. eps comes from the model file.
#include <string>
#include <string_view>

#include "archetype/core/error.hpp"
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
/// (x - mean) / sqrt(var + eps) * w, a LayerNorm whose model has no bias (ModernBERT's
/// norm_bias = false): a file that carries a norm bias is refused rather than dropped
/// (its bias tensor stays unbound), and one without is not mistaken for a broken LayerNorm.
struct LayerNormNoBias {
    using axis = archetype::axis::norm;
    static constexpr std::string_view name = "LayerNormNoBias";
    static constexpr bool has_bias = false;
    static std::string describe() { return "LayerNorm without bias"; }
};
namespace detail {
/// The eps of a norm from the file's key `key` (Keys: io/arch/llama.hpp's llama_hparams).
template <class Keys>
float norm_eps(const Keys& h, bool has, float v, const char* key, const char* norm, const char* other_key,
               const char* other) {
    if (!has)
        throw shape_error(std::string(norm) + " but the file has no " + h.arch + "." + key +
                          (std::string_view(other_key).empty() ? std::string()
                                                              : std::string(" (it has ") + other_key + ": use " + other + ")"));
    return v;
}
} // namespace detail

// Hooks: apply(x, w, b, y, n, eps) on a row; eps(keys) reads the norm's own eps key of a
// transformer file (throws shape_error when the file has only the other norm's key).
template <>
struct norm_impl<RMSNorm> {
    template <class Keys>
    static float eps(const Keys& h) {
        return detail::norm_eps(h, h.has_rms_eps, h.rms_eps, "attention.layer_norm_rms_epsilon", "RMSNorm",
                                h.has_ln_eps ? "attention.layer_norm_epsilon" : "", "LayerNorm");
    }
    /// y = norm(x) over n values; w may be null (= 1); b unused.
    static void apply(const float* x, const float* w, const float*, float* y, std::size_t n, float eps) noexcept {
        kernels::rms_norm(x, w, y, n, eps);
    }
};
template <>
struct norm_impl<LayerNorm> {
    template <class Keys>
    static float eps(const Keys& h) {
        return detail::norm_eps(h, h.has_ln_eps, h.ln_eps, "attention.layer_norm_epsilon", "LayerNorm",
                                h.has_rms_eps ? "attention.layer_norm_rms_epsilon" : "", "RMSNorm");
    }
    static void apply(const float* x, const float* w, const float* b, float* y, std::size_t n, float eps) noexcept {
        kernels::layer_norm(x, w, b, y, n, eps);
    }
};

template <>
struct norm_impl<LayerNormNoBias> {
    template <class Keys>
    static float eps(const Keys& h) { return norm_impl<LayerNorm>::eps(h); }
    static void apply(const float* x, const float* w, const float*, float* y, std::size_t n, float eps) noexcept {
        kernels::layer_norm(x, w, nullptr, y, n, eps);
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
