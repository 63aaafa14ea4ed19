#pragma once
// The batch engine's weight repacking: 32 decoded rows at a time into k-group-major
// panels (zmm j of a 16-row panel holds bytes 4j..4j+3 of each row), from the row
// layout or the x16 interleaved layout.
#include "archetype/kernels/quant/avx512/level.hpp"
#if defined(ARCHETYPE_QUANT_VNNI)

#include <immintrin.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "archetype/kernels/quant/avx512/activations.hpp"
#include "archetype/kernels/quant/interleaved.hpp"

namespace archetype::quant::vnni::detail {

inline constexpr std::size_t group_rows = 32; // two 16-row panels per group
inline constexpr std::size_t prefetch_distance = 4096;

/// 16x16 transpose of 32-bit lanes: out[j] lane i = in[i] lane j.
inline void transpose16(__m512i r[16]) noexcept {
    __m512i t[16], u[16];
    for (int i = 0; i < 8; ++i) {
        t[2 * i] = _mm512_unpacklo_epi32(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm512_unpackhi_epi32(r[2 * i], r[2 * i + 1]);
    }
    for (int i = 0; i < 4; ++i) {
        u[4 * i + 0] = _mm512_unpacklo_epi64(t[4 * i], t[4 * i + 2]);
        u[4 * i + 1] = _mm512_unpackhi_epi64(t[4 * i], t[4 * i + 2]);
        u[4 * i + 2] = _mm512_unpacklo_epi64(t[4 * i + 1], t[4 * i + 3]);
        u[4 * i + 3] = _mm512_unpackhi_epi64(t[4 * i + 1], t[4 * i + 3]);
    }
    // u[4g + q] 128-bit lane L = rows 4g..4g+3 of dword 4L + q
    for (int q = 0; q < 4; ++q) {
        const __m512i v0 = _mm512_shuffle_i32x4(u[q], u[4 + q], _MM_SHUFFLE(1, 0, 1, 0));
        const __m512i v1 = _mm512_shuffle_i32x4(u[q], u[4 + q], _MM_SHUFFLE(3, 2, 3, 2));
        const __m512i v2 = _mm512_shuffle_i32x4(u[8 + q], u[12 + q], _MM_SHUFFLE(1, 0, 1, 0));
        const __m512i v3 = _mm512_shuffle_i32x4(u[8 + q], u[12 + q], _MM_SHUFFLE(3, 2, 3, 2));
        r[0 + q] = _mm512_shuffle_i32x4(v0, v2, _MM_SHUFFLE(2, 0, 2, 0));
        r[4 + q] = _mm512_shuffle_i32x4(v0, v2, _MM_SHUFFLE(3, 1, 3, 1));
        r[8 + q] = _mm512_shuffle_i32x4(v1, v3, _MM_SHUFFLE(2, 0, 2, 0));
        r[12 + q] = _mm512_shuffle_i32x4(v1, v3, _MM_SHUFFLE(3, 1, 3, 1));
    }
}

/// Packed group: per slice, 2 panels x 16 k-group vectors of u, then
/// 2 panels x nsb scale vectors, then (min types) 2 panels x nsb min vectors.
template <class D>
struct packed_layout {
    static constexpr int sub = sub_traits<D>::sub, zero = sub_traits<D>::zero;
    static constexpr std::size_t nsb = 64 / sub;
    static constexpr std::size_t u_bytes = 2 * 16 * 64;
    static constexpr std::size_t slice_bytes = u_bytes + 2 * nsb * 64 * (zero ? 1 : 2);
};

/// Decodes rows [r0, r0 + 32) (clamped to rows - 1) and packs them; tmp holds
/// 32 rows of n_slices * 64 bytes (row order, sequential reads of the weights).
template <class D>
inline void pack_group(const std::uint8_t* W, std::size_t row_bytes, std::size_t rows, std::size_t r0,
                       std::size_t n_blocks, std::size_t n_slices, std::uint8_t* tmp, std::uint8_t* out) noexcept {
    using P = packed_layout<D>;
    const std::size_t n_units = n_slices / D::slices;
    const std::size_t rs = n_slices * 64;
    const std::size_t unit_bytes = is_k<D> ? D::bytes : 2 * D::bytes;
    for (std::size_t r = 0; r < group_rows; ++r) {
        const std::uint8_t* row = W + std::min(r0 + r, rows - 1) * row_bytes;
        const std::size_t panel = r / 16, lane = r % 16;
        for (std::size_t unit = 0; unit < n_units; ++unit) {
            // The group's rows are one contiguous range read front to back: prefetch
            // a few KiB ahead so the single stream keeps enough misses in flight
            // (a prefetch past the end of the matrix is harmless).
            const char* ahead = reinterpret_cast<const char*>(row) + unit * unit_bytes + prefetch_distance;
            for (std::size_t o = 0; o < unit_bytes; o += 64) _mm_prefetch(ahead + o, _MM_HINT_T0);
            const typename D::state st = D::prepare(row, unit, n_blocks);
            for (int c = 0; c < D::slices; ++c) {
                const std::size_t p = unit * D::slices + std::size_t(c);
                __m512i u;
                __m512 s, m;
                D::slice(st, c, u, s, m);
                _mm512_store_si512(tmp + r * rs + p * 64, u);
                alignas(64) float sv[16], mv[16];
                _mm512_store_ps(sv, s);
                float* so = reinterpret_cast<float*>(out + p * P::slice_bytes + P::u_bytes);
                for (std::size_t b = 0; b < P::nsb; ++b) so[(panel * P::nsb + b) * 16 + lane] = sv[b * (P::sub / 4)];
                if constexpr (P::zero == 0) {
                    _mm512_store_ps(mv, m);
                    float* mo = so + 2 * P::nsb * 16;
                    for (std::size_t b = 0; b < P::nsb; ++b) mo[(panel * P::nsb + b) * 16 + lane] = mv[b * (P::sub / 4)];
                }
            }
        }
    }
    for (std::size_t p = 0; p < n_slices; ++p)
        for (std::size_t panel = 0; panel < 2; ++panel) {
            __m512i v[16];
            for (std::size_t i = 0; i < 16; ++i) v[i] = _mm512_load_si512(tmp + (panel * 16 + i) * rs + p * 64);
            transpose16(v);
            std::uint8_t* o = out + p * P::slice_bytes + panel * 16 * 64;
            for (std::size_t j = 0; j < 16; ++j) _mm512_store_si512(o + j * 64, v[j]);
        }
}

/// The x16 layout of D's blocks (D = dec_q4_0 or dec_q8_0).
template <class D>
inline constexpr quant::weight_layout x16_layout_of =
    std::is_same_v<D, dec_q8_0> ? quant::weight_layout::q8_0_x16 : quant::weight_layout::q4_0_x16;

/// pack_group's result for rows [r0, r0 + 32) of a Q4_0 or Q8_0 matrix in its x16
/// layout (kernels/quant/interleaved.hpp; rows % 16 == 0): the two 16-row panels
/// are two x16 groups, whose 64-byte quant vectors already hold 4 bytes per row and
/// lane, so each k-group vector is one and (Q4_0 low nibbles), shift and and (high
/// nibbles) or plain copy (Q8_0, stored as q + 128 = pack_group's u) away: no
/// decode into row order, no transpose. A last group of 16 rows packs its panel
/// twice (the second panel's outputs are never stored). Same bytes and scales as
/// pack_group<D> on the row layout, except in the zero block after an odd count
/// (u = 0 here, Q8_0's pack_group has 128 there), which multiplies activations of 0.
template <class D>
inline void pack_group_x16(const std::uint8_t* W, std::size_t rows, std::size_t r0, std::size_t n_blocks,
                           std::size_t n_slices, std::uint8_t* out) noexcept {
    using P = packed_layout<D>;
    constexpr auto& X = quant::x16::of(x16_layout_of<D>);
    const __m512i m4 = _mm512_set1_epi8(0x0F);
    for (std::size_t panel = 0; panel < 2; ++panel) {
        const std::size_t g = std::min(r0 + 16 * panel, rows - 16) / 16;
        const std::uint8_t* G = W + g * X.group_bytes(n_blocks);
        for (std::size_t p = 0; p < n_slices; ++p) {
            std::uint8_t* ps = out + p * P::slice_bytes;
            for (std::size_t h = 0; h < 2; ++h) {
                const std::size_t b = 2 * p + h;
                std::uint8_t* o = ps + (panel * 16 + 8 * h) * 64; // k-groups 8h .. 8h + 7 of the slice
                float* so = reinterpret_cast<float*>(ps + P::u_bytes) + (panel * P::nsb + h) * 16;
                if (b >= n_blocks) { // the zero block after an odd count: u = 0, scale 0
                    for (int j = 0; j < 8; ++j) _mm512_store_si512(o + 64 * j, _mm512_setzero_si512());
                    _mm512_store_ps(so, _mm512_setzero_ps());
                    continue;
                }
                const std::uint8_t* blk = G + b * X.group_block_bytes();
                for (std::size_t o2 = 0; o2 < X.group_block_bytes(); o2 += 64)
                    _mm_prefetch(reinterpret_cast<const char*>(blk) + prefetch_distance + o2, _MM_HINT_T0);
                if constexpr (std::is_same_v<D, dec_q8_0>) {
                    for (int t = 0; t < 8; ++t)
                        _mm512_store_si512(o + 64 * t, _mm512_loadu_si512(blk + quant::x16::scales_bytes + 64 * t));
                } else {
                    for (int t = 0; t < 4; ++t) {
                        const __m512i v = _mm512_loadu_si512(blk + quant::x16::scales_bytes + 64 * t);
                        _mm512_store_si512(o + 64 * t, _mm512_and_si512(v, m4));                             // elements 4t..
                        _mm512_store_si512(o + 64 * (4 + t), _mm512_and_si512(_mm512_srli_epi16(v, 4), m4)); // 16 + 4t..
                    }
                }
                _mm512_store_ps(so, _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk))));
            }
        }
    }
}


} // namespace archetype::quant::vnni::detail

#endif
