#pragma once
// Scalar reference twins of kernels/norm.hpp (double accumulation).
#include <cmath>
#include <cstddef>

namespace archetype::kernels::reference {

/// y = x / sqrt(mean(x^2) + eps) * w
inline void rms_norm(const float* x, const float* w, float* y, std::size_t n, float eps) noexcept {
    double ss = 0;
    for (std::size_t i = 0; i < n; ++i) ss += double(x[i]) * x[i];
    const float scale = float(1.0 / std::sqrt(ss / double(n) + eps));
    for (std::size_t i = 0; i < n; ++i) y[i] = x[i] * scale * (w ? w[i] : 1.f);
}

/// y = (x - mean) / sqrt(var + eps) * w + b
inline void layer_norm(const float* x, const float* w, const float* b, float* y, std::size_t n,
                       float eps) noexcept {
    double s = 0;
    for (std::size_t i = 0; i < n; ++i) s += x[i];
    const float mean = float(s / double(n));
    double v = 0;
    for (std::size_t i = 0; i < n; ++i) v += double(x[i] - mean) * (x[i] - mean);
    const float scale = float(1.0 / std::sqrt(v / double(n) + eps));
    for (std::size_t i = 0; i < n; ++i)
        y[i] = (x[i] - mean) * scale * (w ? w[i] : 1.f) + (b ? b[i] : 0.f);
}

/// LayerNorm of each of `groups` equal slices of x (RWKV ln_x), then per-element w, b over all n.
inline void group_norm(const float* x, const float* w, const float* b, float* y, std::size_t n,
                       std::size_t groups, float eps) noexcept {
    const std::size_t g = n / groups;
    for (std::size_t k = 0; k < groups; ++k)
        layer_norm(x + k * g, w ? w + k * g : nullptr, b ? b + k * g : nullptr, y + k * g, g, eps);
}

} // namespace archetype::kernels::reference
