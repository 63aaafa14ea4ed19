#pragma once
// Single-token GEMV (decode) for the K types with 16-element sub-blocks and 2-bit
// quant planes, Q2_K and Q3_K, in gemv.hpp's rows16 shape (16 rows, two passes,
// lanes = rows at the end) on AVX-512 VNNI + VBMI + GFNI.
//
// A super-block's 64 bytes of 2-bit quants hold element 128n + 32j + l in bits
// 2j, 2j + 1 of byte 32n + l (n < 2, j < 4, l < 32). So one 64-byte load and, per
// plane j, one GF(2) affine map (an and for j = 0) give 64 quants whose 128-bit
// lanes are exactly the sub-blocks 2j, 2j + 1, 8 + 2j and 9 + 2j, against
// activations laid out once per call to match (split_k16: per super-block and plane, x[32j..32j+31] then
// x[128+32j..128+32j+31]). Q3_K's third bit (hmask[l] bit 4n + j) is added as 4
// where set: u = q + 4 in 0..7, zero point 4. One vpdpbusd per plane and row; the
// per-lane partials go through gemv.hpp's int16 reduction and transpose (all its
// steps fit: 16 * 7 * 127 < 2^15), so a 16-element sub-block sum per lane = row.
//
// The float work per sub-block is gemv16's (and the batch tile's) exactly, the
// sub-blocks taken in order 0..15:
//     Q2_K: acc = fma(float(idot), (d * sc) * dx, acc); acc = fnmadd(dmin * mn, aux, acc)
//     Q3_K: acc = fma(float(idot - 4 * sum(xq)), (d * (sc - 32)) * dx, acc)
// with sc, mn the 4-bit scale and min (Q2_K) or the 6-bit scale (blocks.hpp's
// q3_K_scales), unpacked from 16 rows' records in lanes = rows, so a token gives
// bitwise the same output here as inside a batch (tests/quant asserts it).
#include "archetype/kernels/quant/avx512/gemv.hpp"
#if defined(ARCHETYPE_QUANT_GEMV_VNNI)

#include <immintrin.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace archetype::quant::vnni::gemv {

/// Per super-block [plane 0 | 1 | 2 | 3] (256 bytes) from the plain int8 quants q
/// (n_super * 256 of them).
inline void split_k16(const std::uint8_t* q, std::size_t n_super, std::uint8_t* out) noexcept {
    for (std::size_t u = 0; u < n_super; ++u)
        for (std::size_t j = 0; j < 4; ++j) {
            const __m256i lo = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q + 256 * u + 32 * j));
            const __m256i hi = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q + 256 * u + 128 + 32 * j));
            _mm512_store_si512(out + 256 * u + 64 * j, _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1));
        }
}

/// Scratch bytes rows16_k16 needs for n_super super-blocks per row: the row pairs'
/// partials (4 planes), the 16-byte scale records and Q2_K's d | dmin words.
inline constexpr std::size_t rows16_k16_scratch(std::size_t n_super) noexcept {
    return n_super * (4 * 8 * 64 + 16 * 16 + 16 * 4);
}

/// y[r] for rows [r0, r0 + 16) clipped to rows, Q2_K (Q3 false) or Q3_K rows of
/// n_super super-blocks. xs from split_k16; dx per 32-block, aux per 16-element
/// sub-block (act_layout: Q2_K dx * sum(xq) as a float, Q3_K -4 * sum(xq)); scratch
/// 64-byte aligned, rows16_k16_scratch(n_super) bytes.
template <bool Q3>
inline void rows16_k16(const std::uint8_t* W, std::size_t row_bytes, std::size_t rows, std::size_t r0,
                       std::size_t n_super, const std::uint8_t* xs, const float* dx, const std::uint8_t* aux, float* y,
                       std::uint8_t* scratch) noexcept {
    constexpr std::size_t sbytes = Q3 ? 110 : 84, qs = Q3 ? 32 : 16;
    std::uint8_t* D = scratch;                  // [super][plane][row pair] 64 bytes
    std::uint8_t* S = D + n_super * 4 * 8 * 64; // [super][row] 16 bytes: the scales (Q3_K: then d)
    std::uint8_t* H = S + n_super * 16 * 16;    // Q2_K: [super][row] d | dmin << 16
    const __m512i m3 = _mm512_set1_epi8(3), four = _mm512_set1_epi8(4), zero = _mm512_setzero_si512();
    __m512i sel[4]; // Q3_K: hmask bit j (bytes 0-31) and 4 + j (bytes 32-63)
    for (int j = 0; j < 4; ++j)
        sel[j] = _mm512_inserti64x4(_mm512_set1_epi8(static_cast<char>(1 << j)),
                                    _mm256_set1_epi8(static_cast<char>(1 << (4 + j))), 1);
    __m512i plane[4]; // gf2p8affine matrices: result bit 0 <- bit 2j, bit 1 <- bit 2j + 1
    for (int j = 0; j < 4; ++j)
        plane[j] = _mm512_set1_epi64(static_cast<long long>((std::uint64_t(1) << (2 * j)) << 56 | (std::uint64_t(2) << (2 * j)) << 48));
    auto dots = [&](const std::uint8_t* sb, const __m512i x[4], __m512i out[4]) {
        const __m512i v = _mm512_loadu_si512(sb + qs);
        __m512i hm = zero;
        if constexpr (Q3) hm = _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(sb)));
        for (int j = 0; j < 4; ++j) {
            // bits 2j, 2j + 1 of each byte to bits 0, 1: one GF(2) affine map instead
            // of a shift and an and (per CPU-second, 1024 x 4096: Q2_K 18.5 -> 20.2 GB/s,
            // Q3_K 24.8 -> 25.5)
            __m512i u = j == 0 ? _mm512_and_si512(v, m3) : _mm512_gf2p8affine_epi64_epi8(v, plane[j], 0);
            if constexpr (Q3) u = _mm512_mask_add_epi8(u, _mm512_test_epi8_mask(hm, sel[j]), u, four);
            out[j] = _mm512_dpbusd_epi32(zero, u, x[j]);
        }
    };
    auto record = [&](const std::uint8_t* sb, std::size_t u, std::size_t r) {
        if constexpr (Q3) // scales (12 bytes) and d: bytes 96-109, masked (the block ends at 110)
            _mm_store_si128(reinterpret_cast<__m128i*>(S + (u * 16 + r) * 16), _mm_maskz_loadu_epi8(0x3FFF, sb + 96));
        else {
            _mm_store_si128(reinterpret_cast<__m128i*>(S + (u * 16 + r) * 16), _mm_loadu_si128(reinterpret_cast<const __m128i*>(sb)));
            std::memcpy(H + (u * 16 + r) * 4, sb + 80, 4);
        }
    };
    const char* pf = walk_row_pairs(W, row_bytes, rows, r0, n_super, sbytes, // gemv.hpp's first pass
                                    [&](const std::uint8_t* pa, const std::uint8_t* pb, std::size_t u, std::size_t i) {
        record(pa, u, 2 * i);
        record(pb, u, 2 * i + 1);
        __m512i x[4], a[4], b[4];
        for (int j = 0; j < 4; ++j) x[j] = _mm512_load_si512(xs + 256 * u + 64 * j);
        dots(pa, x, a);
        dots(pb, x, b);
        for (std::size_t j = 0; j < 4; ++j)
            _mm512_store_si512(D + ((u * 4 + j) * 8 + i) * 64, detail::reduce_pair<2>(a[j], b[j]));
    });
    __m512 acc = _mm512_setzero_ps();
    const __m512i ff = _mm512_set1_epi32(0xFF), m4 = _mm512_set1_epi32(15), m2 = _mm512_set1_epi32(3);
    for (std::size_t u = 0; u < n_super; ++u) {
        // The fold reads no weights (and is a third of the time here): keep the DRAM
        // stream moving meanwhile, as rows16's fold does, 2 * fold_ahead bytes per
        // super-block (from DRAM, 2 threads, best of 2 rounds, 4096 x 4096 / 5632 x 2048:
        // Q2_K 14.0 / 18.4 -> 15.8 / 19.5 GB/s, Q3_K 16.6 / 21.5 -> 18.1 / 23.8; 4 *
        // fold_ahead measured the same)
        for (std::size_t o = 0; o < 2 * fold_ahead; o += 64) _mm_prefetch(pf + o, _MM_HINT_T1);
        pf += 2 * fold_ahead;
        // t[q] lane r: dword q of row r's record
        __m512i t[4];
        detail::transpose_records(S + u * 16 * 16, t);
        __m512 d, dmin = _mm512_setzero_ps();
        if constexpr (Q3) d = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(t[3]));
        else {
            const __m512i h = _mm512_load_si512(H + u * 64);
            d = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(h));
            dmin = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(_mm512_srli_epi32(h, 16)));
        }
        __m512i is[4][4]; // is[j][L] lane r: sub-block of plane j, lane L (above)
        for (std::size_t j = 0; j < 4; ++j) {
            __m512i c[8];
            for (std::size_t i = 0; i < 8; ++i) c[i] = _mm512_load_si512(D + ((u * 4 + j) * 8 + i) * 64);
            detail::reduce_transpose16<2>(c, is[j]);
        }
        // unrolled: the shifts become immediates and is[][] stays in registers (the
        // rolled loop indexed it on the stack; per CPU-second, 1024 x 4096, Q2_K 17.9
        // -> 18.5 GB/s, Q3_K 22.2 -> 25.0)
#pragma GCC unroll 16
        for (unsigned k = 0; k < 16; ++k) {
            const std::size_t sb = 16 * u + k;
            __m512i ib = is[(k % 8) / 2][(k / 8) * 2 + k % 2];
            __m512 s;
            if constexpr (Q3) {
                // q3_K_scales: low 4 bits from byte k % 8 (nibble k / 8), high 2 from byte 8 + k % 4
                const __m512i low = _mm512_and_si512(_mm512_srli_epi32(t[(k % 8) / 4], 8 * (k % 4) + 4 * (k / 8)), m4);
                const __m512i high = _mm512_and_si512(_mm512_srli_epi32(t[2], 8 * (k % 4) + 2 * (k / 4)), m2);
                const __m512i sc = _mm512_or_si512(low, _mm512_slli_epi32(high, 4));
                s = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_sub_epi32(sc, _mm512_set1_epi32(32))), d);
                std::int32_t z;
                std::memcpy(&z, aux + 4 * sb, 4);
                ib = _mm512_add_epi32(ib, _mm512_set1_epi32(z));
            } else {
                const __m512i sc = _mm512_and_si512(_mm512_srli_epi32(t[k / 4], 8 * (k % 4)), ff);
                s = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_and_si512(sc, m4)), d);
            }
            acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(ib), _mm512_mul_ps(s, _mm512_set1_ps(dx[sb / 2])), acc);
            if constexpr (!Q3) {
                const __m512i sc = _mm512_and_si512(_mm512_srli_epi32(t[k / 4], 8 * (k % 4) + 4), m4);
                const __m512 m = _mm512_mul_ps(_mm512_cvtepi32_ps(sc), dmin);
                float a;
                std::memcpy(&a, aux + 4 * sb, 4);
                acc = _mm512_fnmadd_ps(m, _mm512_set1_ps(a), acc);
            }
        }
    }
    const std::size_t nr = std::min<std::size_t>(16, rows - r0);
    _mm512_mask_storeu_ps(y + r0, __mmask16((1u << nr) - 1u), acc);
}

} // namespace archetype::quant::vnni::gemv

#endif
