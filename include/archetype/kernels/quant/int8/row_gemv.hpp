#pragma once
// Quantised products of a few tokens (a decode step: fewer than
// quant::panels::min_tokens) on int8 activations, for the levels whose kernels dot
// a weight row's blocks with them (avx2/, neon/): each token's activations are
// rounded to int8 once per call (int8/activations.hpp, ggml's rounding), then
// every weight row is dotted with them in integers by the level's engine. Rows are
// taken rows_per_step at a time and each group is dotted with all the tokens while
// its bytes are in L1, so a weight byte is read from memory once per call.
//
// An engine (int8/row_dot.hpp) also has
//   static constexpr std::size_t prefetch_ahead;   // bytes of the L2 prefetch cursor
//
// A batch of at least Engine::tile_min_tokens tokens of a type the engine tiles
// (avx2/tile.hpp, neon/tile.hpp) runs on the tile instead, with the same activations and bitwise the
// same outputs.
//
// Work is split by output rows (over all the products of a fused call), and a
// row's arithmetic does not depend on its neighbours: results are independent of
// the thread count, of the batch size, and of fusing (tests/quant asserts bitwise).
#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "archetype/core/dtype.hpp"
#include "archetype/core/thread_pool.hpp"
#include "archetype/kernels/quant/int8/activations.hpp"
#include "archetype/kernels/quant/int8/row_dot.hpp"

namespace archetype::quant::int8 {

/// Rows dotted side by side: four accumulators and four weight streams.
inline constexpr std::size_t rows_per_step = 4;

/// One product of a call: W (rows x the call's cols, row layout), its outputs
/// y[k * ldy + r] for token k.
struct gemv_part {
    const std::uint8_t* W;
    std::size_t rows;
    float* y;
    std::size_t ldy;
};

/// The block types the int8 engines take.
inline bool handles(ggml_type t) noexcept {
    switch (t) {
    case ggml_type::Q8_0: case ggml_type::Q4_0: case ggml_type::Q4_1: case ggml_type::Q5_0: case ggml_type::Q5_1:
    case ggml_type::Q4_K: case ggml_type::Q5_K: case ggml_type::Q6_K: case ggml_type::Q2_K:
    case ggml_type::Q3_K: case ggml_type::IQ4_NL: case ggml_type::IQ4_XS: case ggml_type::MXFP4:
    case ggml_type::Q1_0: case ggml_type::Q2_0: return true;
    default: return unpack::unpacks(t);
    }
}

namespace detail {

/// The rows of all parts, split over the threads, each group of rows_per_step dotted
/// with every token by dot(n, w, row_bytes, a, out, pf) (n rows at w).
template <class Engine, class Dot>
inline void run_rows(const gemv_part* parts, std::size_t n_parts, std::size_t row_bytes, const act_buffer& acts,
                     std::size_t n_tok, thread_pool* pool, const Dot& dot) {
    std::size_t total = 0;
    for (std::size_t p = 0; p < n_parts; ++p) total += parts[p].rows;
    auto work = [&](std::size_t begin, std::size_t end) {
        std::size_t first = 0; // global index of part p's row 0
        for (std::size_t p = 0; p < n_parts; first += parts[p].rows, ++p) {
            const std::size_t lb = std::max(begin, first), le = std::min(end, first + parts[p].rows);
            for (std::size_t g = lb; g < le; g += rows_per_step) {
                const std::size_t r = g - first, n = std::min(rows_per_step, le - g);
                const std::uint8_t* w = parts[p].W + r * row_bytes;
                for (std::size_t k = 0; k < n_tok; ++k) {
                    float out[rows_per_step];
                    // the first token streams the rows in: prefetch ahead of it (a prefetch
                    // past the matrix is harmless); the others find them in L1
                    dot(n, w, acts.row(k), out, k == 0 ? w + Engine::prefetch_ahead : nullptr);
                    std::copy(out, out + n, parts[p].y + k * parts[p].ldy + r);
                }
            }
        }
    };
    if (pool) pool->parallel_for(total, work);
    else work(0, total);
}

template <class Engine, ggml_type T>
inline void run(const gemv_part* parts, std::size_t n_parts, std::size_t cols, const act_buffer& acts,
                std::size_t n_tok, thread_pool* pool) {
    if constexpr (sums_blocks<Engine, T>) { // a batch on the engine's GEMM tile: bitwise the rows' results
        if (n_tok >= Engine::tile_min_tokens) {
            for (std::size_t p = 0; p < n_parts; ++p)
                Engine::template gemm<T>(parts[p].W, parts[p].rows, cols, acts, n_tok, parts[p].y, parts[p].ldy, pool);
            return;
        }
    }
    constexpr auto tr = traits_of(T);
    const std::size_t nb = cols / tr.block_size, row_bytes = nb * tr.type_size;
    run_rows<Engine>(parts, n_parts, row_bytes, acts, n_tok, pool,
                     [&](std::size_t n, const std::uint8_t* w, const act_row& a, float* out, const std::uint8_t* pf) {
                         switch (n) {
                         case 4: dot_rows<Engine, T, 4>(w, row_bytes, nb, a, out, pf); break;
                         case 3: dot_rows<Engine, T, 3>(w, row_bytes, nb, a, out, pf); break;
                         case 2: dot_rows<Engine, T, 2>(w, row_bytes, nb, a, out, pf); break;
                         default: dot_rows<Engine, T, 1>(w, row_bytes, nb, a, out, pf); break;
                         }
                     });
}

/// run for every type of quant/unpack.hpp through one instantiation (dot_rows_unpacked).
template <class Engine>
inline void run_unpacked(ggml_type type, const gemv_part* parts, std::size_t n_parts, std::size_t cols,
                         const act_buffer& acts, std::size_t n_tok, thread_pool* pool) {
    const unpack::unpacker fn = unpack::unpacker_of(type);
    const std::size_t ts = traits_of(type).type_size, nb = cols / 256, row_bytes = nb * ts;
    run_rows<Engine>(parts, n_parts, row_bytes, acts, n_tok, pool,
                     [&](std::size_t n, const std::uint8_t* w, const act_row& a, float* out, const std::uint8_t* pf) {
                         switch (n) {
                         case 4: dot_rows_unpacked<Engine, 4>(fn, ts, w, row_bytes, nb, a, out, pf); break;
                         case 3: dot_rows_unpacked<Engine, 3>(fn, ts, w, row_bytes, nb, a, out, pf); break;
                         case 2: dot_rows_unpacked<Engine, 2>(fn, ts, w, row_bytes, nb, a, out, pf); break;
                         default: dot_rows_unpacked<Engine, 1>(fn, ts, w, row_bytes, nb, a, out, pf); break;
                         }
                     });
}

} // namespace detail

/// The products of n_parts matrices of one type and width with the same n_tok
/// tokens x (leading dim ldx); false (nothing done) for a type the engines lack.
/// cols must be a multiple of the type's block size (kernels::matmul checks it).
template <class Engine>
inline bool gemv_parts(ggml_type type, const gemv_part* parts, std::size_t n_parts, std::size_t cols,
                       const float* x, std::size_t ldx, std::size_t n_tok, thread_pool* pool) {
    if (!handles(type)) return false;
    act_buffer acts(act_format_for(type), cols, n_tok);
    auto quantize = [&](std::size_t b, std::size_t e) {
        for (std::size_t k = b; k < e; ++k) acts.quantize(k, x + k * ldx);
    };
    if (pool && n_tok > 1) pool->parallel_for(n_tok, quantize); // each token its own slot
    else quantize(0, n_tok);
    using ggml_type::Q8_0, ggml_type::Q4_0, ggml_type::Q4_1, ggml_type::Q5_0, ggml_type::Q5_1, ggml_type::Q4_K,
        ggml_type::Q5_K, ggml_type::Q6_K, ggml_type::Q2_K, ggml_type::Q3_K, ggml_type::IQ4_NL, ggml_type::IQ4_XS,
        ggml_type::MXFP4, ggml_type::Q1_0, ggml_type::Q2_0;
    if (unpack::unpacks(type)) {
        detail::run_unpacked<Engine>(type, parts, n_parts, cols, acts, n_tok, pool);
        return true;
    }
    switch (type) {
    case Q8_0: detail::run<Engine, Q8_0>(parts, n_parts, cols, acts, n_tok, pool); break;
    case Q4_0: detail::run<Engine, Q4_0>(parts, n_parts, cols, acts, n_tok, pool); break;
    case Q4_1: detail::run<Engine, Q4_1>(parts, n_parts, cols, acts, n_tok, pool); break;
    case Q5_0: detail::run<Engine, Q5_0>(parts, n_parts, cols, acts, n_tok, pool); break;
    case Q5_1: detail::run<Engine, Q5_1>(parts, n_parts, cols, acts, n_tok, pool); break;
    case Q4_K: detail::run<Engine, Q4_K>(parts, n_parts, cols, acts, n_tok, pool); break;
    case Q5_K: detail::run<Engine, Q5_K>(parts, n_parts, cols, acts, n_tok, pool); break;
    case Q6_K: detail::run<Engine, Q6_K>(parts, n_parts, cols, acts, n_tok, pool); break;
    case Q2_K: detail::run<Engine, Q2_K>(parts, n_parts, cols, acts, n_tok, pool); break;
    case Q3_K: detail::run<Engine, Q3_K>(parts, n_parts, cols, acts, n_tok, pool); break;
    case IQ4_NL: detail::run<Engine, IQ4_NL>(parts, n_parts, cols, acts, n_tok, pool); break;
    case IQ4_XS: detail::run<Engine, IQ4_XS>(parts, n_parts, cols, acts, n_tok, pool); break;
    case MXFP4: detail::run<Engine, MXFP4>(parts, n_parts, cols, acts, n_tok, pool); break;
    case Q1_0: detail::run<Engine, Q1_0>(parts, n_parts, cols, acts, n_tok, pool); break;
    case Q2_0: detail::run<Engine, Q2_0>(parts, n_parts, cols, acts, n_tok, pool); break;
    default: break;
    }
    return true;
}

/// y = x * W^T for n_tok tokens, W in the row layout.
template <class Engine>
inline bool matmul(ggml_type type, const void* W, std::size_t rows, std::size_t cols, const float* x,
                   std::size_t ldx, std::size_t n_tok, float* y, std::size_t ldy, thread_pool* pool) {
    const gemv_part part{static_cast<const std::uint8_t*>(W), rows, y, ldy};
    return gemv_parts<Engine>(type, &part, 1, cols, x, ldx, n_tok, pool);
}

} // namespace archetype::quant::int8
