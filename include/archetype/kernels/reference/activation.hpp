#pragma once
// Scalar reference twins of kernels/activation.hpp: the plain formulas, used by
// the tests as the ground truth for the vectorised versions.
#include <cmath>
#include <cstddef>

namespace archetype::kernels::reference {

inline void silu(float* x, std::size_t n) noexcept {
    for (std::size_t i = 0; i < n; ++i) x[i] = x[i] / (1.f + std::exp(-x[i]));
}
inline void sigmoid(float* x, std::size_t n) noexcept {
    for (std::size_t i = 0; i < n; ++i) x[i] = 1.f / (1.f + std::exp(-x[i]));
}
inline void tanh(float* x, std::size_t n) noexcept {
    for (std::size_t i = 0; i < n; ++i) x[i] = std::tanh(x[i]);
}
inline void exp(float* x, std::size_t n) noexcept {
    for (std::size_t i = 0; i < n; ++i) x[i] = std::exp(x[i]);
}
/// max(x, 0)^2 (RWKV channel mix)
inline void relu_sq(float* x, std::size_t n) noexcept {
    for (std::size_t i = 0; i < n; ++i) x[i] = x[i] > 0.f ? x[i] * x[i] : 0.f;
}
/// GELU, tanh approximation: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
inline void gelu_tanh(float* x, std::size_t n) noexcept {
    constexpr float c = 0.7978845608028654f;
    for (std::size_t i = 0; i < n; ++i)
        x[i] = 0.5f * x[i] * (1.f + std::tanh(c * (x[i] + 0.044715f * x[i] * x[i] * x[i])));
}
/// GELU, exact: 0.5 x (1 + erf(x / sqrt 2))
inline void gelu_erf(float* x, std::size_t n) noexcept {
    for (std::size_t i = 0; i < n; ++i) x[i] = 0.5f * x[i] * (1.f + std::erf(x[i] * 0.7071067811865476f));
}
/// gate[i] = silu(gate[i]) * up[i]  (SwiGLU)
inline void silu_mul(float* gate, const float* up, std::size_t n) noexcept {
    for (std::size_t i = 0; i < n; ++i) gate[i] = gate[i] / (1.f + std::exp(-gate[i])) * up[i];
}

} // namespace archetype::kernels::reference
