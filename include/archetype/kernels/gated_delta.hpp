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
// Heads are split across the pool, each computed by one task in a fixed order (the chunked
// form's products by kernels::gemm_nt on one thread, inside the task), so results do not
// depend on the thread count; the recurrence is plain loops for the compiler's vectoriser.
#include <algorithm>
#include <cmath>
#include <cstddef>

#include "archetype/core/thread_pool.hpp"
#include "archetype/kernels/blas.hpp"
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
    const std::size_t dk = p.dk, dv = p.dv;
    return p.n_value_heads * (Q + 2 * Q * Q + 3 * dk * Q + 2 * dv * Q + Q * dv + Q * dk + dv * dk);
}

/// The chunked WY form, chunks of Q tokens (the last may be shorter); scratch:
/// gated_delta_chunked_scratch(p, Q) floats. The products are GEMMs (gemm_nt, one thread
/// inside a head's task); the chunk's triangular system is solved by forward substitution.
inline void gated_delta_chunked(const gated_delta_params& p, std::size_t Q, float* scratch, thread_pool* pool) {
    const std::size_t dk = p.dk, dv = p.dv;
    const std::size_t per_head = Q + 2 * Q * Q + 3 * dk * Q + 2 * dv * Q + Q * dv + Q * dk + dv * dk;
    detail::for_each_in(pool, p.n_value_heads, [&](std::size_t j) {
        float* G = scratch + j * per_head; // [Q] cumulative log-decay
        float* T = G + Q;                  // [Q x Q] A, then T = (I - A)^-1 (unit diagonal)
        float* QK = T + Q * Q;             // [Q x Q] q_t·k_s, then the masked decayed scores
        float* KbT = QK + Q * Q;           // [dk x Q] (beta ⊙ exp(G) ⊙ K)ᵀ
        float* KdT = KbT + dk * Q;         // [dk x Q] (exp(G_q - G) ⊙ K)ᵀ
        float* Qe = KdT + dk * Q;          // [Q x dk] exp(G) ⊙ Q
        float* VbT = Qe + Q * dk;          // [dv x Q] (beta ⊙ V)ᵀ
        float* VpT = VbT + dv * Q;         // [dv x Q] V'ᵀ
        float* U = VpT + dv * Q;           // [Q x dv] U, then V'
        float* W = U + Q * dv;             // [Q x dk] −W
        float* ST = W + Q * dk;            // [dv x dk] Sᵀ
        float* S = p.state + j * dk * dv;
        const std::size_t kh = p.key_head(j);
        for (std::size_t t0 = 0; t0 < p.n_tok; t0 += Q) {
            const std::size_t q = std::min(Q, p.n_tok - t0);
            const float* Qc = p.q + t0 * p.ldqk + kh * dk;
            const float* Kc = p.k + t0 * p.ldqk + kh * dk;
            const float* Vc = p.v + t0 * p.ldv + j * dv;
            float* O = p.o + t0 * p.ldo + j * dv;
            auto beta = [&](std::size_t t) { return p.beta[(t0 + t) * p.ldgb + j]; };
            float acc = 0.f;
            for (std::size_t t = 0; t < q; ++t) G[t] = acc += p.g[(t0 + t) * p.ldgb + j];
            // A[t][s] = −beta_t (k_t·k_s) exp(G_t − G_s), s < t
            gemm_nt(Kc, p.ldqk, Kc, p.ldqk, T, Q, q, q, dk);
            for (std::size_t t = 0; t < q; ++t)
                for (std::size_t s = 0; s < t; ++s) T[t * Q + s] *= -beta(t) * std::exp(G[t] - G[s]);
            // T = (I − A)^-1 below the diagonal, row by row: T_t = A_t + Σ_{m<t} A[t][m] T_m over
            // the entries s < m (rows m < t final already); A_t kept aside (in QK, free here)
            for (std::size_t t = 1; t < q; ++t) {
                float* row = T + t * Q;
                float* a = QK;
                for (std::size_t m = 0; m < t; ++m) a[m] = row[m];
                for (std::size_t m = 1; m < t; ++m) {
                    const float f = a[m];
                    const float* tm = T + m * Q;
                    for (std::size_t s2 = 0; s2 < m; ++s2) row[s2] += f * tm[s2];
                }
            }
            for (std::size_t t = 0; t < q; ++t) {
                T[t * Q + t] = 1.f;
                for (std::size_t s = t + 1; s < q; ++s) T[t * Q + s] = 0.f;
            }
            // the transposed, weighted inputs of the products below
            const float gq = G[q - 1];
            for (std::size_t s = 0; s < q; ++s) {
                const float bs = beta(s), es = std::exp(G[s]), ds = std::exp(gq - G[s]);
                const float* ks = Kc + s * p.ldqk;
                const float* qs = Qc + s * p.ldqk;
                const float* vs = Vc + s * p.ldv;
                for (std::size_t i = 0; i < dk; ++i) {
                    KbT[i * Q + s] = bs * es * ks[i];
                    KdT[i * Q + s] = ds * ks[i];
                    Qe[s * dk + i] = es * qs[i];
                }
                for (std::size_t c = 0; c < dv; ++c) VbT[c * Q + s] = bs * vs[c];
            }
            for (std::size_t i = 0; i < dk; ++i)
                for (std::size_t c = 0; c < dv; ++c) ST[c * dk + i] = S[i * dv + c];
            // U = T (beta ⊙ V);  −W = −T (beta ⊙ exp(G) ⊙ K);  V' = U − W S₀
            gemm_nt(T, Q, VbT, Q, U, dv, q, dv, q);
            gemm_nt(T, Q, KbT, Q, W, dk, q, dk, q);
            for (std::size_t i = 0; i < q * dk; ++i) W[i] = -W[i];
            gemm_nt(W, dk, ST, dk, U, dv, q, dv, dk, nullptr, true);
            // o = (exp(G) ⊙ Q) S₀ + M V', M[t][s] = (q_t·k_s) exp(G_t − G_s) for s <= t
            gemm_nt(Qe, dk, ST, dk, O, p.ldo, q, dv, dk);
            gemm_nt(Qc, p.ldqk, Kc, p.ldqk, QK, Q, q, q, dk);
            for (std::size_t t = 0; t < q; ++t)
                for (std::size_t s = 0; s < q; ++s) QK[t * Q + s] = s <= t ? QK[t * Q + s] * std::exp(G[t] - G[s]) : 0.f;
            for (std::size_t s = 0; s < q; ++s)
                for (std::size_t c = 0; c < dv; ++c) VpT[c * Q + s] = U[s * dv + c];
            gemm_nt(QK, Q, VpT, Q, O, p.ldo, q, dv, q, nullptr, true);
            // S = exp(G_q) S₀ + (exp(G_q − G) ⊙ K)ᵀ V'
            const float eq = std::exp(gq);
            for (std::size_t i = 0; i < dk * dv; ++i) S[i] *= eq;
            gemm_nt(KdT, Q, VpT, Q, S, dv, dk, dv, q, nullptr, true);
        }
    });
}

} // namespace archetype::kernels
