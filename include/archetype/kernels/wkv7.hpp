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
// element). The reductions are 2 N^2 multiply-adds per head and token beside the
// N^2 of the update, a small part of a token's work next to the projections. The
// shared RWKV-7 fixtures (float64 numpy of the reference) check it to 1e-5.
#include <cstddef>

#include "archetype/core/thread_pool.hpp"

namespace archetype::kernels {

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
                double sa = 0;
                for (std::size_t j = 0; j < N; ++j) sa += double(row[j]) * double(at_[j]);
                const float saf = float(sa), vi = vt[i];
                double o = 0;
                for (std::size_t j = 0; j < N; ++j) {
                    row[j] = row[j] * wt[j] + saf * bt[j] + vi * kt[j];
                    o += double(row[j]) * double(rt[j]);
                }
                ot[i] = float(o);
            }
        }
    };
    if (pool && n_head > 1)
        pool->for_each_task(n_head, head);
    else
        for (std::size_t h = 0; h < n_head; ++h) head(h);
}

} // namespace archetype::kernels
