#pragma once
// Position schemes other than RoPE, as pure functions of positions (no model
// knowledge): the additive attention biases of ALiBi and T5's relative buckets,
// and the absolute sinusoidal table. Learned absolute positions are a matrix
// row (the decoder model reads `position_embd.weight`).
//
//   ALiBi         score(q, k) += slope(h) * (p_k - p_q)      (<= 0 for visible keys)
//   RelativeBias  score(q, k) += table[bucket(p_k - p_q), h]
//   Sinusoidal    x(p)[2i] += sin(p / 10000^(2i/E)), x(p)[2i+1] += cos(p / 10000^(2i/E))
//
// All take positions, not cache cells, so they stay right in a rolling ring.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace archetype::layers {

/// ALiBi head slopes as ggml_soft_max_ext computes them (llama.cpp, max_bias 8):
/// with n the largest power of two <= n_head, m0 = 2^(-8/n), m1 = 2^(-4/n), head h
/// gets m0^(h+1) for h < n, else m1^(2(h-n)+1) (Press et al.'s interpolation for
/// head counts that are not powers of two).
inline std::vector<float> alibi_slopes(std::size_t n_head, float max_bias = 8.f) {
    std::vector<float> s(n_head);
    if (n_head == 0) return s;
    const auto n = std::uint32_t(1) << std::uint32_t(std::floor(std::log2(double(n_head))));
    const float m0 = std::pow(2.f, -max_bias / float(n)), m1 = std::pow(2.f, -(max_bias / 2.f) / float(n));
    for (std::size_t h = 0; h < n_head; ++h)
        s[h] = h < n ? std::pow(m0, float(h + 1)) : std::pow(m1, float(2 * (h - n) + 1));
    return s;
}

/// T5's relative position bucket, causal (decoder) form: distance d = p_q - p_k >= 0;
/// half the buckets are exact distances 0 .. B/2 - 1, the other half logarithmic up
/// to max_distance, larger distances share the last bucket (Raffel et al.; HF
/// `_relative_position_bucket(bidirectional=False)`).
inline std::size_t t5_bucket_causal(std::int64_t d, std::size_t n_buckets, std::size_t max_distance = 128) {
    if (d <= 0) return 0;
    const std::size_t max_exact = n_buckets / 2;
    if (std::size_t(d) < max_exact) return std::size_t(d);
    const double v = double(max_exact) + std::log(double(d) / double(max_exact)) /
                                             std::log(double(max_distance) / double(max_exact)) *
                                             double(n_buckets - max_exact);
    return std::min<std::size_t>(n_buckets - 1, std::size_t(v));
}
/// The distance to which t5_bucket_causal is computed exactly; the constant of T5's models.
inline constexpr std::size_t t5_max_distance = 128;

/// Adds the sinusoidal encoding of position p to x[0 .. E).
inline void add_sinusoidal(std::int64_t p, float* x, std::size_t E) {
    for (std::size_t i = 0; 2 * i < E; ++i) {
        const double inv = std::pow(10000.0, -double(2 * i) / double(E));
        const double a = double(p) * inv;
        x[2 * i] += float(std::sin(a));
        if (2 * i + 1 < E) x[2 * i + 1] += float(std::cos(a));
    }
}

} // namespace archetype::layers
