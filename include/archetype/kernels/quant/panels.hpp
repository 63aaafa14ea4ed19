#pragma once
// Batched products of a block-quantised matrix with float activations: W's rows are
// dequantised, panel_rows at a time, into a float workspace and multiplied by all the
// tokens with the F32 GEMM (blas.hpp). The activations are never rounded to 8 bits,
// so each product is the exact model's (dequantised weights, float activations) to
// float rounding, where llama.cpp — and this library's int8 kernels, which follow it —
// round every activation block to int8 first. Measured on SmolLM2 Q4_1 and Gemma 3
// Q4_K_M (docs/real-models.md "Distance to the exact model"): the int8 activations are
// all of the engine's distance to the exact model (mean truncated KL 1.7e-3, float
// activations 1e-9).
//
// Cost: dequantising a panel is O(panel_rows x cols), shared by the n_tok tokens of
// the call, so from min_tokens tokens on it is small beside the GEMM itself; the
// float GEMM then runs at the F32 path's speed. Fewer tokens (a decode step) stay on
// the int8 kernels, which read each weight once per token at memory speed.
//
// Work is split by panels, each part with its own slice of one workspace allocated
// per call; results do not depend on the thread count.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "archetype/core/dtype.hpp"
#include "archetype/core/thread_pool.hpp"
#include "archetype/kernels/blas.hpp"
#include "archetype/kernels/quant/blocks.hpp"
#include "archetype/kernels/quant/dequantize.hpp"
#include "archetype/kernels/quant/interleaved.hpp"

namespace archetype::quant::panels {

/// Weight rows dequantised per GEMM call: 64 rows of 4096 floats stay within 1 MiB.
inline constexpr std::size_t panel_rows = 64;
/// Calls with at least this many tokens take this path (kernels::matmul).
inline constexpr std::size_t min_tokens = 8;

namespace detail {
/// Rows [r0, r0 + n) of W as floats into out (n x cols, row-major).
inline void dequantize_rows(ggml_type type, weight_layout L, const std::uint8_t* W, std::size_t cols, std::size_t r0,
                            std::size_t n, float* out) {
    if (L == weight_layout::rows) {
        const std::size_t row_bytes = cols / traits_of(type).block_size * traits_of(type).type_size;
        for (std::size_t r = 0; r < n; ++r) dequantize_row(type, W + (r0 + r) * row_bytes, out + r * cols, cols);
        return;
    }
    const std::size_t bs = traits_of(type).block_size;
    std::uint8_t block[x16::max_block_bytes];
    for (std::size_t r = 0; r < n; ++r)
        for (std::size_t b = 0; b < cols / bs; ++b) {
            x16::block_of(L, W, cols, r0 + r, b, block);
            dequantize_row(type, block, out + r * cols + b * bs, bs);
        }
}
} // namespace detail

/// y[n_tok x rows] (leading dim ldy) = x[n_tok x cols] (leading dim ldx) * W^T, W of a
/// block type in layout L.
inline void matmul(ggml_type type, weight_layout L, const void* W, std::size_t rows, std::size_t cols, const float* x,
                   std::size_t ldx, std::size_t n_tok, float* y, std::size_t ldy, thread_pool* pool,
                   kernels::gemm_sum sum) {
    const auto* w = static_cast<const std::uint8_t*>(W);
    const std::size_t n_panels = (rows + panel_rows - 1) / panel_rows;
    const std::size_t parts = std::min(n_panels, pool ? pool->size() : std::size_t{1});
    std::vector<float> workspace(parts * panel_rows * cols);
    auto part = [&](std::size_t p) {
        float* panel = workspace.data() + p * panel_rows * cols;
        for (std::size_t i = n_panels * p / parts; i < n_panels * (p + 1) / parts; ++i) {
            const std::size_t r0 = i * panel_rows, n = std::min(panel_rows, rows - r0);
            detail::dequantize_rows(type, L, w, cols, r0, n, panel);
            kernels::gemm_nt(x, ldx, panel, cols, y + r0, ldy, n_tok, n, cols, nullptr, false, sum);
        }
    };
    if (pool && parts > 1)
        pool->parallel_for(parts, [&](std::size_t b, std::size_t e) {
            for (std::size_t p = b; p < e; ++p) part(p);
        });
    else
        part(0);
}

} // namespace archetype::quant::panels
