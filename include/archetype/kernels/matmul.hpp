#pragma once
// y = x * W^T for a weight matrix in any storage type: the one entry point the
// layers use for every linear projection. W has `rows` output features, each a
// contiguous row of `cols` input features encoded in `type` (GGUF order:
// ne[0] = cols, ne[1] = rows). x is [n_tok x cols] (leading dim ldx), y is
// [n_tok x rows] (leading dim ldy). Works on the stored blocks directly: no
// dequantised copy of the matrix is ever made.
//
// Dispatch on W.type:
//   F32              kernels::gemv (n_tok = 1) / kernels::gemm_nt (blas.hpp)
//   F16              kernels::gemv_f16 / gemm_nt_f16 (blas.hpp, converted in registers)
//   BF16             quant/half_matmul.hpp (AVX-512), else the generic path
//   Q8_0 Q4_0 Q4_1 Q5_0 Q5_1 Q4_K Q5_K Q6_K
//                    quant/vnni.hpp (activations quantised to int8 once per call,
//                    vpdpbusd on the blocks), else quant/generic.hpp
// Work is split by output rows, so results do not depend on the thread count.
#include <cstddef>
#include <cstdint>
#include <string>

#include "archetype/core/dtype.hpp"
#include "archetype/core/error.hpp"
#include "archetype/core/thread_pool.hpp"
#include "archetype/kernels/blas.hpp"
#include "archetype/kernels/quant/blocks.hpp"
#include "archetype/kernels/quant/generic.hpp"
#include "archetype/kernels/quant/half_matmul.hpp"
#include "archetype/kernels/quant/vnni.hpp"

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
    if (!quant::is_supported(W.type))
        throw argument_error("matmul: weight type " + std::string(type_name(W.type)) + " is not supported");
    const std::size_t bs = traits_of(W.type).block_size;
    if (W.cols % bs != 0)
        throw argument_error("matmul: " + std::to_string(W.cols) + " columns is not a multiple of the " +
                             std::string(type_name(W.type)) + " block size " + std::to_string(bs));
    if (W.rows == 0 || n_tok == 0) return;
    switch (W.type) {
    case ggml_type::F32: {
        const auto* w = static_cast<const float*>(W.data);
        if (n_tok == 1) gemv(w, W.cols, x, y, W.rows, W.cols, pool);
        else gemm_nt(x, ldx, w, W.cols, y, ldy, n_tok, W.rows, W.cols, pool);
        return;
    }
    case ggml_type::F16: {
        const auto* w = static_cast<const std::uint16_t*>(W.data);
        if (n_tok == 1) gemv_f16(w, W.cols, x, y, W.rows, W.cols, pool);
        else gemm_nt_f16(x, ldx, w, W.cols, y, ldy, n_tok, W.rows, W.cols, pool);
        return;
    }
    case ggml_type::BF16:
#if defined(ARCHETYPE_QUANT_HALF_AVX512)
        quant::half_avx512::matmul(true, W.data, W.rows, W.cols, x, ldx, n_tok, y, ldy, pool);
        return;
#else
        break;
#endif
    default:
#if defined(ARCHETYPE_QUANT_VNNI)
        if (quant::vnni::matmul(W.type, W.data, W.rows, W.cols, x, ldx, n_tok, y, ldy, pool)) return;
#endif
        break;
    }
    quant::generic::matmul(W.type, W.data, W.rows, W.cols, x, ldx, n_tok, y, ldy, pool);
}

} // namespace archetype::kernels
