#pragma once
// Scalar reference twins of kernels/convert.hpp (core/half.hpp element by element).
#include <cstddef>
#include <cstdint>

#include "archetype/core/half.hpp"

namespace archetype::kernels::reference {

inline void f16_to_f32(const std::uint16_t* x, float* y, std::size_t n) noexcept {
    for (std::size_t i = 0; i < n; ++i) y[i] = fp16_to_fp32(x[i]);
}
inline void f32_to_f16(const float* x, std::uint16_t* y, std::size_t n) noexcept {
    for (std::size_t i = 0; i < n; ++i) y[i] = fp32_to_fp16(x[i]);
}
inline void bf16_to_f32(const std::uint16_t* x, float* y, std::size_t n) noexcept {
    for (std::size_t i = 0; i < n; ++i) y[i] = bf16_to_fp32(x[i]);
}
inline void f32_to_bf16(const float* x, std::uint16_t* y, std::size_t n) noexcept {
    for (std::size_t i = 0; i < n; ++i) y[i] = fp32_to_bf16(x[i]);
}

} // namespace archetype::kernels::reference
