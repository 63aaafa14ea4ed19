#pragma once
// Block dequantisers of ggml's grid types (IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S,
// IQ1_S, IQ1_M; layouts in blocks.hpp, tables in iq_grids.hpp): ggml-quants.c's
// dequantize_row_iq* transcribed, the same float operations in the same order
// (quant/dequantize.hpp's contract), one 256-element block each.
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "archetype/kernels/quant/blocks.hpp"
#include "archetype/kernels/quant/iq_grids.hpp"

namespace archetype::quant::detail {

/// The 8 bytes of grid entry i of a 64-bit grid (little-endian: byte j is element j).
inline const std::uint8_t* grid8(const std::uint64_t* grid, std::size_t i) noexcept {
    return reinterpret_cast<const std::uint8_t*>(grid + i);
}
inline const std::uint8_t* grid4(const std::uint32_t* grid, std::size_t i) noexcept {
    return reinterpret_cast<const std::uint8_t*>(grid + i);
}
inline float sign_of(std::uint8_t signs, std::size_t j) noexcept {
    return signs & iq_grids::kmask_iq2xs[j] ? -1.f : 1.f;
}

inline void dq_iq2_xxs(const std::uint8_t* b, float* y) noexcept {
    const float d = load_f16(b);
    for (std::size_t ib = 0; ib < 8; ++ib) {
        const std::uint8_t* q = b + 2 + 8 * ib;
        const std::uint32_t w = load_u32(q + 4);
        const float db = d * (0.5f + float(w >> 28)) * 0.25f;
        for (unsigned l = 0; l < 4; ++l, y += 8) {
            const std::uint8_t* grid = grid8(iq_grids::iq2xxs_grid, q[l]);
            const std::uint8_t signs = iq_grids::ksigns_iq2xs[(w >> (7 * l)) & 127];
            for (std::size_t j = 0; j < 8; ++j) y[j] = db * float(grid[j]) * sign_of(signs, j);
        }
    }
}
inline void dq_iq2_xs(const std::uint8_t* b, float* y) noexcept {
    const float d = load_f16(b);
    for (std::size_t ib = 0; ib < 8; ++ib) {
        const std::uint8_t sc = b[66 + ib];
        const float db[2] = {d * (0.5f + float(sc & 0xf)) * 0.25f, d * (0.5f + float(sc >> 4)) * 0.25f};
        for (std::size_t l = 0; l < 4; ++l, y += 8) {
            const std::uint16_t q = load_u16(b + 2 + 2 * (4 * ib + l));
            const std::uint8_t* grid = grid8(iq_grids::iq2xs_grid, q & 511);
            const std::uint8_t signs = iq_grids::ksigns_iq2xs[q >> 9];
            for (std::size_t j = 0; j < 8; ++j) y[j] = db[l / 2] * float(grid[j]) * sign_of(signs, j);
        }
    }
}
inline void dq_iq2_s(const std::uint8_t* b, float* y) noexcept {
    const float d = load_f16(b);
    for (std::size_t ib = 0; ib < 8; ++ib) {
        const std::uint8_t sc = b[74 + ib], qh = b[66 + ib];
        const float db[2] = {d * (0.5f + float(sc & 0xf)) * 0.25f, d * (0.5f + float(sc >> 4)) * 0.25f};
        for (unsigned l = 0; l < 4; ++l, y += 8) {
            const float dl = db[l / 2];
            const std::uint8_t* grid = grid8(iq_grids::iq2s_grid, b[2 + 4 * ib + l] | ((unsigned(qh) << (8 - 2 * l)) & 0x300));
            const std::uint8_t signs = b[2 + 32 + 4 * ib + l];
            for (std::size_t j = 0; j < 8; ++j) y[j] = dl * float(grid[j]) * sign_of(signs, j);
        }
    }
}
inline void dq_iq3_xxs(const std::uint8_t* b, float* y) noexcept {
    const float d = load_f16(b);
    for (std::size_t ib = 0; ib < 8; ++ib) {
        const std::uint8_t* qs = b + 2 + 8 * ib;
        const std::uint32_t w = load_u32(b + 2 + 64 + 4 * ib);
        const float db = d * (0.5f + float(w >> 28)) * 0.5f;
        for (unsigned l = 0; l < 4; ++l, y += 8) {
            const std::uint8_t signs = iq_grids::ksigns_iq2xs[(w >> (7 * l)) & 127];
            const std::uint8_t* g1 = grid4(iq_grids::iq3xxs_grid, qs[2 * l]);
            const std::uint8_t* g2 = grid4(iq_grids::iq3xxs_grid, qs[2 * l + 1]);
            for (std::size_t j = 0; j < 4; ++j) {
                y[j] = db * float(g1[j]) * sign_of(signs, j);
                y[j + 4] = db * float(g2[j]) * sign_of(signs, j + 4);
            }
        }
    }
}
inline void dq_iq3_s(const std::uint8_t* b, float* y) noexcept {
    const float d = load_f16(b);
    for (std::size_t ib = 0; ib < 8; ++ib) {
        const std::uint8_t* qs = b + 2 + 8 * ib;
        const unsigned qh = b[66 + ib];
        const float db = d * float(1 + 2 * ((b[106 + ib / 2] >> (4 * (ib % 2))) & 0xf));
        for (unsigned l = 0; l < 4; ++l, y += 8) {
            const std::uint8_t signs = b[74 + 4 * ib + l];
            const std::uint8_t* g1 = grid4(iq_grids::iq3s_grid, qs[2 * l] | ((qh << (8 - 2 * l)) & 256));
            const std::uint8_t* g2 = grid4(iq_grids::iq3s_grid, qs[2 * l + 1] | ((qh << (7 - 2 * l)) & 256));
            for (std::size_t j = 0; j < 4; ++j) {
                y[j] = db * float(g1[j]) * sign_of(signs, j);
                y[j + 4] = db * float(g2[j]) * sign_of(signs, j + 4);
            }
        }
    }
}
inline constexpr float iq1_delta = 0.125f; // ggml's IQ1S_DELTA and IQ1M_DELTA
inline void dq_iq1_s(const std::uint8_t* b, float* y) noexcept {
    const float d = load_f16(b);
    for (std::size_t ib = 0; ib < 8; ++ib) {
        const unsigned qh = load_u16(b + 34 + 2 * ib);
        const float dl = d * float(2 * ((qh >> 12) & 7) + 1);
        const float delta = qh & 0x8000 ? -iq1_delta : iq1_delta;
        for (unsigned l = 0; l < 4; ++l, y += 8) {
            const auto* grid = reinterpret_cast<const std::int8_t*>(
                grid8(iq_grids::iq1s_grid, b[2 + 4 * ib + l] | (((qh >> (3 * l)) & 7) << 8)));
            for (std::size_t j = 0; j < 8; ++j) y[j] = dl * (float(grid[j]) + delta);
        }
    }
}
inline void dq_iq1_m(const std::uint8_t* b, float* y) noexcept {
    const float d = iq1_m_d(b);
    for (std::size_t ib = 0; ib < 8; ++ib) {
        const unsigned sc = load_u16(b + 48 + 2 * (ib / 2));
        const float dl[2] = {d * float(2 * ((sc >> (6 * (ib % 2) + 0)) & 0x7) + 1),
                             d * float(2 * ((sc >> (6 * (ib % 2) + 3)) & 0x7) + 1)};
        for (unsigned l = 0; l < 4; ++l, y += 8) {
            const unsigned qh = b[32 + 2 * ib + l / 2], nib = qh >> (4 * (l % 2));
            const auto* grid = reinterpret_cast<const std::int8_t*>(
                grid8(iq_grids::iq1s_grid, b[4 * ib + l] | ((nib & 7) << 8)));
            const float delta = nib & 0x08 ? -iq1_delta : iq1_delta;
            for (std::size_t j = 0; j < 8; ++j) y[j] = dl[l / 2] * (float(grid[j]) + delta);
        }
    }
}

} // namespace archetype::quant::detail
