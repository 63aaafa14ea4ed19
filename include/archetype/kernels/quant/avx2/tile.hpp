#pragma once
// The int8 GEMM of the AVX2 and AVX-VNNI levels: a register tile of 4 tokens x 8 rows (an
// octet) for the batches of the 32-element formats (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL,
// MXFP4; the K super-blocks: tile_k.hpp), avx512/tile.hpp's shape on 8 lanes. The
// activations are the row engine's (int8/activations.hpp: quantised once per call,
// ggml's rounding); the weights of each octet are repacked once per call into "k-group
// major" panels: ymm j holds bytes 4j..4j+3 of each row's block values
// (fmt<T>::values), so the products of one broadcast 4-byte activation group with a
// panel advance 8 outputs by 4 elements. Each fp32 lane of an accumulator is one output
// (row, token): no horizontal sums. Per block the octet's 8 panels stay in registers
// while the tile's tokens pass; groups of 4 octets run each token tile in turn, its
// activations then in L1, and are split over the threads (int8/tile_groups.hpp).
//
// The integers: per block and output the exact dot of the 32 weights with the 32 int8
// activations,
//     total = values . x - zero * sum32          (Q8_0, IQ4_NL, MXFP4: v . x; zero = 0)
// by vpmaddubsw (+ int16 sums while they cannot overflow, then vpmaddwd) at `avx2`, and
// by vpdpbusd at `avxvnni` (the signed formats there enter as v + 128, u . x minus
// 128 * sum32: the same integer). Then per block, in this order:
//     acc = fma(float(total), dw * dx, acc)
//     acc = fma(m, s, acc)                         (Q4_1, Q5_1: the stored min, Q8_1's s)
// int8/row_dot.hpp's single-token row dot takes the same steps for these formats
// (dot_rows_block_totals), so a token's outputs are bitwise the same whether it runs
// alone, in a batch, in a tile of any size or on any thread count.
#include "archetype/kernels/quant/avx2/engine.hpp"
#include "archetype/kernels/quant/avx2/tile_k.hpp"
#if defined(ARCHETYPE_QUANT_AVX2)

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "archetype/core/thread_pool.hpp"
#include "archetype/kernels/quant/blocks.hpp"
#include "archetype/kernels/quant/int8/activations.hpp"
#include "archetype/kernels/quant/int8/tile_groups.hpp"

namespace archetype::quant::avx2 {

namespace tile {

/// The formats with a tile: the 32-element ones here, the K super-blocks in tile_k.hpp.
template <ggml_type T>
inline constexpr bool tiled32 = T == ggml_type::Q8_0 || T == ggml_type::Q4_0 || T == ggml_type::Q4_1 ||
                                T == ggml_type::Q5_0 || T == ggml_type::Q5_1 || T == ggml_type::IQ4_NL ||
                                T == ggml_type::MXFP4;
template <ggml_type T>
inline constexpr bool tiled = tiled32<T> || k_tiled<T>;

/// Batches of at least this many tokens take the tile (fewer: the row engine, whose
/// results are bitwise the same; the tile repacks the rows once per call).
inline constexpr std::size_t min_tokens = 4;

/// The weight scale of a block: fp16 d, or MXFP4's E8M0 exponent (halved: the table
/// holds the values doubled).
template <ggml_type T>
inline float block_scale(const std::uint8_t* blk) noexcept {
    if constexpr (T == ggml_type::MXFP4) return e8m0_to_fp32_half(blk[0]);
    else {
        std::uint16_t h;
        std::memcpy(&h, blk, 2);
        return _cvtsh_ss(h);
    }
}

/// How a level's products P meet format F in the tile.
template <class P, class F>
struct tile_products {
    /// Signed values enter vpdpbusd as v + 128 (v ^ 0x80): the zero point 128 then.
    static constexpr bool offset = P::dpbusd && F::is_signed;
    static constexpr int zero = offset ? 128 : F::zero;
    /// AVX2: how many vpmaddubsw results (each at most 2 * max_value * 127) one int16
    /// lane sums before vpmaddwd widens them: the block's 8 k-groups in chunks of this.
    static constexpr int chunk = [] {
        const int per = 2 * F::max_value * 127, n = 32767 / per;
        return n >= 8 ? 8 : n >= 4 ? 4 : n >= 2 ? 2 : 1;
    }();
};

/// Bytes of one block of a packed octet (8 rows): 8 k-groups x 32 bytes of values, the 8
/// rows' float scales dw, (min formats) their float mins.
template <class F>
inline constexpr std::size_t block_bytes = 256 + 32 + (F::min_at >= 0 ? 32 : 0);

/// Packs the octet of rows [r0, r0 + nr) (nr <= 8; the other rows zero), nb blocks each.
template <class P, ggml_type T>
inline void pack_octet(const std::uint8_t* W, std::size_t row_bytes, std::size_t r0, std::size_t nr,
                       std::size_t nb, std::uint8_t* pk) noexcept {
    using F = fmt<T, P>;
    constexpr auto tr = traits_of(T);
    constexpr std::size_t bb = block_bytes<F>;
    alignas(32) std::uint8_t vals[32];
    for (std::size_t b = 0; b < nb; ++b) {
        std::uint8_t* pb = pk + b * bb;
        auto* dw = reinterpret_cast<float*>(pb + 256);
        auto* mn = reinterpret_cast<float*>(pb + 256 + 32);
        for (std::size_t r = 0; r < 8; ++r) {
            if (r < nr) {
                const std::uint8_t* blk = W + (r0 + r) * row_bytes + b * tr.type_size;
                __m256i u = F::values(blk);
                if constexpr (tile_products<P, F>::offset) u = _mm256_xor_si256(u, _mm256_set1_epi8(char(0x80)));
                _mm256_store_si256(reinterpret_cast<__m256i*>(vals), u);
                dw[r] = block_scale<T>(blk);
                if constexpr (F::min_at >= 0) mn[r] = block_scale<ggml_type::F16>(blk + F::min_at);
            } else {
                std::memset(vals, 0, 32);
                dw[r] = 0.f;
                if constexpr (F::min_at >= 0) mn[r] = 0.f;
            }
            for (std::size_t kg = 0; kg < 8; ++kg) std::memcpy(pb + kg * 32 + r * 4, vals + 4 * kg, 4);
        }
    }
}

/// The stores of a tile: the nr (<= 8) valid lanes of v at out.
inline void store_rows(float* out, __m256 v, std::size_t nr) noexcept {
    if (nr >= 8) {
        _mm256_storeu_ps(out, v);
    } else {
        alignas(32) float tmp[8];
        _mm256_store_ps(tmp, v);
        std::copy(tmp, tmp + nr, out);
    }
}

/// y[t * ldy + i] for NT tokens (a[0..NT)) x the nr valid rows of a packed octet. Per
/// block the octet's 8 k-group panels stay in registers for the NT tokens.
template <class P, ggml_type T, int NT>
inline void run_tile(const std::uint8_t* pk, std::size_t nb, const int8::act_row* a, float* y, std::size_t ldy,
                     std::size_t nr) noexcept {
    using F = fmt<T, P>;
    using TP = tile_products<P, F>;
    constexpr std::size_t bb = block_bytes<F>;
    __m256 acc[NT];
    for (int t = 0; t < NT; ++t) acc[t] = _mm256_setzero_ps();
    const __m256i ones16 = _mm256_set1_epi16(1);
    for (std::size_t b = 0; b < nb; ++b) {
        const std::uint8_t* pb = pk + b * bb;
        __m256i w[8];
        for (std::size_t kg = 0; kg < 8; ++kg) {
            w[kg] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(pb + kg * 32));
            if constexpr (!P::dpbusd && F::is_signed) w[kg] = _mm256_sign_epi8(w[kg], w[kg]); // |v|
        }
        const __m256 dw = _mm256_loadu_ps(reinterpret_cast<const float*>(pb + 256));
        for (int t = 0; t < NT; ++t) {
            const std::int8_t* xq = a[t].q + 32 * b;
            __m256i total;
            if constexpr (P::dpbusd) {
                total = TP::zero ? _mm256_set1_epi32(-TP::zero * a[t].sum32[b]) : _mm256_setzero_si256();
                for (std::size_t kg = 0; kg < 8; ++kg) total = P::dpbusd_acc(total, w[kg], detail::bcast4(xq + 4 * kg));
            } else {
                total = _mm256_setzero_si256();
                for (std::size_t c = 0; c < 8; c += std::size_t(TP::chunk)) {
                    __m256i part = _mm256_setzero_si256();
                    for (std::size_t kg = c; kg < c + std::size_t(TP::chunk); ++kg) {
                        __m256i xb = detail::bcast4(xq + 4 * kg);
                        if constexpr (F::is_signed) // v . x = |v| . sign(x, v)
                            xb = _mm256_sign_epi8(xb, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(pb + kg * 32)));
                        part = _mm256_add_epi16(part, _mm256_maddubs_epi16(w[kg], xb));
                    }
                    total = _mm256_add_epi32(total, _mm256_madd_epi16(part, ones16));
                }
                if constexpr (TP::zero != 0) total = _mm256_add_epi32(total, _mm256_set1_epi32(-TP::zero * a[t].sum32[b]));
            }
            acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(total), _mm256_mul_ps(dw, _mm256_set1_ps(a[t].d[b])), acc[t]);
        }
        if constexpr (F::min_at >= 0) {
            const __m256 m = _mm256_loadu_ps(reinterpret_cast<const float*>(pb + 256 + 32));
            for (int t = 0; t < NT; ++t) acc[t] = _mm256_fmadd_ps(m, _mm256_set1_ps(a[t].s[b]), acc[t]);
        }
    }
    for (int t = 0; t < NT; ++t) store_rows(y + std::size_t(t) * ldy, acc[t], nr);
}

/// run_tile for the last n < NT tokens.
template <class P, ggml_type T, int NT>
inline void run_tail(const std::uint8_t* pk, std::size_t nb, const int8::act_row* a, float* y, std::size_t ldy,
                     std::size_t nr, int n) noexcept {
    if constexpr (NT > 0) {
        if (n == NT) run_tile<P, T, NT>(pk, nb, a, y, ldy, nr);
        else run_tail<P, T, NT - 1>(pk, nb, a, y, ldy, nr, n);
    }
}

/// Octets per group: the rows packed together, each token tile run over all of them while
/// its activations are in L1.
inline constexpr std::size_t group_octets = 4;
/// Tokens per tile.
inline constexpr int tile_tokens = 4;

/// y[k * ldy + r] = row r of W (rows x cols of type T, row layout) . token k, for the
/// n_tok tokens of acts.
template <class P, ggml_type T>
inline void gemm(const std::uint8_t* W, std::size_t rows, std::size_t cols, const int8::act_buffer& acts,
                 std::size_t n_tok, float* y, std::size_t ldy, thread_pool* pool) {
    constexpr auto tr = traits_of(T);
    constexpr int NT = tile_tokens;
    const std::size_t nb = cols / tr.block_size, row_bytes = nb * tr.type_size;
    if constexpr (tiled32<T>) {
        int8::gemm_groups<8, group_octets, NT>(
            W, rows, nb, row_bytes, nb * block_bytes<fmt<T, P>>, acts, n_tok, y, ldy, pool, pack_octet<P, T>,
            [](const std::uint8_t* pk, std::size_t n_b, const int8::act_row* a, float* yy, std::size_t l,
               std::size_t nr, int n) {
                if (n == NT) run_tile<P, T, NT>(pk, n_b, a, yy, l, nr);
                else run_tail<P, T, NT - 1>(pk, n_b, a, yy, l, nr, n);
            });
    } else { // both levels: vpmaddwd multiplies by the sub-block scales
        int8::gemm_groups<8, group_octets, NT>(
            W, rows, nb, row_bytes, nb * kblock_bytes<kfmt<T>, 1>, acts, n_tok, y, ldy, pool, kpack_group<T, 1>,
            [](const std::uint8_t* pk, std::size_t n_b, const int8::act_row* a, float* yy, std::size_t l,
               std::size_t nr, int n) {
                if (n == NT) run_ktile<T, 1, NT>(pk, n_b, a, yy, l, nr);
                else run_ktail<T, 1, NT - 1>(pk, n_b, a, yy, l, nr, n);
            });
    }
}

} // namespace tile

/// The row engine (basic_engine) with the tile for batches: int8/row_gemv.hpp calls
/// gemm<T> for a batch of a format with tiles<T>, and int8/row_dot.hpp sums those
/// formats' blocks to one integer per row (block_totals) for a single token.
template <class P>
struct tiled_engine : basic_engine<P> {
    template <ggml_type T> static constexpr bool tiles = tile::tiled<T>;
    static constexpr std::size_t tile_min_tokens = tile::min_tokens;

    /// out[r] = the sum of the 8 int32 lanes of d[r], r < 4.
    static void block_totals(const __m256i* d, std::int32_t* out) noexcept {
        const __m256i ab = _mm256_hadd_epi32(d[0], d[1]), cd = _mm256_hadd_epi32(d[2], d[3]);
        const __m256i abcd = _mm256_hadd_epi32(ab, cd); // per 128-bit half: a, b, c, d
        const __m128i s = _mm_add_epi32(_mm256_castsi256_si128(abcd), _mm256_extracti128_si256(abcd, 1));
        _mm_storeu_si128(reinterpret_cast<__m128i*>(out), s);
    }

    template <ggml_type T>
    static void gemm(const std::uint8_t* W, std::size_t rows, std::size_t cols, const int8::act_buffer& acts,
                     std::size_t n_tok, float* y, std::size_t ldy, thread_pool* pool) {
        tile::gemm<P, T>(W, rows, cols, acts, n_tok, y, ldy, pool);
    }
};

using engine = tiled_engine<madd_products>;

} // namespace archetype::quant::avx2

#endif
