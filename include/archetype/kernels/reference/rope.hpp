#pragma once
// Scalar reference twin of kernels/rope.hpp.
#include <cstddef>

#include "archetype/kernels/rope_pairing.hpp"

namespace archetype::kernels::reference {

inline void rope(float* x, std::size_t n_heads, std::size_t head_stride, std::size_t n_rot,
                 const float* cos, const float* sin, rope_pairing pairing) noexcept {
    const std::size_t half = n_rot / 2;
    for (std::size_t h = 0; h < n_heads; ++h) {
        float* v = x + h * head_stride;
        for (std::size_t i = 0; i < half; ++i) {
            const std::size_t a = pairing == rope_pairing::adjacent ? 2 * i : i;
            const std::size_t b = pairing == rope_pairing::adjacent ? 2 * i + 1 : i + half;
            const float x0 = v[a], x1 = v[b];
            v[a] = x0 * cos[i] - x1 * sin[i];
            v[b] = x0 * sin[i] + x1 * cos[i];
        }
    }
}

} // namespace archetype::kernels::reference
