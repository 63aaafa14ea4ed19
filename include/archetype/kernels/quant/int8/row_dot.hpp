#pragma once
// The float side of the int8 engines' row dots, the same at every level (avx2/,
// neon/): R rows of one block type dotted with one token's int8 activations
// (int8/activations.hpp), each activation block loaded once for R independent
// accumulators. Per block and row:
//     acc   = fma(float(integer lanes), dw * dx, acc)          (the level's lanes)
//     extra = fma(zero-point or min term, ..., extra)          (scalar)
//     y     = hsum(acc) + extra
// the same instructions whatever rows a row is grouped with, so a row's output does
// not depend on the thread count or on fusing. The integer side is the engine's.
// Where the engine has a GEMM tile for the type (E::tiles<T>: avx2/tile.hpp at `avx2`
// and `avxvnni`, neon/tile.hpp at `neon` and `neon_dotprod`), the chain is the tile's
// instead (dot_rows_block_totals): each block summed to one exact integer per row, then
// one float step per block, so a batch on the tile is bitwise each token alone.
//
// An engine E (avx2::engine, neon::engine) has
//   lanes; zero(); fma(int lanes, float scale, lanes acc); hsum(lanes) -> float
//   load_x(const std::int8_t* q): one 32-element activation block as idot takes it
//   f16(const std::uint8_t* p): the fp16 at p as float
//   prefetch_step<Bytes>(const std::uint8_t*& pf): prefetch ahead, move the cursor
//       (null: nothing; int8/row_gemv.hpp, Engine::prefetch_ahead)
//   fmt<T> for the 32-element types: `zero` (w = d * (u - zero)), `min_at` (>= 0:
//       w = d * u + m, m the fp16 at that byte), idot(block, x) -> integer lanes
//   k45_block<Five>(blk, x, sc) (sc: the 8 decoded 6-bit scales), k6_block(blk, x) ->
//       the integer lanes of a K super-block, each sub-block's products times its scale;
//       the mins' and the zero's terms are scalar, here (see avx2/engine.hpp)
//   k2_block(blk, x) (Q2_K: the 4-bit scales times the 2-bit quants), k3_block(blk, x, sc)
//       (Q3_K: sc the 16 signed scales, times u = q + 4): the same for the 16-element
//       sub-blocks of Q2_K and Q3_K; kxs_block(blk, x, sc) (IQ4_XS: the table values of
//       the codes times the 8 signed scales sc)
//   sdot16_block(v, x, sc): the types of quant/unpack.hpp, unpacked to signed int8 v:
//       sum over the 16 sub-blocks of sc[k] * (v . x)
//   sdot32(v, x): v . x for 32 signed int8 levels (Q1_0, Q2_0)
#include <cmath>
#include <cstddef>
#include <cstdint>

#include "archetype/core/dtype.hpp"
#include "archetype/kernels/quant/blocks.hpp"
#include "archetype/kernels/quant/int8/activations.hpp"
#include "archetype/kernels/quant/unpack.hpp"

namespace archetype::quant::int8 {

/// The parts of one K super-block b (type T, at blk) of a row against activations a:
/// lanes, the integer lanes of sum_k scale_k * (u_k . x_k); corr, the zero point's or
/// the mins' integer term; dwx = d * dx and cx, corr's factor (dwx for the zero-point
/// types Q6_K and Q3_K, -dmin * dx for the min types, 0 for IQ4_XS).
template <class E, ggml_type T>
struct k_parts {
    decltype(E::k6_block(nullptr, nullptr)) lanes;
    std::int32_t corr;
    float dwx, cx;
};
template <class E, ggml_type T>
inline k_parts<E, T> k_block(const std::uint8_t* blk, const act_row& a, std::size_t b) noexcept {
    const std::int8_t* x = a.q + 256 * b;
    const float dx = a.d[b];
    k_parts<E, T> p;
    if constexpr (T == ggml_type::Q6_K) {
        // u = q + 32: the zero's term -32 * sum_k scale_k * sum16_k
        const auto* sc = reinterpret_cast<const std::int8_t*>(blk + 192);
        std::int32_t z = 0;
        for (std::size_t k = 0; k < 16; ++k) z += std::int32_t(sc[k]) * a.sum16[16 * b + k];
        p.corr = -32 * z;
        p.dwx = E::f16(blk + 208) * dx;
        p.cx = p.dwx;
        p.lanes = E::k6_block(blk, x);
    } else if constexpr (T == ggml_type::Q2_K) {
        // w = d * (sc_k & 15) * q - dmin * (sc_k >> 4): the mins' term
        // -dmin * sum_k (sc_k >> 4) * sum16_k
        std::int32_t ms = 0;
        for (std::size_t k = 0; k < 16; ++k) ms += std::int32_t(blk[k] >> 4) * a.sum16[16 * b + k];
        p.corr = ms;
        p.dwx = E::f16(blk + 80) * dx;
        p.cx = -(E::f16(blk + 82) * dx);
        p.lanes = E::k2_block(blk, x);
    } else if constexpr (T == ggml_type::Q3_K) {
        // u = q + 4 (0..7) with the signed scale s_k = sc_k - 32: the zero's term
        // -4 * sum_k s_k * sum16_k
        std::uint8_t raw[16];
        q3_K_scales(blk + 96, raw);
        std::int8_t sc[16];
        std::int32_t z = 0;
        for (std::size_t k = 0; k < 16; ++k) {
            sc[k] = static_cast<std::int8_t>(int(raw[k]) - 32);
            z += std::int32_t(sc[k]) * a.sum16[16 * b + k];
        }
        p.corr = -4 * z;
        p.dwx = E::f16(blk + 108) * dx;
        p.cx = p.dwx;
        p.lanes = E::k3_block(blk, x, sc);
    } else if constexpr (T == ggml_type::IQ4_XS) {
        // signed table values, signed scales ls - 32: nothing to fold out
        std::int8_t sc[8];
        for (std::size_t i = 0; i < 8; ++i) sc[i] = static_cast<std::int8_t>(int(iq4_xs_scale(blk, i)) - 32);
        p.corr = 0;
        p.dwx = E::f16(blk) * dx;
        p.cx = 0.f;
        p.lanes = E::kxs_block(blk, x, sc);
    } else {
        // w = d * sc_j * u - dmin * m_j: the mins' term -dmin * sum_j m_j * sum32_j
        std::uint8_t sc[8], m[8];
        std::int32_t ms = 0;
        for (std::size_t j = 0; j < 8; ++j) {
            scale_min_k4(j, blk + 4, sc[j], m[j]);
            ms += std::int32_t(m[j]) * a.sum32[8 * b + j];
        }
        p.corr = ms;
        p.dwx = E::f16(blk) * dx;
        p.cx = -(E::f16(blk + 2) * dx);
        p.lanes = E::template k45_block<T == ggml_type::Q5_K>(blk, x, sc);
    }
    return p;
}

/// Whether engine E has a GEMM tile for T (avx2/tile.hpp, neon/tile.hpp: E::tiles<T>): then a single
/// token's row dot takes the tile's steps, dot_rows_block_totals.
template <class E, ggml_type T>
inline constexpr bool sums_blocks = [] {
    if constexpr (requires { E::template tiles<T>; }) return bool(E::template tiles<T>);
    else return false;
}();

/// dot_rows for a format that E tiles: each block's integer lanes summed to one exact
/// integer per row first (E::block_totals, four rows at once), then per block and row
///     32-element formats: total = u . x - zero * sum32 (the zero folded in as an integer)
///         acc = fma(float(total), dw * dx, acc);   acc = fma(min, s, acc)   (min formats)
///     K types: total = sum_k scale_k (u_k . x_k) (+ corr for Q6_K / Q3_K, whose zero
///         point's term has the same factor)
///         acc = fma(float(total), d * dx, acc);   acc = fma(float(corr), -dmin * dx, acc)
///                                                 (Q4_K, Q5_K, Q2_K: the mins' term)
/// the tile's steps for each of its output lanes, so that a batch on the tile gives every
/// token bitwise what this gives it alone.
template <ggml_type T>
inline constexpr bool k_zero_folds = T == ggml_type::Q6_K || T == ggml_type::Q3_K;
template <ggml_type T>
inline constexpr bool k_has_min = T == ggml_type::Q4_K || T == ggml_type::Q5_K || T == ggml_type::Q2_K;

template <class E, ggml_type T, int R>
inline void dot_rows_block_totals(const std::uint8_t* w, std::size_t row_bytes, std::size_t nb, const act_row& a,
                                  float* y, const std::uint8_t* pf) noexcept {
    static_assert(R >= 1 && R <= 4);
    constexpr auto tr = traits_of(T);
    using ilanes = decltype(E::k6_block(nullptr, nullptr)); // the engine's integer lanes
    float acc[R];
    for (int r = 0; r < R; ++r) acc[r] = 0.f;
    for (std::size_t b = 0; b < nb; ++b) {
        E::template prefetch_step<R * tr.type_size>(pf);
        ilanes d[4];
        std::int32_t total[4];
        if constexpr (tr.block_size == 32) {
            using F = typename E::template fmt<T>;
            const auto x = E::load_x(a.q + 32 * b);
            for (int r = 0; r < R; ++r) d[r] = F::idot(w + std::size_t(r) * row_bytes + b * tr.type_size, x);
            for (int r = R; r < 4; ++r) d[r] = d[0];
            E::block_totals(d, total);
            const float dx = a.d[b];
            for (int r = 0; r < R; ++r) {
                const std::uint8_t* blk = w + std::size_t(r) * row_bytes + b * tr.type_size;
                float dw;
                if constexpr (T == ggml_type::MXFP4) dw = e8m0_to_fp32_half(blk[0]);
                else dw = E::f16(blk);
                std::int32_t t = total[r];
                if constexpr (F::zero != 0) t += -F::zero * a.sum32[b];
                acc[r] = std::fma(float(t), dw * dx, acc[r]);
                if constexpr (F::min_at >= 0) acc[r] = std::fma(E::f16(blk + F::min_at), a.s[b], acc[r]);
            }
        } else {
            k_parts<E, T> p[4];
            for (int r = 0; r < R; ++r) {
                p[r] = k_block<E, T>(w + std::size_t(r) * row_bytes + b * tr.type_size, a, b);
                d[r] = p[r].lanes;
            }
            for (int r = R; r < 4; ++r) d[r] = d[0];
            E::block_totals(d, total);
            for (int r = 0; r < R; ++r) {
                std::int32_t t = total[r];
                if constexpr (k_zero_folds<T>) t += p[r].corr;
                acc[r] = std::fma(float(t), p[r].dwx, acc[r]);
                if constexpr (k_has_min<T>) acc[r] = std::fma(float(p[r].corr), p[r].cx, acc[r]);
            }
        }
    }
    for (int r = 0; r < R; ++r) y[r] = acc[r];
}

/// y[i] = row i . a for the R rows of type T at w (row_bytes apart), nb blocks each;
/// pf: the prefetch cursor (or null), advanced by the bytes each block step consumes.
template <class E, ggml_type T, int R>
inline void dot_rows(const std::uint8_t* w, std::size_t row_bytes, std::size_t nb, const act_row& a, float* y,
                     const std::uint8_t* pf) noexcept {
    if constexpr (sums_blocks<E, T>) {
        dot_rows_block_totals<E, T, R>(w, row_bytes, nb, a, y, pf);
        return;
    }
    constexpr auto tr = traits_of(T);
    typename E::lanes acc[R];
    float extra[R];
    for (int r = 0; r < R; ++r) acc[r] = E::zero(), extra[r] = 0.f;
    for (std::size_t b = 0; b < nb; ++b) {
        E::template prefetch_step<R * tr.type_size>(pf);
        if constexpr (T == ggml_type::Q1_0 || T == ggml_type::Q2_0) {
            // signed levels (Q1_0 -1 / +1, Q2_0 -1..2) per 32-element activation block,
            // one fp16 d per weight block
            constexpr std::size_t subs = tr.block_size / 32;
            for (int r = 0; r < R; ++r) {
                const std::uint8_t* blk = w + std::size_t(r) * row_bytes + b * tr.type_size;
                const float dw = E::f16(blk);
                for (std::size_t sb = 0; sb < subs; ++sb) {
                    alignas(32) std::int8_t v[32];
                    for (std::size_t j = 0; j < 32; ++j)
                        v[j] = std::int8_t(T == ggml_type::Q1_0 ? q1_0_level(blk, 32 * sb + j) : q2_0_level(blk, 32 * sb + j));
                    const std::size_t ab = subs * b + sb;
                    acc[r] = E::fma(E::sdot32(v, a.q + 32 * ab), dw * a.d[ab], acc[r]);
                }
            }
            continue;
        }
        const float dx = a.d[b];
        if constexpr (tr.block_size == 32) {
            using F = typename E::template fmt<T>;
            const auto x = E::load_x(a.q + 32 * b);
            for (int r = 0; r < R; ++r) {
                const std::uint8_t* blk = w + std::size_t(r) * row_bytes + b * tr.type_size;
                float dw;
                if constexpr (T == ggml_type::MXFP4) dw = e8m0_to_fp32_half(blk[0]);
                else dw = E::f16(blk);
                const float dwx = dw * dx;
                acc[r] = E::fma(F::idot(blk, x), dwx, acc[r]);
                if constexpr (F::min_at >= 0) extra[r] = std::fma(E::f16(blk + F::min_at), a.s[b], extra[r]);
                else if constexpr (F::zero != 0) extra[r] = std::fma(dwx, float(-F::zero * a.sum32[b]), extra[r]);
            }
        } else {
            for (int r = 0; r < R; ++r) {
                const auto p = k_block<E, T>(w + std::size_t(r) * row_bytes + b * tr.type_size, a, b);
                acc[r] = E::fma(p.lanes, p.dwx, acc[r]);
                extra[r] = std::fma(p.cx, float(p.corr), extra[r]);
            }
        }
    }
    for (int r = 0; r < R; ++r) y[r] = E::hsum(acc[r]) + extra[r];
}

/// The same for the types of quant/unpack.hpp, one loop for all of them (the type's
/// unpacker and block size at run time: one instantiation per engine and R, not per
/// type): each block unpacked to signed integers with integer scales, nothing to fold
/// out; y[i] = hsum over blocks of fma(sdot16_block, d * dx).
template <class E, int R>
inline void dot_rows_unpacked(unpack::unpacker unpack_fn, std::size_t type_size, const std::uint8_t* w,
                              std::size_t row_bytes, std::size_t nb, const act_row& a, float* y,
                              const std::uint8_t* pf) noexcept {
    typename E::lanes acc[R];
    for (int r = 0; r < R; ++r) acc[r] = E::zero();
    const std::uint8_t* pf_end = pf;
    unpack::block256 u;
    for (std::size_t b = 0; b < nb; ++b) {
        if (pf) // the cursor moves by the bytes this step consumes, 64 at a time
            for (pf_end += std::size_t(R) * type_size; pf < pf_end;) E::template prefetch_step<64>(pf);
        const float dx = a.d[b];
        const std::int8_t* x = a.q + 256 * b;
        for (int r = 0; r < R; ++r) {
            unpack_fn(w + std::size_t(r) * row_bytes + b * type_size, u);
            acc[r] = E::fma(E::sdot16_block(u.v, x, u.scale), u.d * dx, acc[r]);
        }
    }
    for (int r = 0; r < R; ++r) y[r] = E::hsum(acc[r]);
}

} // namespace archetype::quant::int8
