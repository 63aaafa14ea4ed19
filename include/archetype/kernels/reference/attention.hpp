#pragma once
// Scalar twin of kernels/attention.hpp: the definition written as plainly as
// possible (double accumulation, one query row and head at a time), for tests.
#include <cmath>
#include <cstddef>
#include <limits>
#include <vector>

#include "archetype/kernels/attention.hpp"

namespace archetype::kernels::reference {

template <class Visible>
void attention(const attention_params& p, Visible&& visible) {
    const std::size_t hd = p.head_dim, group = p.n_head / p.n_head_kv;
    std::vector<double> s(p.n_kv);
    for (std::size_t i = 0; i < p.n_q; ++i)
        for (std::size_t h = 0; h < p.n_head; ++h) {
            const std::size_t g = h / group;
            const float* q = p.q + i * p.ldq + h * hd;
            double m = -std::numeric_limits<double>::infinity();
            for (std::size_t j = 0; j < p.n_kv; ++j) {
                const float* k = p.k + g * p.kv_head_stride + j * p.ldkv;
                double d = 0;
                for (std::size_t c = 0; c < hd; ++c) d += double(q[c]) * k[c];
                d *= p.scale;
                if (p.bias) d += p.bias[h * p.bias_head_stride + i * p.ld_bias + j];
                s[j] = visible(i, j) ? d : -std::numeric_limits<double>::infinity();
                if (s[j] > m) m = s[j];
            }
            float* o = p.out + i * p.ldo + h * hd;
            for (std::size_t c = 0; c < hd; ++c) o[c] = 0.f;
            if (m == -std::numeric_limits<double>::infinity()) continue;
            double sum = 0;
            for (std::size_t j = 0; j < p.n_kv; ++j) sum += s[j] = std::exp(s[j] - m);
            for (std::size_t c = 0; c < hd; ++c) {
                double acc = 0;
                for (std::size_t j = 0; j < p.n_kv; ++j)
                    acc += s[j] / sum * p.v[g * p.kv_head_stride + j * p.ldkv + c];
                o[c] = float(acc);
            }
        }
}

inline void attention(const attention_params& p) { reference::attention(p, all_visible{}); }

} // namespace archetype::kernels::reference
