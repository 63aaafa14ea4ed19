#pragma once
// y = x * W^T for a weight matrix in any storage type: the one entry point the
// layers use for every linear projection. W has `rows` output features, each a
// contiguous row of `cols` input features encoded in `type` (GGUF order:
// ne[0] = cols, ne[1] = rows). x is [n_tok x cols] (leading dim ldx), y is
// [n_tok x rows] (leading dim ldy). Works on the stored blocks directly: no
// dequantised copy of the matrix is ever made.
// PLACEHOLDER: F32/F16/BF16 only, scalar-ish; the model-files issue adds the
// quantised types and fast paths behind this same signature.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "archetype/core/dtype.hpp"
#include "archetype/core/error.hpp"
#include "archetype/core/thread_pool.hpp"
#include "archetype/kernels/blas.hpp"
#include "archetype/kernels/convert.hpp"

namespace archetype::kernels {

struct weight_view {
    ggml_type type = ggml_type::F32;
    const void* data = nullptr;
    std::size_t rows = 0; // output features (ne[1])
    std::size_t cols = 0; // input features (ne[0]), a multiple of the type's block size
    /// bytes of one stored row
    std::size_t row_bytes() const noexcept {
        const auto t = traits_of(type);
        return cols / t.block_size * t.type_size;
    }
    const std::byte* row(std::size_t r) const noexcept {
        return static_cast<const std::byte*>(data) + r * row_bytes();
    }
};

inline void matmul(const weight_view& W, const float* x, std::size_t ldx, std::size_t n_tok,
                   float* y, std::size_t ldy, thread_pool* pool = nullptr) {
    if (W.type == ggml_type::F32) {
        const auto* w = static_cast<const float*>(W.data);
        if (n_tok == 1)
            gemv(w, W.cols, x, y, W.rows, W.cols, pool);
        else
            gemm_nt(x, ldx, w, W.cols, y, ldy, n_tok, W.rows, W.cols, pool);
        return;
    }
    if (W.type != ggml_type::F16 && W.type != ggml_type::BF16)
        throw argument_error("matmul: weight type " + std::string(type_name(W.type)) +
                             " is not supported yet");
    auto rows = [&](std::size_t b, std::size_t e) {
        std::vector<float> buf(W.cols);
        for (std::size_t r = b; r < e; ++r) {
            const auto* src = reinterpret_cast<const std::uint16_t*>(W.row(r));
            if (W.type == ggml_type::F16) f16_to_f32(src, buf.data(), W.cols);
            else bf16_to_f32(src, buf.data(), W.cols);
            for (std::size_t t = 0; t < n_tok; ++t) y[t * ldy + r] = dot(x + t * ldx, buf.data(), W.cols);
        }
    };
    if (pool) pool->parallel_for(W.rows, rows); else rows(0, W.rows);
}

} // namespace archetype::kernels
