#pragma once
// A depthwise causal 1-D convolution over the rows of ONE sequence, with its state:
// the last K-1 input rows of the sequence before this run (zeros at its start).
//
//   s          = state rows 0..K-2 (oldest first), then the run's input rows
//   out[t, c]  = bias[c] + sum_{i<K} s[t + i, c] · w[c·K + i]
//   state      = the last K-1 rows of s
//
// Mamba's conv1d, Mamba-2's (over x | B | C) and gated DeltaNet's (over q | k | v) are
// this kernel (ggml's ssm_conv: weights ne [K, C], so w[c·K + i]). Channels are split
// across the pool; each output is one fixed sum, so results do not depend on the
// thread count.
#include <algorithm>
#include <cstddef>

#include "archetype/core/thread_pool.hpp"

namespace archetype::kernels {

/// in [n rows x ld_in] (channels 0..C-1 of each row), out [n rows x ld_out], state
/// [(K-1) x C] updated in place; bias may be null.
inline void causal_conv1d(std::size_t n, std::size_t C, std::size_t K, const float* in, std::size_t ld_in,
                          const float* w, const float* bias, float* state, float* out, std::size_t ld_out,
                          thread_pool* pool) {
    auto channels = [&](std::size_t c0, std::size_t c1) {
        // row j of s: the state's row j for j < K-1, else the run's input row j-(K-1)
        auto s_at = [&](std::size_t j, std::size_t c) -> float {
            return j + 1 < K ? state[j * C + c] : in[(j - (K - 1)) * ld_in + c];
        };
        for (std::size_t t = 0; t < n; ++t) {
            float* o = out + t * ld_out;
            if (t + 1 >= K) { // the window lies inside the run: a straight loop over channels
                const float* base = in + (t + 1 - K) * ld_in;
                for (std::size_t c = c0; c < c1; ++c) {
                    float acc = bias ? bias[c] : 0.f;
                    for (std::size_t i = 0; i < K; ++i) acc += base[i * ld_in + c] * w[c * K + i];
                    o[c] = acc;
                }
            } else {
                for (std::size_t c = c0; c < c1; ++c) {
                    float acc = bias ? bias[c] : 0.f;
                    for (std::size_t i = 0; i < K; ++i) acc += s_at(t + i, c) * w[c * K + i];
                    o[c] = acc;
                }
            }
        }
        // the new state: rows n .. n+K-2 of s; row k of the new state is row k+n of s, which is
        // never a state row already overwritten (k + n > k)
        for (std::size_t k = 0; k + 1 < K; ++k)
            for (std::size_t c = c0; c < c1; ++c) state[k * C + c] = s_at(k + n, c);
    };
    if (pool && C >= 256)
        pool->parallel_for(C, channels);
    else
        channels(0, C);
}

} // namespace archetype::kernels
