#pragma once
// Softmax in place. A row that is entirely -inf (fully masked) gives zeros, never NaN.
// SCALAR PLACEHOLDER BODY (the kernels issue vectorises it, same signature).
#include <cmath>
#include <cstddef>
#include <limits>

namespace archetype::kernels {

inline void softmax(float* x, std::size_t n) noexcept {
    float m = -std::numeric_limits<float>::infinity();
    for (std::size_t i = 0; i < n; ++i) m = x[i] > m ? x[i] : m;
    if (m == -std::numeric_limits<float>::infinity()) {
        for (std::size_t i = 0; i < n; ++i) x[i] = 0.f;
        return;
    }
    float s = 0.f;
    for (std::size_t i = 0; i < n; ++i) { x[i] = std::exp(x[i] - m); s += x[i]; }
    const float inv = 1.f / s;
    for (std::size_t i = 0; i < n; ++i) x[i] *= inv;
}

} // namespace archetype::kernels
