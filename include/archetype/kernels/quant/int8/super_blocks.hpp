#pragma once
// The 256-element super-blocks (Q4_K, Q5_K, Q6_K, Q2_K, Q3_K, IQ4_XS) as the int8 GEMM
// tiles take them (avx2/tile_k.hpp, neon/tile_k.hpp): each row's block decoded once per
// call, when the tile packs it, into integers the level's products multiply in their
// panels. Scalar code, the same at every level: it runs once per row and block, beside
// the n_tok products of each value.
//
// kfmt<T>::decode(blk, u, sc, c): the 256 values in element order (unsigned u, or the
// signed values when is_signed), the nsub = 256 / sub sub-block scales sc, and the nsub
// coefficients c of the activations' sums (sums of 32 quants when sub is 32, else of 16):
//     total = sum_k sc_k * (u_k . x_k)  +  fold * corr,     corr = sum_k c_k * sum_k(x)
//     y    += float(total) * d * dx     (+ float(corr) * -(dmin * dx) when min)
// has_corr: there is a corr at all; fold: its factor in total (Q6_K: u = q + 32, -32;
// Q3_K: u = q + 4, -4; 0: none); min: corr has its own step with the fp16 dmin at
// dmin_at. d: the fp16 at d_at (each level converts it with its own f16). max_value:
// the largest |u| (avx2's int16 sums are sized by it).
#include <cstddef>
#include <cstdint>

#include "archetype/core/dtype.hpp"
#include "archetype/kernels/quant/blocks.hpp"
#include "archetype/kernels/quant/ggml_tables.hpp"

namespace archetype::quant::int8 {

template <ggml_type T> struct kfmt;

/// Q4_K / Q5_K: the 8 sub-block scales and mins, packed in 6 bits at blk + 4.
inline void k4_scales_and_mins(const std::uint8_t* blk, std::int16_t* sc, std::int16_t* c) noexcept {
    for (std::size_t j = 0; j < 8; ++j) {
        std::uint8_t s, m;
        scale_min_k4(j, blk + 4, s, m);
        sc[j] = s, c[j] = m;
    }
}

template <> struct kfmt<ggml_type::Q4_K> {
    static constexpr int sub = 32, max_value = 15, fold = 0, d_at = 0, dmin_at = 2;
    static constexpr bool is_signed = false, min = true, has_corr = true;
    static void decode(const std::uint8_t* blk, std::uint8_t* u, std::int16_t* sc, std::int16_t* c) noexcept {
        k4_scales_and_mins(blk, sc, c);
        for (std::size_t e = 0; e < 256; ++e) {
            const std::uint8_t q = blk[16 + 32 * (e / 64) + e % 32];
            u[e] = e % 64 < 32 ? q & 15 : q >> 4;
        }
    }
};
template <> struct kfmt<ggml_type::Q5_K> {
    static constexpr int sub = 32, max_value = 31, fold = 0, d_at = 0, dmin_at = 2;
    static constexpr bool is_signed = false, min = true, has_corr = true;
    static void decode(const std::uint8_t* blk, std::uint8_t* u, std::int16_t* sc, std::int16_t* c) noexcept {
        k4_scales_and_mins(blk, sc, c);
        for (std::size_t e = 0; e < 256; ++e) {
            const std::uint8_t q = blk[48 + 32 * (e / 64) + e % 32];
            const unsigned high = (unsigned(blk[16 + e % 32]) >> (e / 32)) & 1u;
            u[e] = std::uint8_t((e % 64 < 32 ? q & 15 : q >> 4) | high << 4);
        }
    }
};
template <> struct kfmt<ggml_type::Q6_K> { // u = q + 32 (0..63), w = d * sc * (u - 32)
    static constexpr int sub = 16, max_value = 63, fold = -32, d_at = 208, dmin_at = -1;
    static constexpr bool is_signed = false, min = false, has_corr = true;
    static void decode(const std::uint8_t* blk, std::uint8_t* u, std::int16_t* sc, std::int16_t* c) noexcept {
        for (std::size_t k = 0; k < 16; ++k) sc[k] = c[k] = static_cast<std::int8_t>(blk[192 + k]);
        for (std::size_t h = 0; h < 2; ++h)
            for (std::size_t l = 0; l < 32; ++l) {
                const unsigned ql0 = blk[64 * h + l], ql1 = blk[64 * h + 32 + l], qh = blk[128 + 32 * h + l];
                u[128 * h + l] = std::uint8_t((ql0 & 15) | (qh & 3) << 4);
                u[128 * h + 32 + l] = std::uint8_t((ql1 & 15) | ((qh >> 2) & 3) << 4);
                u[128 * h + 64 + l] = std::uint8_t((ql0 >> 4) | ((qh >> 4) & 3) << 4);
                u[128 * h + 96 + l] = std::uint8_t((ql1 >> 4) | ((qh >> 6) & 3) << 4);
            }
    }
};
template <> struct kfmt<ggml_type::Q2_K> { // w = d * (sc & 15) * q - dmin * (sc >> 4)
    static constexpr int sub = 16, max_value = 3, fold = 0, d_at = 80, dmin_at = 82;
    static constexpr bool is_signed = false, min = true, has_corr = true;
    static void decode(const std::uint8_t* blk, std::uint8_t* u, std::int16_t* sc, std::int16_t* c) noexcept {
        for (std::size_t k = 0; k < 16; ++k) sc[k] = blk[k] & 15, c[k] = blk[k] >> 4;
        for (std::size_t h = 0; h < 2; ++h)
            for (std::size_t j = 0; j < 4; ++j)
                for (std::size_t l = 0; l < 32; ++l) u[128 * h + 32 * j + l] = (blk[16 + 32 * h + l] >> (2 * j)) & 3;
    }
};
template <> struct kfmt<ggml_type::Q3_K> { // u = q + 4 (0..7), w = d * (sc - 32) * (u - 4)
    static constexpr int sub = 16, max_value = 7, fold = -4, d_at = 108, dmin_at = -1;
    static constexpr bool is_signed = false, min = false, has_corr = true;
    static void decode(const std::uint8_t* blk, std::uint8_t* u, std::int16_t* sc, std::int16_t* c) noexcept {
        std::uint8_t raw[16];
        q3_K_scales(blk + 96, raw);
        for (std::size_t k = 0; k < 16; ++k) sc[k] = c[k] = std::int16_t(int(raw[k]) - 32);
        for (std::size_t h = 0; h < 2; ++h)
            for (std::size_t j = 0; j < 4; ++j)
                for (std::size_t l = 0; l < 32; ++l)
                    u[128 * h + 32 * j + l] = std::uint8_t(((blk[32 + 32 * h + l] >> (2 * j)) & 3) |
                                                           ((blk[l] >> (4 * h + j)) & 1) << 2);
    }
};
template <> struct kfmt<ggml_type::IQ4_XS> { // signed table values, signed scales ls - 32
    static constexpr int sub = 32, max_value = 127, fold = 0, d_at = 0, dmin_at = -1;
    static constexpr bool is_signed = true, min = false, has_corr = false;
    static void decode(const std::uint8_t* blk, std::uint8_t* u, std::int16_t* sc, std::int16_t* c) noexcept {
        for (std::size_t i = 0; i < 8; ++i) {
            sc[i] = std::int16_t(int(iq4_xs_scale(blk, i)) - 32), c[i] = 0;
            for (std::size_t l = 0; l < 16; ++l) {
                const std::uint8_t q = blk[8 + 16 * i + l];
                u[32 * i + l] = std::uint8_t(ggml_tables::kvalues_iq4nl[q & 15]);
                u[32 * i + 16 + l] = std::uint8_t(ggml_tables::kvalues_iq4nl[q >> 4]);
            }
        }
    }
};

/// The super-block types with a GEMM tile.
template <ggml_type T>
inline constexpr bool k_tiled = T == ggml_type::Q4_K || T == ggml_type::Q5_K || T == ggml_type::Q6_K ||
                                T == ggml_type::Q2_K || T == ggml_type::Q3_K || T == ggml_type::IQ4_XS;

} // namespace archetype::quant::int8
