#pragma once
// Mamba-1's selective scan over a run of tokens of ONE sequence. Per channel c (of D) and
// state n (of N), with a decay per channel AND state (which is why it has no SSD matrix
// form: Mamba-2's decay is one scalar per head):
//
//   S_t[c][n] = exp(dt_t[c] · A[c][n]) · S_{t-1}[c][n] + dt_t[c] · x_t[c] · B_t[n]
//   y_t[c]    = sum_n S_t[c][n] · C_t[n]
//
// (dt already through softplus; A < 0; B and C shared by all channels.) Token by token,
// channels split across the pool (each channel's sums in one fixed order, so results do
// not depend on the thread count); plain loops for the compiler's vectoriser, as
// kernels/ssd.hpp.
#include <cmath>
#include <cstddef>

#include "archetype/core/thread_pool.hpp"
#include "archetype/kernels/ssd.hpp"

namespace archetype::kernels {

struct selective_scan_params {
    std::size_t n_tok = 0, channels = 0, d_state = 0;
    const float* x = nullptr;  ///< [n_tok rows x ldx]
    std::size_t ldx = 0;
    const float* dt = nullptr; ///< [n_tok rows x lddt] (after softplus)
    std::size_t lddt = 0;
    const float* A = nullptr;  ///< [channels x N]
    const float* B = nullptr;  ///< [n_tok rows x ldbc]
    const float* C = nullptr;  ///< [n_tok rows x ldbc]
    std::size_t ldbc = 0;
    float* state = nullptr;    ///< [channels x N], updated in place
    float* y = nullptr;        ///< [n_tok rows x ldy]
    std::size_t ldy = 0;
};

inline void selective_scan(const selective_scan_params& p, thread_pool* pool) {
    const std::size_t N = p.d_state;
    auto channels = [&](std::size_t c0, std::size_t c1) {
        for (std::size_t t = 0; t < p.n_tok; ++t) {
            const float* B = p.B + t * p.ldbc;
            const float* C = p.C + t * p.ldbc;
            for (std::size_t c = c0; c < c1; ++c) {
                const float dt = p.dt[t * p.lddt + c], xdt = p.x[t * p.ldx + c] * dt;
                const float* A = p.A + c * N;
                float* s = p.state + c * N;
                for (std::size_t n = 0; n < N; ++n) s[n] = s[n] * std::exp(dt * A[n]) + B[n] * xdt;
                p.y[t * p.ldy + c] = detail::dot_f32(s, C, N);
            }
        }
    };
    if (pool && p.channels >= 64)
        pool->parallel_for(p.channels, channels);
    else
        channels(0, p.channels);
}

} // namespace archetype::kernels
