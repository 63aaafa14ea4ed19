#pragma once
// RoPE at run time: cos/sin of the rotation angles for given positions, with
// ggml's arithmetic (ggml_rope_ext, CPU): theta_scale = powf(base, -2/n_rot),
// theta_i = p * theta_scale^i by repeated float multiplication, linear scaling
// by freq_scale, YaRN ramp/mscale as ggml's rope_yarn. Rotation itself is
// kernels::rope (normal = adjacent pairs, NeoX = halves).
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>

#include "archetype/kernels/rope.hpp"

namespace archetype::layers {

struct rope_params {
    std::size_t n_rot = 0;             // rotated dimensions of a head (even)
    float freq_base = 10000.f;
    float freq_scale = 1.f;            // 1 / linear scaling factor
    kernels::rope_pairing pairing = kernels::rope_pairing::adjacent;
    // YaRN (ext_factor 0 = off)
    float ext_factor = 0.f, attn_factor = 1.f, beta_fast = 32.f, beta_slow = 1.f;
    std::size_t n_ctx_orig = 0;
    bool yarn_round = true;            // YaRN's correction range rounded outward (floor / ceil), as ggml
    // per rotated pair i: its frequency is divided by freq_factors[i] (Llama-3 scaling,
    // LongRoPE: the file's rope_freqs.weight); null = 1
    const float* freq_factors = nullptr;
    // LongRoPE's long-context factors (rope_factors_long.weight): a session whose context
    // exceeds n_ctx_orig uses them instead of freq_factors (for_context)
    const float* freq_factors_long = nullptr;
};

/// The parameters a session of n_ctx positions rotates with (llama.cpp's
/// get_rope_factors: the long factors iff the context per sequence exceeds n_ctx_orig).
inline rope_params for_context(rope_params p, std::size_t n_ctx) noexcept {
    if (p.freq_factors_long && n_ctx > p.n_ctx_orig) p.freq_factors = p.freq_factors_long;
    return p;
}

namespace detail {
inline float yarn_corr_dim(std::size_t n_dims, std::size_t n_ctx_orig, float n_rot, float base) {
    return float(n_dims) * std::log(float(n_ctx_orig) / (n_rot * 2.f * 3.14159265358979323846f)) /
           (2.f * std::log(base));
}
inline float yarn_ramp(float low, float high, std::size_t i0) {
    const float y = (float(i0 / 2) - low) / std::max(0.001f, high - low);
    return 1.f - std::min(1.f, std::max(0.f, y));
}
} // namespace detail

/// cos/sin of the n_rot/2 angles for each of n positions: cos[t*n_rot/2 + i].
inline void rope_tables(const rope_params& p, const std::int64_t* pos, std::size_t n, float* cos, float* sin) {
    const std::size_t half = p.n_rot / 2;
    const float theta_scale = std::pow(p.freq_base, -2.0f / float(p.n_rot));
    float corr[2] = {0.f, 0.f};
    if (p.ext_factor != 0.f) {
        float start = detail::yarn_corr_dim(p.n_rot, p.n_ctx_orig, p.beta_fast, p.freq_base);
        float end = detail::yarn_corr_dim(p.n_rot, p.n_ctx_orig, p.beta_slow, p.freq_base);
        if (p.yarn_round) { // transformers' truncate: false keeps them (gpt-oss)
            start = std::floor(start);
            end = std::ceil(end);
        }
        corr[0] = std::max(0.f, start);
        corr[1] = std::min(float(p.n_rot - 1), end);
    }
    for (std::size_t t = 0; t < n; ++t) {
        float theta_extrap = float(pos[t]);
        for (std::size_t i = 0; i < half; ++i) {
            // ggml divides the unscaled angle by the pair's factor before YaRN (rope_yarn(theta / ff))
            const float te = p.freq_factors ? theta_extrap / p.freq_factors[i] : theta_extrap;
            const float theta_interp = p.freq_scale * te;
            float theta = theta_interp, mscale = p.attn_factor;
            if (p.ext_factor != 0.f) {
                const float mix = detail::yarn_ramp(corr[0], corr[1], 2 * i) * p.ext_factor;
                theta = theta_interp * (1 - mix) + te * mix;
                mscale *= 1.0f + 0.1f * std::log(1.0f / p.freq_scale);
            }
            cos[t * half + i] = std::cos(theta) * mscale;
            sin[t * half + i] = std::sin(theta) * mscale;
            theta_extrap *= theta_scale;
        }
    }
}

/// Rotates n_heads heads (stride head_stride) of each of n rows (stride ld) in place.
inline void apply_rope(const rope_params& p, float* x, std::size_t ld, std::size_t n, std::size_t n_heads,
                       std::size_t head_stride, const float* cos, const float* sin) noexcept {
    const std::size_t half = p.n_rot / 2;
    for (std::size_t t = 0; t < n; ++t)
        kernels::rope(x + t * ld, n_heads, head_stride, p.n_rot, cos + t * half, sin + t * half, p.pairing);
}

} // namespace archetype::layers
