#pragma once
// The int8 GEMM of the aarch64 levels, `neon` and `neon_dotprod`: a register tile of 4
// tokens x 8 rows (an octet: two quads of 4 rows, one float32x4 each) for the batches of
// the 32-element formats (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL, MXFP4; the K
// super-blocks: tile_k.hpp), avx2/tile.hpp's shape on 4-lane registers. The activations
// are the row engine's (int8/activations.hpp: quantised once per call, ggml's rounding);
// the weights of each octet are repacked once per call into avx512/tile.hpp's "k-group
// major" panels, byte for byte avx2/tile.hpp's octets: the 16 bytes at 32 kg + 16 q
// hold bytes 4kg..4kg+3 of rows 4q..4q+3 (fmt<T>::values: u = w + zero, or the signed
// table values), so the products of one 4-byte activation group with a panel advance 4
// outputs by 4 elements (tile_products.hpp: sdot by element at `neon_dotprod`, smull +
// sadalp at `neon`). Each fp32 lane of an accumulator is one output (row, token): no
// horizontal sums. Per block and quad the 8 panels stay in registers while the tile's
// tokens pass; groups of 4 octets run each token tile in turn, its activations then in
// L1, and are split over the threads (int8/tile_groups.hpp).
//
// The integers: per block and output the exact dot of the 32 weights with the 32 int8
// activations,
//     total = values . x - zero * sum32          (Q8_0, IQ4_NL, MXFP4: v . x; zero = 0)
// then per block, in this order:
//     acc = fma(float(total), dw * dx, acc)
//     acc = fma(m, s, acc)                         (Q4_1, Q5_1: the stored min, Q8_1's s)
// int8/row_dot.hpp's single-token row dot takes the same steps for these formats
// (dot_rows_block_totals), so a token's outputs are bitwise the same whether it runs
// alone, in a batch, in a tile of any size or on any thread count, and the same at
// `neon` and `neon_dotprod` (the same integers).
#include "archetype/kernels/quant/neon/engine.hpp"
#include "archetype/kernels/quant/neon/tile_k.hpp"
#include "archetype/kernels/quant/neon/tile_products.hpp"
#if defined(ARCHETYPE_QUANT_NEON)

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "archetype/core/thread_pool.hpp"
#include "archetype/kernels/quant/blocks.hpp"
#include "archetype/kernels/quant/int8/activations.hpp"
#include "archetype/kernels/quant/int8/tile_groups.hpp"

namespace archetype::quant::neon {

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
/// holds the values doubled), as int8/row_dot.hpp reads it.
template <ggml_type T>
inline float block_scale(const std::uint8_t* blk) noexcept {
    if constexpr (T == ggml_type::MXFP4) return e8m0_to_fp32_half(blk[0]);
    else return basic_engine::f16(blk);
}

/// Bytes of one block of a packed octet: 8 k-groups x 32 bytes of values, the 8 rows'
/// float scales dw, (min formats) their float mins.
template <class F>
inline constexpr std::size_t block_bytes = 256 + 32 + (F::min_at >= 0 ? 32 : 0);

/// Packs the octet of rows [r0, r0 + nr) (nr <= 8; the other rows zero), nb blocks each.
template <ggml_type T>
inline void pack_octet(const std::uint8_t* W, std::size_t row_bytes, std::size_t r0, std::size_t nr,
                       std::size_t nb, std::uint8_t* pk) noexcept {
    using F = fmt<T>;
    constexpr auto tr = traits_of(T);
    constexpr std::size_t bb = block_bytes<F>;
    std::int8_t vals[32];
    for (std::size_t b = 0; b < nb; ++b) {
        std::uint8_t* pb = pk + b * bb;
        auto* dw = reinterpret_cast<float*>(pb + 256);
        auto* mn = reinterpret_cast<float*>(pb + 256 + 32);
        for (std::size_t r = 0; r < 8; ++r) {
            if (r < nr) {
                const std::uint8_t* blk = W + (r0 + r) * row_bytes + b * tr.type_size;
                int8x16_t lo, hi;
                F::values(blk, lo, hi);
                vst1q_s8(vals, lo);
                vst1q_s8(vals + 16, hi);
                dw[r] = block_scale<T>(blk);
                if constexpr (F::min_at >= 0) mn[r] = basic_engine::f16(blk + F::min_at);
            } else {
                std::memset(vals, 0, 32);
                dw[r] = 0.f;
                if constexpr (F::min_at >= 0) mn[r] = 0.f;
            }
            for (std::size_t kg = 0; kg < 8; ++kg) std::memcpy(pb + 32 * kg + 4 * r, vals + 4 * kg, 4);
        }
    }
}

/// y[t * ldy + i] for NT tokens (a[0..NT)) x the nr valid rows of a packed octet.
template <class P, ggml_type T, int NT>
inline void run_tile(const std::uint8_t* pk, std::size_t nb, const int8::act_row* a, float* y, std::size_t ldy,
                     std::size_t nr) noexcept {
    using F = fmt<T>;
    constexpr std::size_t bb = block_bytes<F>;
    float32x4_t acc[2][NT];
    for (std::size_t q = 0; q < 2; ++q)
        for (int t = 0; t < NT; ++t) acc[q][t] = vdupq_n_f32(0.f);
    for (std::size_t b = 0; b < nb; ++b) {
        const std::uint8_t* pb = pk + b * bb;
        for (std::size_t q = 0; q < 2; ++q) {
            int8x16_t w[8];
            for (std::size_t kg = 0; kg < 8; ++kg) w[kg] = panel(pb, kg, q);
            const float32x4_t dw = vld1q_f32(reinterpret_cast<const float*>(pb + 256) + 4 * q);
            for (int t = 0; t < NT; ++t) {
                int32x4_t total = P::rows(dot_panels<P, 2>(P::zero(), w, a[t].q + 32 * b));
                if constexpr (F::zero != 0) total = vaddq_s32(total, vdupq_n_s32(-F::zero * a[t].sum32[b]));
                acc[q][t] = vfmaq_f32(acc[q][t], vcvtq_f32_s32(total), vmulq_n_f32(dw, a[t].d[b]));
            }
            if constexpr (F::min_at >= 0) {
                const float32x4_t m = vld1q_f32(reinterpret_cast<const float*>(pb + 256 + 32) + 4 * q);
                for (int t = 0; t < NT; ++t) acc[q][t] = vfmaq_n_f32(acc[q][t], m, a[t].s[b]);
            }
        }
    }
    for (std::size_t q = 0; q < 2; ++q)
        for (int t = 0; t < NT; ++t)
            store_rows(y + std::size_t(t) * ldy + 4 * q, acc[q][t], nr > 4 * q ? nr - 4 * q : 0);
}

/// Octets per group: the rows packed together, each token tile run over all of them while
/// its activations are in L1.
inline constexpr std::size_t group_octets = 4;
/// Tokens per tile: 2 x 4 float accumulators beside a quad's 8 panels (of 32 registers).
inline constexpr int tile_tokens = 4;

/// run(n) for the tile of n (1..NT) tokens: Run::operator()<N>().
template <int NT, class Run>
inline void for_tokens(int n, const Run& run) noexcept {
    if constexpr (NT > 0) {
        if (n == NT) run.template operator()<NT>();
        else for_tokens<NT - 1>(n, run);
    }
}

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
            W, rows, nb, row_bytes, nb * block_bytes<fmt<T>>, acts, n_tok, y, ldy, pool, pack_octet<T>,
            [](const std::uint8_t* pk, std::size_t n_b, const int8::act_row* a, float* yy, std::size_t l,
               std::size_t nr, int n) {
                for_tokens<NT>(n, [&]<int N>() { run_tile<P, T, N>(pk, n_b, a, yy, l, nr); });
            });
    } else {
        int8::gemm_groups<8, group_octets, NT>(
            W, rows, nb, row_bytes, nb * klayout<T>::bytes, acts, n_tok, y, ldy, pool, kpack_octet<T>,
            [](const std::uint8_t* pk, std::size_t n_b, const int8::act_row* a, float* yy, std::size_t l,
               std::size_t nr, int n) {
                for_tokens<NT>(n, [&]<int N>() { run_ktile<P, T, N>(pk, n_b, a, yy, l, nr); });
            });
    }
}

} // namespace tile

/// The row engine (basic_engine) with the tile for batches, on the products P: int8/
/// row_gemv.hpp calls gemm<T> for a batch of a format with tiles<T>, and int8/row_dot.hpp
/// sums those formats' blocks to one integer per row (block_totals) for a single token.
template <class P>
struct tiled_engine : basic_engine {
    template <ggml_type T> static constexpr bool tiles = tile::tiled<T>;
    static constexpr std::size_t tile_min_tokens = tile::min_tokens;

    /// out[r] = the sum of the 4 int32 lanes of d[r], r < 4.
    static void block_totals(const int32x4_t* d, std::int32_t* out) noexcept {
        for (std::size_t r = 0; r < 4; ++r) out[r] = vaddvq_s32(d[r]);
    }

    template <ggml_type T>
    static void gemm(const std::uint8_t* W, std::size_t rows, std::size_t cols, const int8::act_buffer& acts,
                     std::size_t n_tok, float* y, std::size_t ldy, thread_pool* pool) {
        tile::gemm<P, T>(W, rows, cols, acts, n_tok, y, ldy, pool);
    }
};

/// The level's engine: sdot with the dotprod extension (`neon_dotprod`), else smull.
#if defined(__ARM_FEATURE_DOTPROD)
using engine = tiled_engine<tile::sdot_products>;
#else
using engine = tiled_engine<tile::smull_products>;
#endif

} // namespace archetype::quant::neon

#endif
