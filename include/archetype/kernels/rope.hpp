#pragma once
// Rotary position embedding applied in place to n_heads heads of one token.
// The kernel knows no model: the caller (the RoPE policy) precomputes cos/sin of
// the n_rot/2 rotation angles for this position (base, scaling, YaRN live there).
// Pairing: `adjacent` rotates (x[2i], x[2i+1]) (GGUF llama, ggml mode 0);
// `neox` rotates (x[i], x[i + n_rot/2]) (ggml NeoX mode, HF layout).
// Dimensions past n_rot are left unchanged.
// SCALAR PLACEHOLDER BODY (vectorised by the kernels issue, same signature).
#include <cstddef>

namespace archetype::kernels {

enum class rope_pairing { adjacent, neox };

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

} // namespace archetype::kernels
