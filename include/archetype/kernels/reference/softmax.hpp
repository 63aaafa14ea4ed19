#pragma once
// Scalar reference twin of kernels/softmax.hpp.
#include <cmath>
#include <cstddef>
#include <limits>

namespace archetype::kernels::reference {

/// softmax(scale * x) in place; an all -inf row gives zeros.
inline void softmax_scaled(float* x, std::size_t n, float scale) noexcept {
    float m = -std::numeric_limits<float>::infinity();
    for (std::size_t i = 0; i < n; ++i) m = x[i] * scale > m ? x[i] * scale : m;
    if (m == -std::numeric_limits<float>::infinity()) {
        for (std::size_t i = 0; i < n; ++i) x[i] = 0.f;
        return;
    }
    double s = 0;
    for (std::size_t i = 0; i < n; ++i) { x[i] = std::exp(x[i] * scale - m); s += x[i]; }
    const float inv = float(1.0 / s);
    for (std::size_t i = 0; i < n; ++i) x[i] *= inv;
}

inline void softmax(float* x, std::size_t n) noexcept { softmax_scaled(x, n, 1.f); }

} // namespace archetype::kernels::reference
