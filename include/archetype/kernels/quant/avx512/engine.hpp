#pragma once
// Quantised matmul on AVX-512 VNNI: y[t][r] = sum_k W[r][k] * x[t][k] computed
// on the stored blocks, never on a dequantised matrix.
//
// The scheme (llama.cpp's, in our own shape): the activations are quantised
// once per call to int8 in blocks of 32 (scale dx per block), and every weight
// type is decoded, 64 elements at a time, into
//     u : 64 unsigned bytes (the stored quants, made non-negative),
//     s : per 32-bit lane (4 elements) the float scale of the block holding them,
//     m : per lane the block's offset,
// so that weight = s * u - m. Then one `vpdpbusd` gives 16 lanes of 4-element
// integer dots and
//     acc += float(dot(u, xq)) * (s * dx)  -  m * (dx * sum(xq))
// where dx * sum(xq) per lane is precomputed with the activations. Zero-point
// types (Q4_0: q - 8, Q8_0 stored signed: u = q ^ 0x80 so offset 128 ...) use
// m = zero * s; min types (Q4_1, Q4_K ...) use their stored min. One code path
// for all types; only the 64-element decoders differ.
//
// Elements stay in row order in u. The batch engine (packing.hpp, tile.hpp) repacks the
// decoded bytes of 32 rows so that each fp32 accumulator lane is one output and
// whole sub-blocks are summed in int32 by vpdpbusd before one float step per
// sub-block; a single token skips the repacking (gemv.hpp, gemv_k16.hpp for Q2_K and
// Q3_K; gemv16 for Q6_K and for Q8_0 rows of 4 KiB and more). All give every output
// the same exact integer sums and the same float chain, so results do not
// depend on the thread count or on how many tokens are batched.
#include "archetype/kernels/quant/avx512/level.hpp"
#if defined(ARCHETYPE_QUANT_VNNI)

#include <immintrin.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <type_traits>

#include "archetype/core/dtype.hpp"
#include "archetype/core/thread_pool.hpp"
#include "archetype/kernels/quant/avx512/activations.hpp"
#include "archetype/kernels/quant/avx512/decoders.hpp"
#include "archetype/kernels/quant/avx512/gemv.hpp"
#include "archetype/kernels/quant/avx512/gemv_k16.hpp"
#include "archetype/kernels/quant/avx512/gemv16.hpp"
#include "archetype/kernels/quant/avx512/packing.hpp"
#include "archetype/kernels/quant/avx512/tile.hpp"
#include "archetype/kernels/quant/interleaved.hpp"

namespace archetype::quant::vnni {

namespace detail {

inline constexpr std::size_t gemv16_min_row_bytes_q8_0 = 4096; // on Intel, Q8_0 rows at least this long use gemv16

/// A grow-only 64-byte aligned byte buffer (per thread; no allocation per call once warm).
struct byte_scratch {
    struct free_deleter { void operator()(std::uint8_t* p) const noexcept { std::free(p); } };
    std::unique_ptr<std::uint8_t, free_deleter> p;
    std::size_t cap = 0;
    std::uint8_t* get(std::size_t n) {
        if (n > cap) {
            p.reset(static_cast<std::uint8_t*>(std::aligned_alloc(64, (n + 63) / 64 * 64)));
            if (!p) throw std::bad_alloc();
            cap = n;
        }
        return p.get();
    }
};

// Decode of the legacy types, IQ4_NL, MXFP4, Q4_K, Q5_K and IQ4_XS: gemv.hpp's 128-element
// kernel; Q2_K and Q3_K: gemv_k16.hpp's (same results as gemv16, which Q6_K still uses).
#if defined(ARCHETYPE_QUANT_GEMV_VNNI)
template <class D> inline constexpr int gemv_format = -1;
template <> inline constexpr int gemv_format<dec_q8_0> = int(gemv::format::q8_0);
template <> inline constexpr int gemv_format<dec_q4_0> = int(gemv::format::q4_0);
template <> inline constexpr int gemv_format<dec_q4_1> = int(gemv::format::q4_1);
template <> inline constexpr int gemv_format<dec_q5_0> = int(gemv::format::q5_0);
template <> inline constexpr int gemv_format<dec_q5_1> = int(gemv::format::q5_1);
template <> inline constexpr int gemv_format<dec_q4_K> = int(gemv::format::q4_K);
template <> inline constexpr int gemv_format<dec_q5_K> = int(gemv::format::q5_K);
template <> inline constexpr int gemv_format<dec_iq4_nl> = int(gemv::format::iq4_nl);
template <> inline constexpr int gemv_format<dec_mxfp4> = int(gemv::format::mxfp4);
template <> inline constexpr int gemv_format<dec_iq4_xs> = int(gemv::format::iq4_xs);
template <> inline constexpr int gemv_format<dec_q2_K> = int(gemv::format::q2_K);
template <> inline constexpr int gemv_format<dec_q3_K> = int(gemv::format::q3_K);

/// One matrix of a fused single-token GEMV: rows x (shared cols) weights, output y.
struct gemv_part {
    const std::uint8_t* W;
    std::size_t rows;
    float* y;
};

/// Single-token GEMVs of n matrices over the same activations (quantised and laid
/// out by the caller) in one pool dispatch: the 16-row groups of all matrices in
/// order, contiguous ranges per thread. A decode step's q/k/v (or gate/up) then pay
/// one fork-join and one cold start of the weight stream instead of three (two);
/// each output is bitwise what a separate call gives.
template <class D>
inline void gemv_legacy(const gemv_part* parts, std::size_t n, std::size_t row_bytes, std::size_t n_blocks,
                        const std::uint8_t* act, const act_layout& L, thread_pool* pool) {
    const std::size_t n_groups = (2 * L.n_slices + 3) / 4;
    static thread_local byte_scratch split_buf;
    std::uint8_t* xs = split_buf.get(gemv::split_bytes(n_groups));
    constexpr auto F = gemv::format(gemv_format<D>);
    constexpr bool k16 = F == gemv::format::q2_K || F == gemv::format::q3_K;
    if constexpr (k16) gemv::split_k16(act, n_blocks, xs);
    else gemv::split<F>(act, L.n_slices * 64, n_groups, xs);
    const auto* dx = reinterpret_cast<const float*>(act + L.dx_off());
    const std::uint8_t* aux = act + L.aux_off();
    std::size_t total = 0;
    for (std::size_t i = 0; i < n; ++i) total += (parts[i].rows + 15) / 16;
    auto dec = [&](std::size_t gb, std::size_t ge) {
        static thread_local byte_scratch part_buf;
        std::uint8_t* part = part_buf.get(k16 ? gemv::rows16_k16_scratch(n_blocks) : gemv::rows16_scratch(2 * L.n_slices));
        std::size_t i = 0, first = 0; // matrix i holds groups [first, first + its groups)
        for (std::size_t g = gb; g < ge; ++g) {
            while (g - first >= (parts[i].rows + 15) / 16) first += (parts[i++].rows + 15) / 16;
            if constexpr (k16)
                gemv::rows16_k16<F == gemv::format::q3_K>(parts[i].W, row_bytes, parts[i].rows, (g - first) * 16, n_blocks,
                                                          xs, dx, aux, parts[i].y, part);
            else
                gemv::run16<F>(parts[i].W, row_bytes, parts[i].rows, (g - first) * 16, n_blocks, 2 * L.n_slices, xs, dx,
                               aux, parts[i].y, part);
        }
    };
    if (pool) pool->parallel_for(total, dec); else dec(0, total);
}

/// Whether a single-token product of D with rows of row_bytes runs on gemv_legacy.
template <class D>
inline bool uses_gemv_legacy(std::size_t row_bytes) noexcept {
    if constexpr (!std::is_same_v<D, dec_q8_0>) {
        (void)row_bytes;
        return gemv_format<D> >= 0;
    } else {
        // Q8_0 by CPU. AMD Zen 4 (512-bit operations split in two): rows16 at every
        // width; gemv16's 16 row streams cost more compute than the cores have to
        // spare (2048 x 5632, 1 thread, cache-resident: 44.7 GB/s on rows16 vs 28.1;
        // from DRAM, 2 threads: +8%). Intel Xeon (session 4): rows of 4 KiB and
        // more stay with gemv16, which read them ~10% faster from DRAM (0.94 vs
        // 0.85 of the probe on 2048 x 5632); shorter rows go 15-25% faster through rows16.
        static const bool amd = __builtin_cpu_is("amd");
        return amd || row_bytes < gemv16_min_row_bytes_q8_0;
    }
}

/// gemv_legacy over n matrices of type D, cols wide, one token x; false (nothing
/// done) when D's rows of that width do not run on it.
template <class D>
inline bool gemv_many(const gemv_part* parts, std::size_t n, std::size_t cols, const float* x, thread_pool* pool) {
    if constexpr (gemv_format<D> < 0) {
        (void)parts, (void)n, (void)cols, (void)x, (void)pool;
        return false;
    } else {
        using P = packed_layout<D>;
        const std::size_t n_blocks = cols / (is_k<D> ? 256 : 32), row_bytes = n_blocks * D::bytes;
        if (!uses_gemv_legacy<D>(row_bytes)) return false;
        const act_layout L = make_act_layout((cols + 63) / 64, P::sub);
        static thread_local byte_scratch act_buf;
        std::uint8_t* act = act_buf.get(L.stride);
        quantize_token(x, cols, L, sub_traits<D>::act, P::sub, P::zero, act);
        gemv_legacy<D>(parts, n, row_bytes, n_blocks, act, L, pool);
        return true;
    }
}

/// Single-token products of n Q4_0 or Q8_0 matrices (D) in their x16 layout
/// (rows % 16 == 0), cols wide, over one x: gemv_legacy's dispatch (16-row groups
/// of all matrices in order, contiguous ranges per thread) on gemv::rows16_x16. A
/// group is one contiguous range of memory, read front to back.
template <class D>
inline void gemv_many_x16(const gemv_part* parts, std::size_t n, std::size_t cols, const float* x, thread_pool* pool) {
    using P = packed_layout<D>;
    constexpr auto L = x16_layout_of<D>;
    const std::size_t n_blocks = cols / 32;
    const act_layout AL = make_act_layout((cols + 63) / 64, P::sub);
    static thread_local byte_scratch act_buf;
    std::uint8_t* act = act_buf.get(AL.stride);
    quantize_token(x, cols, AL, sub_traits<D>::act, P::sub, P::zero, act);
    const auto* dx = reinterpret_cast<const float*>(act + AL.dx_off());
    const std::uint8_t* aux = act + AL.aux_off();
    std::size_t total = 0;
    for (std::size_t i = 0; i < n; ++i) total += parts[i].rows / 16;
    auto dec = [&](std::size_t gb, std::size_t ge) {
        std::size_t i = 0, first = 0; // matrix i holds groups [first, first + its groups)
        for (std::size_t g = gb; g < ge; ++g) {
            while (g - first >= parts[i].rows / 16) first += parts[i++].rows / 16;
            const std::size_t k = g - first;
            _mm512_storeu_ps(parts[i].y + 16 * k, gemv::rows16_x16<L>(parts[i].W + k * quant::x16::of(L).group_bytes(n_blocks),
                                                                      n_blocks, act, dx, aux));
        }
    };
    if (pool) pool->parallel_for(total, dec); else dec(0, total);
}
#endif

/// X16: W is in D's x16 layout (D = dec_q4_0 or dec_q8_0).
template <class D, bool X16 = false>
inline void run(const std::uint8_t* W, std::size_t rows, std::size_t cols, const float* x, std::size_t ldx,
                std::size_t n_tok, float* y, std::size_t ldy, thread_pool* pool) {
    static_assert(!X16 || std::is_same_v<D, dec_q4_0> || std::is_same_v<D, dec_q8_0>);
    using P = packed_layout<D>;
    const std::size_t block = is_k<D> ? 256 : 32;
    const std::size_t n_blocks = cols / block;
    const std::size_t row_bytes = n_blocks * D::bytes;
    const std::size_t n_slices = (cols + 63) / 64;
#if defined(ARCHETYPE_QUANT_GEMV_VNNI)
    if (n_tok == 1) { // the single-token kernel (rows16), where it serves this type and width
        const gemv_part part{W, rows, y};
        if constexpr (X16) {
            gemv_many_x16<D>(&part, 1, cols, x, pool);
            return;
        } else if (gemv_many<D>(&part, 1, cols, x, pool)) return;
    }
#endif
    const act_layout L = make_act_layout(n_slices, P::sub);
    static thread_local byte_scratch act_buf;
    std::uint8_t* act = act_buf.get(n_tok * L.stride);
    auto quant = [&](std::size_t b, std::size_t e) {
        for (std::size_t t = b; t < e; ++t) quantize_token(x + t * ldx, cols, L, sub_traits<D>::act, P::sub, P::zero, act + t * L.stride);
    };
    if (pool && n_tok > 1) pool->parallel_for(n_tok, quant); else quant(0, n_tok);
    if (n_tok == 1) {
        const std::size_t groups16 = (rows + 15) / 16;
        auto dec = [&](std::size_t gb, std::size_t ge) {
            for (std::size_t g = gb; g < ge; ++g) gemv16<D>(W, row_bytes, rows, g * 16, n_blocks, n_slices, act, L, y);
        };
        if (pool) pool->parallel_for(groups16, dec); else dec(0, groups16);
        return;
    }
    const std::size_t groups = (rows + group_rows - 1) / group_rows;
    auto work = [&](std::size_t gb, std::size_t ge) {
        static thread_local byte_scratch tmp_buf, pk_buf;
        std::uint8_t* tmp = tmp_buf.get(group_rows * n_slices * 64);
        std::uint8_t* pk = pk_buf.get(n_slices * P::slice_bytes);
        for (std::size_t g = gb; g < ge; ++g) {
            const std::size_t r0 = g * group_rows, nr = std::min(group_rows, rows - r0);
            if constexpr (X16) pack_group_x16<D>(W, rows, r0, n_blocks, n_slices, pk);
            else pack_group<D>(W, row_bytes, rows, r0, n_blocks, n_slices, tmp, pk);
            const std::uint8_t* a[tile_toks];
            std::size_t t = 0;
            for (; t + tile_toks <= n_tok; t += tile_toks) {
                for (int i = 0; i < tile_toks; ++i) a[i] = act + (t + std::size_t(i)) * L.stride;
                tile<D, tile_toks>(pk, n_slices, a, L, y + t * ldy + r0, ldy, nr);
            }
            if (t < n_tok) {
                const int n = int(n_tok - t);
                for (int i = 0; i < n; ++i) a[i] = act + (t + std::size_t(i)) * L.stride;
                tokens_tail<D, tile_toks - 1>(pk, n_slices, a, L, y + t * ldy + r0, ldy, nr, n);
            }
        }
    };
    if (pool) pool->parallel_for(groups, work); else work(0, groups);
}

} // namespace detail

#if defined(ARCHETYPE_QUANT_GEMV_VNNI)
/// Single-token products of n matrices of one block type and width `cols` over the
/// same x, in one dispatch (detail::gemv_legacy); false (nothing done) when this type
/// and width have no fused kernel. Each y is bitwise what matmul gives.
inline bool gemv_many(ggml_type type, const detail::gemv_part* parts, std::size_t n, std::size_t cols, const float* x,
                      thread_pool* pool) {
    switch (type) {
    case ggml_type::Q8_0: return detail::gemv_many<detail::dec_q8_0>(parts, n, cols, x, pool);
    case ggml_type::Q4_0: return detail::gemv_many<detail::dec_q4_0>(parts, n, cols, x, pool);
    case ggml_type::Q4_1: return detail::gemv_many<detail::dec_q4_1>(parts, n, cols, x, pool);
    case ggml_type::Q5_0: return detail::gemv_many<detail::dec_q5_0>(parts, n, cols, x, pool);
    case ggml_type::Q5_1: return detail::gemv_many<detail::dec_q5_1>(parts, n, cols, x, pool);
    case ggml_type::Q4_K: return detail::gemv_many<detail::dec_q4_K>(parts, n, cols, x, pool);
    case ggml_type::Q5_K: return detail::gemv_many<detail::dec_q5_K>(parts, n, cols, x, pool);
    case ggml_type::IQ4_NL: return detail::gemv_many<detail::dec_iq4_nl>(parts, n, cols, x, pool);
    case ggml_type::MXFP4: return detail::gemv_many<detail::dec_mxfp4>(parts, n, cols, x, pool);
    case ggml_type::IQ4_XS: return detail::gemv_many<detail::dec_iq4_xs>(parts, n, cols, x, pool);
    case ggml_type::Q2_K: return detail::gemv_many<detail::dec_q2_K>(parts, n, cols, x, pool);
    case ggml_type::Q3_K: return detail::gemv_many<detail::dec_q3_K>(parts, n, cols, x, pool);
    default: return false;
    }
}
#endif

#if defined(ARCHETYPE_QUANT_GEMV_VNNI)
/// The x16 layouts' fused single-token products (detail::gemv_many_x16) of n
/// matrices in layout L.
inline void gemv_many_x16(weight_layout L, const detail::gemv_part* parts, std::size_t n, std::size_t cols,
                          const float* x, thread_pool* pool) {
    if (L == weight_layout::q8_0_x16) detail::gemv_many_x16<detail::dec_q8_0>(parts, n, cols, x, pool);
    else detail::gemv_many_x16<detail::dec_q4_0>(parts, n, cols, x, pool);
}
/// Quantised matmul of a matrix in an x16 layout L (Q4_0 or Q8_0, rows % 16 == 0):
/// bitwise what matmul gives on the row layout, for any n_tok.
inline void matmul_x16(weight_layout L, const void* W, std::size_t rows, std::size_t cols, const float* x,
                       std::size_t ldx, std::size_t n_tok, float* y, std::size_t ldy, thread_pool* pool) {
    const auto* w = static_cast<const std::uint8_t*>(W);
    if (L == weight_layout::q8_0_x16) detail::run<detail::dec_q8_0, true>(w, rows, cols, x, ldx, n_tok, y, ldy, pool);
    else detail::run<detail::dec_q4_0, true>(w, rows, cols, x, ldx, n_tok, y, ldy, pool);
}
#endif

/// Quantised matmul for the block types; false when `type` has no VNNI kernel here.
/// The types of quant/unpack.hpp (ternary, grid) have none: their scalar unpacking
/// dominates, so they take the int8 row engine this level also builds (avxvnni/engine.hpp,
/// EVEX vpdpbusd), which costs 2 s of compile time per TU against 7 s for their VNNI
/// tiles and gemv16 instantiations.
inline bool matmul(ggml_type type, const void* W, std::size_t rows, std::size_t cols, const float* x,
                   std::size_t ldx, std::size_t n_tok, float* y, std::size_t ldy, thread_pool* pool) {
    const auto* w = static_cast<const std::uint8_t*>(W);
    switch (type) {
    case ggml_type::Q8_0: detail::run<detail::dec_q8_0>(w, rows, cols, x, ldx, n_tok, y, ldy, pool); return true;
    case ggml_type::Q4_0: detail::run<detail::dec_q4_0>(w, rows, cols, x, ldx, n_tok, y, ldy, pool); return true;
    case ggml_type::Q4_1: detail::run<detail::dec_q4_1>(w, rows, cols, x, ldx, n_tok, y, ldy, pool); return true;
    case ggml_type::Q5_0: detail::run<detail::dec_q5_0>(w, rows, cols, x, ldx, n_tok, y, ldy, pool); return true;
    case ggml_type::Q5_1: detail::run<detail::dec_q5_1>(w, rows, cols, x, ldx, n_tok, y, ldy, pool); return true;
    case ggml_type::Q4_K: detail::run<detail::dec_q4_K>(w, rows, cols, x, ldx, n_tok, y, ldy, pool); return true;
    case ggml_type::Q5_K: detail::run<detail::dec_q5_K>(w, rows, cols, x, ldx, n_tok, y, ldy, pool); return true;
    case ggml_type::Q6_K: detail::run<detail::dec_q6_K>(w, rows, cols, x, ldx, n_tok, y, ldy, pool); return true;
    case ggml_type::Q2_K: detail::run<detail::dec_q2_K>(w, rows, cols, x, ldx, n_tok, y, ldy, pool); return true;
    case ggml_type::Q3_K: detail::run<detail::dec_q3_K>(w, rows, cols, x, ldx, n_tok, y, ldy, pool); return true;
    case ggml_type::IQ4_NL: detail::run<detail::dec_iq4_nl>(w, rows, cols, x, ldx, n_tok, y, ldy, pool); return true;
    case ggml_type::IQ4_XS: detail::run<detail::dec_iq4_xs>(w, rows, cols, x, ldx, n_tok, y, ldy, pool); return true;
    case ggml_type::MXFP4: detail::run<detail::dec_mxfp4>(w, rows, cols, x, ldx, n_tok, y, ldy, pool); return true;
    default: return false;
    }
}

} // namespace archetype::quant::vnni

#endif
