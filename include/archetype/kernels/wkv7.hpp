#pragma once
// The RWKV-7 WKV recurrence (the generalised delta rule) over a run of tokens of
// ONE sequence. Per head (N channels), with S the N x N state indexed
// [value channel i][key channel j] (the layout of rwkv.cpp, ChatRWKV and ggml's
// rwkv_wkv7, and of the state a session saves):
//     sa[i]   = sum_j S[i][j] * a[j]                        (a = -kk: what S removes)
//     S[i][j] = S[i][j] * w[j] + sa[i] * b[j] + v[i] * k[j] (b = kk * iclr: what it writes back)
//     out[i]  = sum_j S[i][j] * r[j]                        (the updated S)
// Tokens strictly in order (exact, no chunked form); heads independent and split
// across the pool, so results do not depend on the thread count.
//
// Accuracy: the GroupNorm after it divides by the spread of a head's outputs, so
// the two reductions are summed in double (the update is one float FMA chain per
// element). Each reduction keeps 8 independent double partial sums: one serial chain
// of N dependent additions per row made the kernel latency-bound (about 0.7 s of a
// 512-token prompt on the 0.1B shape), eight chains let the compiler vectorise it. The
// shared RWKV-7 fixtures (float64 numpy of the reference) check it to 1e-5.
#include <cstddef>

#include "archetype/core/thread_pool.hpp"

namespace archetype::kernels {

namespace detail {
/// sum_j x[j] * y[j] in double, as 8 interleaved partial sums added pairwise.
inline double dot_f64(const float* x, const float* y, std::size_t n) noexcept {
    double acc[8] = {};
    const std::size_t body = n - n % 8;
    for (std::size_t j = 0; j < body; j += 8)
        for (std::size_t u = 0; u < 8; ++u) acc[u] += double(x[j + u]) * double(y[j + u]);
    double s = ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
    for (std::size_t j = body; j < n; ++j) s += double(x[j]) * double(y[j]);
    return s;
}
} // namespace detail

/// Inputs [n_tok rows x ld], head h at column h*N; S: n_head consecutive N x N
/// matrices (updated in place); out [n_tok rows x ldo].
inline void wkv7(std::size_t n_tok, std::size_t n_head, std::size_t N, const float* r, const float* w,
                 const float* k, const float* v, const float* a, const float* b, std::size_t ld, float* S,
                 float* out, std::size_t ldo, thread_pool* pool) {
    auto head = [&](std::size_t h) {
        float* Sh = S + h * N * N;
        for (std::size_t t = 0; t < n_tok; ++t) {
            const std::size_t at = t * ld + h * N;
            const float *rt = r + at, *wt = w + at, *kt = k + at, *vt = v + at, *at_ = a + at, *bt = b + at;
            float* ot = out + t * ldo + h * N;
            for (std::size_t i = 0; i < N; ++i) {
                float* row = Sh + i * N;
                const float saf = float(detail::dot_f64(row, at_, N)), vi = vt[i];
                for (std::size_t j = 0; j < N; ++j) row[j] = row[j] * wt[j] + saf * bt[j] + vi * kt[j];
                ot[i] = float(detail::dot_f64(row, rt, N));
            }
        }
    };
    if (pool && n_head > 1)
        pool->for_each_task(n_head, head);
    else
        for (std::size_t h = 0; h < n_head; ++h) head(h);
}

} // namespace archetype::kernels
