#pragma once
// Dense float32 linear algebra on raw pointers: dot, axpy, GEMV, GEMM.
// Matrices are row-major with a leading dimension (elements between rows).
// Weights are stored as GGUF stores them: one output row contiguous over the
// input dimension, so the workhorse is C = A * B^T ("NT" GEMM).
// SCALAR PLACEHOLDER BODIES: the kernels issue replaces them with xsimd code,
// keeping these signatures.
#include <cstddef>

#include "archetype/core/thread_pool.hpp"

namespace archetype::kernels {

inline float dot(const float* a, const float* b, std::size_t n) noexcept {
    float s = 0.f;
    for (std::size_t i = 0; i < n; ++i) s += a[i] * b[i];
    return s;
}

/// y += a * x
inline void axpy(std::size_t n, float a, const float* x, float* y) noexcept {
    for (std::size_t i = 0; i < n; ++i) y[i] += a * x[i];
}

/// y[M] = A[M x K] * x[K]
inline void gemv(const float* A, std::size_t lda, const float* x, float* y, std::size_t M,
                 std::size_t K, thread_pool* pool = nullptr) {
    auto rows = [&](std::size_t b, std::size_t e) {
        for (std::size_t i = b; i < e; ++i) y[i] = dot(A + i * lda, x, K);
    };
    if (pool) pool->parallel_for(M, rows); else rows(0, M);
}

/// C[M x N] = A[M x K] * B[N x K]^T   (overwrites C)
inline void gemm_nt(const float* A, std::size_t lda, const float* B, std::size_t ldb, float* C,
                    std::size_t ldc, std::size_t M, std::size_t N, std::size_t K,
                    thread_pool* pool = nullptr) {
    auto cols = [&](std::size_t b, std::size_t e) {
        for (std::size_t i = 0; i < M; ++i)
            for (std::size_t j = b; j < e; ++j) C[i * ldc + j] = dot(A + i * lda, B + j * ldb, K);
    };
    if (pool) pool->parallel_for(N, cols); else cols(0, N);
}

} // namespace archetype::kernels
