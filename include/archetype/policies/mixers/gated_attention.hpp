#pragma once
// GatedSelfAttention: self-attention whose output is gated per channel by a sigmoid of a
// second query projection before o_proj (Qwen3-Next, Qwen3.5; llama.cpp qwen3next.cpp
// build_layer_attn, transformers Qwen3NextAttention):
//
//   [q_h | g_h] = attn_q(x), per head h     attn_q [E, 2·n_head·hd], rows interleaved per head
//   q, k        = per-head RMSNorm (attn_q_norm, attn_k_norm [hd]), then the model's RoPE
//   o           = attention(q, k, v) ⊙ sigmoid(g)
//   out         = attn_output(o)
//
// It projects its own rows and runs the session's attention over this layer's cells (the
// session's queries(), keys(), values(), rotate(), attend_latent(0, 0) — as
// MultiHeadLatentAttention does), so heads, position, mask and cache stay their own axes.
// The QK norms' eps is the model's ({arch}.attention.layer_norm_rms_epsilon).
#include <cmath>
#include <cstddef>
#include <string>

#include "archetype/core/error.hpp"
#include "archetype/core/policy.hpp"
#include "archetype/kernels/matmul.hpp"
#include "archetype/policies/impl.hpp"
#include "archetype/policies/mixer.hpp"

namespace archetype {

struct GatedSelfAttention {
    using axis = archetype::axis::mixer;
    static constexpr std::string_view name = "GatedSelfAttention";
    static constexpr bool attention = true;
    static std::string describe() { return "GatedSelfAttention (QK RMSNorm, output gated by sigmoid of a per-head query)"; }
};

template <>
struct mixer_impl<GatedSelfAttention> {
    struct weights {
        kernels::weight_view wqg{}, wk{}, wv{}, wo{};
        const float *q_norm = nullptr, *k_norm = nullptr; // [hd]
        std::size_t E = 0, n_head = 0, n_head_kv = 0, hd = 0;
        float eps = 1e-6f;
    };
    static constexpr bool keeps_kv = true;

    template <class Binder>
    static void bind(Binder& b, const std::string& blk, weights& w) {
        const auto& d = b.hparams().dims;
        if (d.n_head == 0)
            throw shape_error(b.prefix() + "attention.head_count = 0: the file has no attention heads, but layer " +
                              std::to_string(b.layer_index()) + "'s mixer is GatedSelfAttention");
        if (b.keys().head_dim_v != d.head_dim)
            throw shape_error(b.prefix() + "attention.value_length = " + std::to_string(b.keys().head_dim_v) +
                              " differs from key_length = " + std::to_string(d.head_dim) + " (not supported by GatedSelfAttention)");
        w.E = d.n_embd;
        w.n_head = d.n_head;
        w.n_head_kv = d.n_head_kv;
        w.hd = d.head_dim;
        w.eps = b.hparams().norm_eps;
        const std::size_t qw = w.n_head * w.hd, kw = w.n_head_kv * w.hd;
        w.wqg = b.matrix(blk + "attn_q.weight", w.E, 2 * qw);
        w.wk = b.matrix(blk + "attn_k.weight", w.E, kw);
        w.wv = b.matrix(blk + "attn_v.weight", w.E, kw);
        w.wo = b.matrix(blk + "attn_output.weight", qw, w.E);
        w.q_norm = b.vector_f32(blk + "attn_q_norm.weight", w.hd);
        w.k_norm = b.vector_f32(blk + "attn_k_norm.weight", w.hd);
    }
    static std::size_t scratch_floats(const weights& w, std::size_t rows) noexcept { return rows * 2 * w.n_head * w.hd; }

    template <class Ctx>
    static void forward(Ctx& c, const weights& w, const float* in, float* out) {
        const std::size_t n = c.rows(), hd = w.hd, qw = w.n_head * hd, kw = w.n_head_kv * hd;
        float* qg = c.scratch(); // [n x 2qw]: per head [q_h | g_h]; the gates stay here
        kernels::matmul(w.wqg, in, w.E, n, qg, 2 * qw, c.pool());
        float* q = c.queries();
        float* k = c.keys();
        kernels::matmul(w.wk, in, w.E, n, k, kw, c.pool());
        kernels::matmul(w.wv, in, w.E, n, c.values(), kw, c.pool());
        for (std::size_t t = 0; t < n; ++t) {
            for (std::size_t h = 0; h < w.n_head; ++h)
                rms_head(qg + t * 2 * qw + h * 2 * hd, q + t * qw + h * hd, hd, w.q_norm, w.eps);
            for (std::size_t h = 0; h < w.n_head_kv; ++h)
                rms_head(k + t * kw + h * hd, k + t * kw + h * hd, hd, w.k_norm, w.eps);
        }
        c.rotate(q, qw, w.n_head, hd);
        c.rotate(k, kw, w.n_head_kv, hd);
        c.attend_latent(0, 0.f); // values of their own (0), the model's score scale (0)
        float* o = c.attention_out();
        for (std::size_t t = 0; t < n; ++t)
            for (std::size_t h = 0; h < w.n_head; ++h) {
                const float* g = qg + t * 2 * qw + h * 2 * hd + hd;
                float* oh = o + t * qw + h * hd;
                for (std::size_t i = 0; i < hd; ++i) oh[i] *= 1.f / (1.f + std::exp(-g[i]));
            }
        kernels::matmul(w.wo, o, qw, n, out, w.E, c.pool());
    }

private:
    static void rms_head(const float* x, float* y, std::size_t n, const float* weight, float eps) noexcept {
        double ss = 0;
        for (std::size_t i = 0; i < n; ++i) ss += double(x[i]) * double(x[i]);
        const float r = 1.f / std::sqrt(float(ss / double(n)) + eps);
        for (std::size_t i = 0; i < n; ++i) y[i] = x[i] * r * weight[i];
    }
};

} // namespace archetype
