#pragma once
// Matmul with F16 or BF16 weights and F32 activations. Both run on the dense
// F32 engines of kernels/blas.hpp: few tokens use the row-dot engine (weights
// converted 16 at a time in registers, streamed once), more tokens the packed
// GEMM, which converts each weight once while packing its B panel (vcvtph2ps /
// a 16-bit shift for BF16) so the F32 micro-kernel runs unchanged. No converted
// copy of the matrix is made. Tiling is fixed, so results do not depend on the
// thread count.
#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__F16C__)
#define ARCHETYPE_QUANT_HALF_AVX512 1

#include <cstddef>
#include <cstdint>

#include "archetype/core/half.hpp"
#include "archetype/core/thread_pool.hpp"
#include "archetype/kernels/blas.hpp"

namespace archetype::quant::half_avx512 {

/// y = x * W^T for W in F16 (bf16 = false) or BF16 (bf16 = true), rows of `cols` 16-bit values.
/// sum: the packed engine's summation order (kernels::gemm_sum).
inline void matmul(bool bf16, const void* W, std::size_t rows, std::size_t cols, const float* x, std::size_t ldx,
                   std::size_t n_tok, float* y, std::size_t ldy, thread_pool* pool,
                   kernels::gemm_sum sum = kernels::gemm_sum::chain) {
    if (bf16)
        kernels::detail::gemm_nt_any<bf16_t>(x, ldx, static_cast<const bf16_t*>(W), cols, y, ldy, n_tok, rows, cols,
                                             pool, false, sum);
    else
        kernels::detail::gemm_nt_any<std::uint16_t>(x, ldx, static_cast<const std::uint16_t*>(W), cols, y, ldy,
                                                    n_tok, rows, cols, pool, false, sum);
}

} // namespace archetype::quant::half_avx512

#endif
