#pragma once
// Scalar twin of kernels/wkv.hpp: the RWKV v5/v6 WKV recurrence written as the
// math reads, one element at a time. Tests compare the vector kernel with it.
#include <cstddef>

namespace archetype::kernels::reference {

/// See kernels::wkv for the contract; same arguments, no thread pool.
/// out_h[j] = sum_i r[i] (u[i] k[i] v[j] + S[i][j]);  S[i][j] <- w[i] S[i][j] + k[i] v[j].
inline void wkv(std::size_t n_tok, std::size_t n_head, std::size_t N, const float* r, const float* k,
                const float* v, const float* w, std::size_t ld, std::size_t ldw, const float* u,
                float* state, float* out, std::size_t ldo) noexcept {
    for (std::size_t t = 0; t < n_tok; ++t) {
        for (std::size_t h = 0; h < n_head; ++h) {
            float* S = state + h * N * N;
            const std::size_t o = h * N;
            for (std::size_t j = 0; j < N; ++j) {
                float acc = 0.f;
                for (std::size_t i = 0; i < N; ++i) {
                    const float kv = k[t * ld + o + i] * v[t * ld + o + j];
                    acc += r[t * ld + o + i] * (u[o + i] * kv + S[i * N + j]);
                }
                out[t * ldo + o + j] = acc;
            }
            for (std::size_t i = 0; i < N; ++i)
                for (std::size_t j = 0; j < N; ++j)
                    S[i * N + j] = w[t * ldw + o + i] * S[i * N + j] + k[t * ld + o + i] * v[t * ld + o + j];
        }
    }
}

} // namespace archetype::kernels::reference
