#pragma once
// The gated delta rule (Yang, Kautz & Hatamizadeh 2024, "Gated Delta Networks") over a run
// of tokens of ONE sequence. Per value head j (reading key head kh(j)), with S the
// dk x dv state [key channel i][value channel c]:
//
//   S      = exp(g_t) · S                          g_t < 0: a scalar decay per head and token
//   delta  = beta_t · (v_t − Sᵀ k_t)              what the memory gets wrong about k_t
//   S      = S + k_t ⊗ delta                       the rank-1 correction
//   o_t    = Sᵀ q_t
//
// (q, k as given: normalised and scaled by the caller.) gated_delta_recurrent runs it token
// by token (decode). gated_delta_chunked is the same map in the chunked WY form (Yang et al.
// 2024, "Parallelizing Linear Transformers with the Delta Rule", §3; transformers'
// torch_chunk_gated_delta_rule): in a chunk of Q tokens with cumulative log-decays G_t,
//
//   A[t][s] = −beta_t (k_t·k_s) exp(G_t − G_s)  (s < t);  T = (I − A_strict)^−1 by forward
//            substitution (the WY representation of the chunk's Q rank-1 corrections)
//   U = T (beta ⊙ V),   W = T (beta ⊙ exp(G) ⊙ K)
//   V' = U − W S_0                              the chunk's corrected values
//   o_t = exp(G_t) q_t S_0 + Σ_{s<=t} (q_t·k_s) exp(G_t − G_s) V'_s
//   S   = exp(G_Q) S_0 + Σ_s exp(G_Q − G_s) k_s ⊗ V'_s
//
// Both equal the recurrence within float32 rounding (tests/kernels/test_gated_delta.cpp).
// Heads are split across the pool, each computed by one task in a fixed order, so results
// do not depend on the thread count; plain loops for the compiler's vectoriser (as
// kernels/ssd.hpp).
#include <algorithm>
#include <cmath>
#include <cstddef>

#include "archetype/core/thread_pool.hpp"
#include "archetype/kernels/ssd.hpp"

namespace archetype::kernels {

/// Which key head a value head reads when there are fewer key heads (Hk) than value heads
/// (Hv = r·Hk): grouped, value head j reads key head j / r (transformers' layout,
/// qwen3next's GGUF); tiled, j % Hk (qwen35's GGUF, whose converter reorders the heads).
enum class value_head_order { grouped, tiled };

struct gated_delta_params {
    std::size_t n_tok = 0, n_key_heads = 0, n_value_heads = 0, dk = 0, dv = 0;
    value_head_order order = value_head_order::grouped;
    const float* q = nullptr; ///< [n_tok rows x ldqk], key head h at column h·dk
    const float* k = nullptr; ///< same layout as q
    std::size_t ldqk = 0;
    const float* v = nullptr; ///< [n_tok rows x ldv], value head j at column j·dv
    std::size_t ldv = 0;
    const float* g = nullptr;    ///< [n_tok rows x ldgb], the log-decay of head j at column j
    const float* beta = nullptr; ///< same layout as g
    std::size_t ldgb = 0;
    float* state = nullptr; ///< [Hv x dk x dv], updated in place
    float* o = nullptr;     ///< [n_tok rows x ldo], value head j at column j·dv
    std::size_t ldo = 0;

    std::size_t key_head(std::size_t j) const noexcept {
        return order == value_head_order::grouped ? j / (n_value_heads / n_key_heads) : j % n_key_heads;
    }
};

/// The recurrence, token by token.
inline void gated_delta_recurrent(const gated_delta_params& p, thread_pool* pool) {
    const std::size_t dk = p.dk, dv = p.dv;
    detail::for_each_in(pool, p.n_value_heads, [&](std::size_t j) {
        float* S = p.state + j * dk * dv;
        const std::size_t kh = p.key_head(j);
        for (std::size_t t = 0; t < p.n_tok; ++t) {
            const float* q = p.q + t * p.ldqk + kh * dk;
            const float* k = p.k + t * p.ldqk + kh * dk;
            const float* v = p.v + t * p.ldv + j * dv;
            float* o = p.o + t * p.ldo + j * dv;
            const float decay = std::exp(p.g[t * p.ldgb + j]), beta = p.beta[t * p.ldgb + j];
            // o doubles as Sᵀ k, then delta, before it receives Sᵀ q
            for (std::size_t c = 0; c < dv; ++c) o[c] = 0.f;
            for (std::size_t i = 0; i < dk; ++i) {
                float* si = S + i * dv;
                for (std::size_t c = 0; c < dv; ++c) o[c] += (si[c] *= decay) * k[i];
            }
            for (std::size_t c = 0; c < dv; ++c) o[c] = beta * (v[c] - o[c]);
            for (std::size_t i = 0; i < dk; ++i) {
                float* si = S + i * dv;
                for (std::size_t c = 0; c < dv; ++c) si[c] += k[i] * o[c];
            }
            for (std::size_t c = 0; c < dv; ++c) o[c] = 0.f;
            for (std::size_t i = 0; i < dk; ++i) {
                const float* si = S + i * dv;
                for (std::size_t c = 0; c < dv; ++c) o[c] += si[c] * q[i];
            }
        }
    });
}

/// Floats of scratch gated_delta_chunked needs for chunks of Q tokens.
inline std::size_t gated_delta_chunked_scratch(const gated_delta_params& p, std::size_t Q) noexcept {
    return p.n_value_heads * (Q + Q * Q + Q * (p.dk + p.dv));
}

/// The chunked WY form, chunks of Q tokens (the last may be shorter); scratch:
/// gated_delta_chunked_scratch(p, Q) floats.
inline void gated_delta_chunked(const gated_delta_params& p, std::size_t Q, float* scratch, thread_pool* pool) {
    const std::size_t dk = p.dk, dv = p.dv, per_head = Q + Q * Q + Q * (dk + dv);
    detail::for_each_in(pool, p.n_value_heads, [&](std::size_t j) {
        float* G = scratch + j * per_head; // [Q] cumulative log-decay
        float* T = G + Q;                  // [Q x Q] A, then T (lower triangle)
        float* W = T + Q * Q;              // [Q x dk]
        float* U = W + Q * dk;             // [Q x dv]: U, then V'
        float* S = p.state + j * dk * dv;
        const std::size_t kh = p.key_head(j);
        auto qrow = [&](std::size_t t) { return p.q + t * p.ldqk + kh * dk; };
        auto krow = [&](std::size_t t) { return p.k + t * p.ldqk + kh * dk; };
        for (std::size_t t0 = 0; t0 < p.n_tok; t0 += Q) {
            const std::size_t q = std::min(Q, p.n_tok - t0);
            float acc = 0.f;
            for (std::size_t t = 0; t < q; ++t) G[t] = acc += p.g[(t0 + t) * p.ldgb + j];
            auto beta = [&](std::size_t t) { return p.beta[(t0 + t) * p.ldgb + j]; };
            // A (strictly lower), then T = (I - A)^-1 row by row: T[t][s] = A[t][s] + Σ_{s<m<t} A[t][m] T[m][s]
            for (std::size_t t = 0; t < q; ++t)
                for (std::size_t s = 0; s < t; ++s)
                    T[t * Q + s] = -beta(t) * detail::dot_f32(krow(t0 + t), krow(t0 + s), dk) * std::exp(G[t] - G[s]);
            for (std::size_t t = 1; t < q; ++t) {
                float* row = T + t * Q;
                // row[s] += Σ_{m=s+1}^{t-1} A[t][m] · T[m][s], with A[t][m] the row's value before this
                // step: ascending s reads only entries m > s, not yet updated
                for (std::size_t s = 0; s < t; ++s) {
                    float add = 0.f;
                    for (std::size_t m = s + 1; m < t; ++m) add += row[m] * T[m * Q + s];
                    row[s] += add;
                }
            }
            // U = T (beta ⊙ V), W = T (beta ⊙ exp(G) ⊙ K), T with its unit diagonal
            for (std::size_t t = 0; t < q; ++t) {
                float* u = U + t * dv;
                float* w = W + t * dk;
                const float bt = beta(t), et = std::exp(G[t]);
                const float* vt = p.v + (t0 + t) * p.ldv + j * dv;
                const float* kt = krow(t0 + t);
                for (std::size_t c = 0; c < dv; ++c) u[c] = bt * vt[c];
                for (std::size_t i = 0; i < dk; ++i) w[i] = bt * et * kt[i];
                for (std::size_t s = 0; s < t; ++s) {
                    const float a = T[t * Q + s], bs = beta(s), es = std::exp(G[s]);
                    const float* vs = p.v + (t0 + s) * p.ldv + j * dv;
                    const float* ks = krow(t0 + s);
                    for (std::size_t c = 0; c < dv; ++c) u[c] += a * bs * vs[c];
                    for (std::size_t i = 0; i < dk; ++i) w[i] += a * bs * es * ks[i];
                }
            }
            // V' = U - W S_0;  o_t = exp(G_t) q_t S_0 (from the state before the chunk)
            for (std::size_t t = 0; t < q; ++t) {
                float* u = U + t * dv;
                float* o = p.o + (t0 + t) * p.ldo + j * dv;
                const float* w = W + t * dk;
                const float* qt = qrow(t0 + t);
                const float et = std::exp(G[t]);
                for (std::size_t c = 0; c < dv; ++c) o[c] = 0.f;
                for (std::size_t i = 0; i < dk; ++i) {
                    const float* si = S + i * dv;
                    const float wi = w[i], qi = et * qt[i];
                    for (std::size_t c = 0; c < dv; ++c) {
                        u[c] -= wi * si[c];
                        o[c] += qi * si[c];
                    }
                }
            }
            // o_t += Σ_{s<=t} (q_t·k_s) exp(G_t - G_s) V'_s
            for (std::size_t t = 0; t < q; ++t) {
                float* o = p.o + (t0 + t) * p.ldo + j * dv;
                for (std::size_t s = 0; s <= t; ++s) {
                    const float a = detail::dot_f32(qrow(t0 + t), krow(t0 + s), dk) * std::exp(G[t] - G[s]);
                    const float* u = U + s * dv;
                    for (std::size_t c = 0; c < dv; ++c) o[c] += a * u[c];
                }
            }
            // S = exp(G_q) S + Σ_s exp(G_q - G_s) k_s ⊗ V'_s
            const float eq = std::exp(G[q - 1]);
            for (std::size_t i = 0; i < dk; ++i) {
                float* si = S + i * dv;
                for (std::size_t c = 0; c < dv; ++c) si[c] *= eq;
            }
            for (std::size_t s = 0; s < q; ++s) {
                const float e = std::exp(G[q - 1] - G[s]);
                const float* ks = krow(t0 + s);
                const float* u = U + s * dv;
                for (std::size_t i = 0; i < dk; ++i) {
                    float* si = S + i * dv;
                    const float f = e * ks[i];
                    for (std::size_t c = 0; c < dv; ++c) si[c] += f * u[c];
                }
            }
        }
    });
}

} // namespace archetype::kernels
