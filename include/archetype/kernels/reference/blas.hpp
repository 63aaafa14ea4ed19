#pragma once
// Scalar reference twins of kernels/blas.hpp: one dot product per output,
// accumulated in double so they serve as ground truth for the tests.
#include <cstddef>
#include <cstdint>

#include "archetype/core/half.hpp"

namespace archetype::kernels::reference {

inline float dot(const float* a, const float* b, std::size_t n) noexcept {
    double s = 0;
    for (std::size_t i = 0; i < n; ++i) s += double(a[i]) * b[i];
    return float(s);
}

/// dot of f32 a with F16 (IEEE half bits) b
inline float dot_f16(const float* a, const std::uint16_t* b, std::size_t n) noexcept {
    double s = 0;
    for (std::size_t i = 0; i < n; ++i) s += double(a[i]) * fp16_to_fp32(b[i]);
    return float(s);
}

/// y += a * x
inline void axpy(std::size_t n, float a, const float* x, float* y) noexcept {
    for (std::size_t i = 0; i < n; ++i) y[i] += a * x[i];
}

/// y[M] = A[M x K] * x[K]
inline void gemv(const float* A, std::size_t lda, const float* x, float* y, std::size_t M,
                 std::size_t K) noexcept {
    for (std::size_t i = 0; i < M; ++i) y[i] = dot(A + i * lda, x, K);
}

/// y[M] = A[M x K] (F16) * x[K]
inline void gemv_f16(const std::uint16_t* A, std::size_t lda, const float* x, float* y,
                     std::size_t M, std::size_t K) noexcept {
    for (std::size_t i = 0; i < M; ++i) y[i] = dot_f16(x, A + i * lda, K);
}

/// C[M x N] (+)= A[M x K] * B[N x K]^T
inline void gemm_nt(const float* A, std::size_t lda, const float* B, std::size_t ldb, float* C,
                    std::size_t ldc, std::size_t M, std::size_t N, std::size_t K,
                    bool accumulate = false) noexcept {
    for (std::size_t i = 0; i < M; ++i)
        for (std::size_t j = 0; j < N; ++j) {
            const float v = dot(A + i * lda, B + j * ldb, K);
            C[i * ldc + j] = accumulate ? C[i * ldc + j] + v : v;
        }
}

/// C[M x N] (+)= A[M x K] * B[N x K]^T with B in F16
inline void gemm_nt_f16(const float* A, std::size_t lda, const std::uint16_t* B, std::size_t ldb,
                        float* C, std::size_t ldc, std::size_t M, std::size_t N, std::size_t K,
                        bool accumulate = false) noexcept {
    for (std::size_t i = 0; i < M; ++i)
        for (std::size_t j = 0; j < N; ++j) {
            const float v = dot_f16(A + i * lda, B + j * ldb, K);
            C[i * ldc + j] = accumulate ? C[i * ldc + j] + v : v;
        }
}

} // namespace archetype::kernels::reference
