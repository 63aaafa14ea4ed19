#pragma once
// Scalar twin of kernels/attention.hpp: the definition written as plainly as
// possible (double accumulation, one query row and head at a time), for tests.
#include <cmath>
#include <cstddef>
#include <limits>
#include <vector>

#include "archetype/core/half.hpp"
#include "archetype/kernels/attention.hpp"

namespace archetype::kernels::reference {

template <class Visible>
void attention(const attention_params& p, Visible&& visible) {
    const std::size_t hd = p.head_dim, group = p.n_head / p.n_head_kv;
    // element c of key / value row j of kv head g (float or half storage)
    auto key = [&](std::size_t g, std::size_t j, std::size_t c) -> double {
        const std::size_t at = g * p.kv_head_stride + j * p.ldkv + c;
        return p.k16 ? double(fp16_to_fp32(p.k16[at])) : double(p.k[at]);
    };
    auto value = [&](std::size_t g, std::size_t j, std::size_t c) -> double {
        const std::size_t at = g * p.kv_head_stride + j * p.ldkv + c;
        return p.v16 ? double(fp16_to_fp32(p.v16[at])) : double(p.v[at]);
    };
    std::vector<double> s(p.n_kv);
    for (std::size_t i = 0; i < p.n_q; ++i)
        for (std::size_t h = 0; h < p.n_head; ++h) {
            const std::size_t g = h / group;
            const float* q = p.q + i * p.ldq + h * hd;
            double m = -std::numeric_limits<double>::infinity();
            for (std::size_t j = 0; j < p.n_kv; ++j) {
                double d = 0;
                for (std::size_t c = 0; c < hd; ++c) d += double(q[c]) * key(g, j, c);
                d *= p.scale;
                if (p.softcap != 0.f) d = p.softcap * std::tanh(d / p.softcap);
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
                    acc += s[j] / sum * value(g, j, c);
                o[c] = float(acc);
            }
        }
}

inline void attention(const attention_params& p) { reference::attention(p, all_visible{}); }

} // namespace archetype::kernels::reference
