#pragma once
// The RWKV v5/v6 WKV recurrence ("linear attention with decay") over a run of
// tokens of ONE sequence. Per head h (N channels), with S the N x N state
// indexed [key channel i][value channel j]:
//     out[j]  = sum_i r[i] * (u[i] * k[i] * v[j] + S[i][j])
//     S[i][j] = w[i] * S[i][j] + k[i] * v[j]
// Tokens are processed strictly in order (the recurrence is exact, never
// approximated by a chunked form); heads are independent and split across the
// pool, so results do not depend on the thread count. Vectorised over the value
// index j: a row of S is contiguous. Scalar twin: kernels/reference/wkv.hpp.
//
// Accuracy: out[j] is a sum whose terms can cancel, and the GroupNorm that
// follows divides by the (sometimes tiny) spread of a head's outputs, so
// rounding there is amplified into the logits. Hence out[j] = a v[j] + (r S)[j]
// with a = sum_i r[i] u[i] k[i] summed in double once per head and token, and
// (r S)[j] summed with an exact FMA product and a compensated (TwoSum)
// addition; the wkv is a small part of a token's work.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <type_traits>

#include "archetype/core/simd.hpp"
#include "archetype/core/thread_pool.hpp"
#include "archetype/kernels/simd_util.hpp"

namespace archetype::kernels {

namespace detail {

// out[j] = sum_i r[i] u[i] k[i] v[j] + sum_i r[i] S[i][j] = a v[j] + (r S)[j]:
// the bonus part is one scalar a per head and token (summed in double); the
// state part is summed with an exact FMA product and a compensated TwoSum
// addition; the two are added in double and rounded once.
inline constexpr std::size_t wkv_block = 64;

/// The rounding error of p = a * b (a * b - p exactly, barring overflow). One fused
/// multiply-subtract where the hardware fuses; on a CPU without FMA (the SSE2
/// baseline) xsimd's fms is a rounded product minus p, which loses the error, so
/// Dekker's split does it in plain arithmetic: 4097 = 2^12 + 1 cuts each 24-bit
/// significand into two halves whose products are exact.
template <class B>
inline B product_error(const B& a, const B& b, const B& p) noexcept {
    if constexpr (simd::fused_multiply_add) {
        return xsimd::fms(a, b, p);
    } else {
        const B split(4097.f);
        const B ta = split * a, tb = split * b;
        const B ah = ta - (ta - a), bh = tb - (tb - b);
        const B al = a - ah, bl = b - bh;
        return (((ah * bh - p) + ah * bl) + al * bh) + al * bl;
    }
}

// One head over n_tok tokens, all pointers already offset to the head.
// B: a float batch whose size divides N, or void for the scalar path.
template <class B>
inline void wkv_head(std::size_t n_tok, std::size_t N, const float* r, const float* k, const float* v,
                     const float* w, std::size_t ld, std::size_t ldw, const float* u, float* S, float* out,
                     std::size_t ldo) noexcept {
    for (std::size_t t = 0; t < n_tok; ++t) {
        const float* rt = r + t * ld;
        const float* kt = k + t * ld;
        const float* vt = v + t * ld;
        const float* wt = w + t * ldw;
        float* ot = out + t * ldo;
        double a = 0;
        for (std::size_t i = 0; i < N; ++i) a += double(rt[i]) * double(u[i]) * double(kt[i]);
        for (std::size_t jb = 0; jb < N; jb += wkv_block) {
            const std::size_t nb = std::min(wkv_block, N - jb);
            alignas(64) float acc[wkv_block] = {}, comp[wkv_block] = {};
            for (std::size_t i = 0; i < N; ++i) {
                float* Si = S + i * N + jb;
                const float* vi = vt + jb;
                const float ri = rt[i], ki = kt[i], wi = wt[i];
                if constexpr (std::is_void_v<B>) {
                    for (std::size_t j = 0; j < nb; ++j) {
                        const float s = Si[j];
                        const float p = ri * s;
                        const float pe = std::fma(ri, s, -p);
                        const float sum = acc[j] + p;
                        const float z = sum - acc[j];
                        comp[j] += ((acc[j] - (sum - z)) + (p - z)) + pe;
                        acc[j] = sum;
                        Si[j] = std::fma(wi, s, ki * vi[j]);
                    }
                } else {
                    const B rb(ri), kb(ki), wb(wi);
                    for (std::size_t j = 0; j < nb; j += B::size) {
                        const B s = B::load_unaligned(Si + j);
                        const B p = rb * s;
                        const B pe = product_error(rb, s, p);
                        const B a0 = B::load_aligned(acc + j);
                        const B sum = a0 + p;
                        const B z = sum - a0;
                        (B::load_aligned(comp + j) + (((a0 - (sum - z)) + (p - z)) + pe)).store_aligned(comp + j);
                        sum.store_aligned(acc + j);
                        xsimd::fma(wb, s, kb * B::load_unaligned(vi + j)).store_unaligned(Si + j);
                    }
                }
            }
            for (std::size_t j = 0; j < nb; ++j)
                ot[jb + j] = float(a * double(vt[jb + j]) + (double(acc[j]) + double(comp[j])));
        }
    }
}

} // namespace detail

/// WKV over n_tok consecutive tokens of one sequence.
/// r, k, v: [n_tok x n_head*N], row stride ld. w: per-channel decay multipliers
/// (already exp(-exp(.))), row stride ldw (0 = the same w for every token, v5).
/// u: the bonus (time_first), n_head*N. state: n_head x N x N, updated in place.
/// out: [n_tok x n_head*N], row stride ldo (must not alias r, k, v or w).
inline void wkv(std::size_t n_tok, std::size_t n_head, std::size_t N, const float* r, const float* k,
                const float* v, const float* w, std::size_t ld, std::size_t ldw, const float* u, float* state,
                float* out, std::size_t ldo, thread_pool* pool = nullptr) {
    using B = xsimd::batch<float>;
    auto heads = [&](std::size_t hb, std::size_t he) {
        for (std::size_t h = hb; h < he; ++h) {
            const std::size_t o = h * N;
            float* S = state + h * N * N;
            if (N % B::size == 0 && (N <= detail::wkv_block || N % detail::wkv_block == 0))
                detail::wkv_head<B>(n_tok, N, r + o, k + o, v + o, w + o, ld, ldw, u + o, S, out + o, ldo);
            else
                detail::wkv_head<void>(n_tok, N, r + o, k + o, v + o, w + o, ld, ldw, u + o, S, out + o, ldo);
        }
    };
    if (pool && n_head > 1) pool->parallel_for(n_head, heads); else heads(0, n_head);
}

} // namespace archetype::kernels
