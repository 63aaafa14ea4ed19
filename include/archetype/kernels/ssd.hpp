#pragma once
// Mamba-2's scan (state-space duality, SSD) over a run of tokens of ONE sequence.
// Per head h (P channels), with a scalar decay per token and head, and B, C shared by
// the heads of a group (g = h / (H / G)):
//
//   S_t[p][n] = exp(dt_t·A_h) · S_{t-1}[p][n] + dt_t · x_t[p] · B_t[n]      S: P x N per head
//   y_t[p]    = sum_n S_t[p][n] · C_t[n]
//
// (dt already through softplus; A_h < 0.) ssd_recurrent runs it token by token (decode).
// ssd_chunked is the same map in its matrix form (Dao & Gu 2024, "Transformers are SSMs",
// §6): in a chunk of Q tokens with cumulative log-decays L_t = sum_{s<=t} dt_s·A_h,
//
//   y_t   = exp(L_t) · S_0 C_t  +  sum_{s<=t} (C_t·B_s) · exp(L_t - L_s) · dt_s · x_s
//   S_end = exp(L_Q) · S_0      +  sum_s exp(L_Q - L_s) · dt_s · x_s B_sᵀ
//
// i.e. per chunk one Q x Q masked score matrix per group (C Bᵀ, computed once for the
// group's heads) and three small GEMMs per head instead of Q rank-1 state updates.
// Both equal the recurrence within float32 rounding (tests/kernels/test_ssd.cpp).
//
// Work is split by head (and by group for C Bᵀ); each output is computed by one task
// in a fixed order (the chunked form's products by kernels::gemm_nt on one thread, inside
// the task), so results do not depend on the thread count. The recurrence is plain loops
// over contiguous floats, written for the compiler's vectoriser (as kernels/wkv7.hpp).
#include <algorithm>
#include <cmath>
#include <cstddef>

#include "archetype/core/thread_pool.hpp"
#include "archetype/kernels/blas.hpp"

namespace archetype::kernels {

struct ssd_params {
    std::size_t n_tok = 0, n_head = 0, head_dim = 0, d_state = 0, n_group = 1;
    const float* x = nullptr;  ///< [n_tok rows x ldx], head h at column h·P
    std::size_t ldx = 0;
    const float* B = nullptr;  ///< [n_tok rows x ldbc], group g at column g·N
    const float* C = nullptr;  ///< same layout as B
    std::size_t ldbc = 0;
    const float* dt = nullptr; ///< [n_tok rows x lddt], head h at column h (after softplus)
    std::size_t lddt = 0;
    const float* A = nullptr;  ///< [n_head] (negative)
    float* state = nullptr;    ///< [n_head x P x N], updated in place
    float* y = nullptr;        ///< [n_tok rows x ldy], head h at column h·P
    std::size_t ldy = 0;
};

namespace detail {
template <class F>
void for_each_in(thread_pool* pool, std::size_t n, F&& f) {
    if (pool && n > 1) pool->for_each_task(n, f);
    else
        for (std::size_t i = 0; i < n; ++i) f(i);
}
inline float dot_f32(const float* a, const float* b, std::size_t n) noexcept {
    float acc[8] = {};
    const std::size_t body = n - n % 8;
    for (std::size_t j = 0; j < body; j += 8)
        for (std::size_t u = 0; u < 8; ++u) acc[u] += a[j + u] * b[j + u];
    float s = ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
    for (std::size_t j = body; j < n; ++j) s += a[j] * b[j];
    return s;
}
} // namespace detail

/// The recurrence, token by token.
inline void ssd_recurrent(const ssd_params& p, thread_pool* pool) {
    const std::size_t P = p.head_dim, N = p.d_state, per_group = p.n_head / p.n_group;
    detail::for_each_in(pool, p.n_head, [&](std::size_t h) {
        float* S = p.state + h * P * N;
        const std::size_t g = h / per_group;
        for (std::size_t t = 0; t < p.n_tok; ++t) {
            const float dt = p.dt[t * p.lddt + h], dA = std::exp(dt * p.A[h]);
            const float* x = p.x + t * p.ldx + h * P;
            const float* B = p.B + t * p.ldbc + g * N;
            const float* C = p.C + t * p.ldbc + g * N;
            float* y = p.y + t * p.ldy + h * P;
            for (std::size_t i = 0; i < P; ++i) {
                float* s = S + i * N;
                const float xdt = x[i] * dt;
                for (std::size_t n = 0; n < N; ++n) s[n] = s[n] * dA + B[n] * xdt;
                y[i] = detail::dot_f32(s, C, N);
            }
        }
    });
}

/// Floats of scratch ssd_chunked needs for chunks of Q tokens.
inline std::size_t ssd_chunked_scratch(const ssd_params& p, std::size_t Q) noexcept {
    return p.n_group * (Q * Q + p.d_state * Q) + p.n_head * (Q + Q * Q + 2 * p.head_dim * Q);
}

/// The chunked matrix form, chunks of Q tokens (the last may be shorter); scratch:
/// ssd_chunked_scratch(p, Q) floats. Each product is a GEMM (gemm_nt, one thread inside a
/// head's task): per group C Bᵀ [q x q] and Bᵀ [N x q]; per head the incoming state's
/// outputs C S₀ᵀ [q x P], the masked decay-weighted scores M [q x q] times X [q x P], and
/// the outgoing state (w ⊙ X)ᵀ B [P x N].
inline void ssd_chunked(const ssd_params& p, std::size_t Q, float* scratch, thread_pool* pool) {
    const std::size_t P = p.head_dim, N = p.d_state, H = p.n_head, G = p.n_group, per_group = H / G;
    float* group_all = scratch;                      // per group: CB [Q x Q], Bt [N x Q]
    float* head_all = scratch + G * (Q * Q + N * Q); // per head: L [Q], M [Q x Q], Xt [P x Q], Xw [P x Q]
    for (std::size_t t0 = 0; t0 < p.n_tok; t0 += Q) {
        const std::size_t q = std::min(Q, p.n_tok - t0);
        detail::for_each_in(pool, G, [&](std::size_t g) {
            float* cb = group_all + g * (Q * Q + N * Q);
            float* bt = cb + Q * Q;
            const float* Bc = p.B + t0 * p.ldbc + g * N;
            gemm_nt(p.C + t0 * p.ldbc + g * N, p.ldbc, Bc, p.ldbc, cb, Q, q, q, N);
            for (std::size_t s = 0; s < q; ++s)
                for (std::size_t n = 0; n < N; ++n) bt[n * Q + s] = Bc[s * p.ldbc + n];
        });
        detail::for_each_in(pool, H, [&](std::size_t h) {
            const std::size_t g = h / per_group;
            const float* cb = group_all + g * (Q * Q + N * Q);
            const float* bt = cb + Q * Q;
            float* L = head_all + h * (Q + Q * Q + 2 * P * Q);
            float* M = L + Q;
            float* Xt = M + Q * Q;
            float* Xw = Xt + P * Q;
            float* S = p.state + h * P * N;
            float* y = p.y + t0 * p.ldy + h * P;
            auto dt = [&](std::size_t t) { return p.dt[(t0 + t) * p.lddt + h]; };
            float acc = 0.f;
            for (std::size_t t = 0; t < q; ++t) L[t] = acc += dt(t) * p.A[h];
            // the incoming state's outputs: y_t = exp(L_t) · S₀ C_t
            gemm_nt(p.C + t0 * p.ldbc + g * N, p.ldbc, S, N, y, p.ldy, q, P, N);
            for (std::size_t t = 0; t < q; ++t) {
                const float e = std::exp(L[t]);
                for (std::size_t i = 0; i < P; ++i) y[t * p.ldy + i] *= e;
            }
            // within the chunk: y += M X, M[t][s] = (C_t·B_s) exp(L_t - L_s) dt_s for s <= t
            for (std::size_t t = 0; t < q; ++t)
                for (std::size_t s = 0; s < q; ++s)
                    M[t * Q + s] = s <= t ? cb[t * Q + s] * std::exp(L[t] - L[s]) * dt(s) : 0.f;
            const float eq = std::exp(L[q - 1]);
            for (std::size_t s = 0; s < q; ++s) {
                const float* xs = p.x + (t0 + s) * p.ldx + h * P;
                const float ws = std::exp(L[q - 1] - L[s]) * dt(s);
                for (std::size_t i = 0; i < P; ++i) {
                    Xt[i * Q + s] = xs[i];
                    Xw[i * Q + s] = ws * xs[i];
                }
            }
            gemm_nt(M, Q, Xt, Q, y, p.ldy, q, P, q, nullptr, true);
            // the outgoing state: S = exp(L_q) S + (w ⊙ X)ᵀ B, w_s = exp(L_q - L_s) dt_s
            for (std::size_t i = 0; i < P * N; ++i) S[i] *= eq;
            gemm_nt(Xw, Q, bt, Q, S, N, P, N, q, nullptr, true);
        });
    }
}

} // namespace archetype::kernels
