#pragma once
// The norm policies at run time over rows: RMSNorm (weight), LayerNorm (weight,
// bias), each of n rows of width `n` (stride ld_x / ld_y; y may alias x).
#include <cstddef>
#include <type_traits>

#include "archetype/kernels/norm.hpp"
#include "archetype/policies/norm.hpp"

namespace archetype::layers {

struct norm_weights {
    const float* w = nullptr; // [n] or null (= 1)
    const float* b = nullptr; // [n] or null (= 0); LayerNorm only
    float eps = 1e-5f;
};

template <class Norm>
void apply_norm(const norm_weights& nw, const float* x, std::size_t ld_x, float* y, std::size_t ld_y,
                std::size_t rows, std::size_t n) noexcept {
    for (std::size_t r = 0; r < rows; ++r) norm_impl<Norm>::apply(x + r * ld_x, nw.w, nw.b, y + r * ld_y, n, nw.eps);
}

} // namespace archetype::layers
