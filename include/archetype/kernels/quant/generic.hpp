#pragma once
// Portable matmul for every stored type: each weight row is dequantised into a
// row-sized scratch buffer (one row, never the matrix) and dotted with every
// token while it is hot in L1. The fallback when the CPU lacks AVX-512 VNNI,
// and a second implementation the tests compare the fast path against.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "archetype/core/dtype.hpp"
#include "archetype/core/thread_pool.hpp"
#include "archetype/kernels/blas.hpp"
#include "archetype/kernels/quant/dequantize.hpp"

namespace archetype::quant::generic {

inline void matmul(ggml_type type, const void* W, std::size_t rows, std::size_t cols, const float* x,
                   std::size_t ldx, std::size_t n_tok, float* y, std::size_t ldy, thread_pool* pool) {
    const auto t = traits_of(type);
    const std::size_t row_bytes = cols / t.block_size * t.type_size;
    const auto* w = static_cast<const std::uint8_t*>(W);
    auto work = [&](std::size_t b, std::size_t e) {
        std::vector<float> buf(cols);
        for (std::size_t r = b; r < e; ++r) {
            dequantize_row(type, w + r * row_bytes, buf.data(), cols);
            for (std::size_t k = 0; k < n_tok; ++k) y[k * ldy + r] = kernels::dot(x + k * ldx, buf.data(), cols);
        }
    };
    if (pool) pool->parallel_for(rows, work); else work(0, rows);
}

} // namespace archetype::quant::generic
