#pragma once
// GatedDeltaNet: the gated delta rule as a mixer (Qwen3-Next, Qwen3.5; llama.cpp
// qwen3next.cpp / qwen35.cpp build_layer_attn_linear over delta-net-base.cpp, transformers
// Qwen3NextGatedDeltaNet), with a conv state and a delta-rule state per sequence.
//
//   qkv        = attn_qkv(h)                  q [Hk·dk] | k [Hk·dk] | v [Hv·dv]
//   z          = attn_gate(h)                 [Hv·dv]
//   b, a       = ssm_beta(h), ssm_alpha(h)    [Hv] each (qwen35), or one fused ssm_ba [2·Hv]
//                                             grouped per key head: [b (r) | a (r)] × Hk, r = Hv/Hk
//                                             (qwen3next), by the tensors the file has
//   qkv        = silu(conv1d(qkv))            depthwise causal, kernel K, no bias, with state
//   q, k       = L2-normalised per head (x · rsqrt(Σx² + 1e-6), transformers' l2norm); q /= √dk
//   beta       = sigmoid(b);  g = ssm_a · softplus(a + ssm_dt.bias)   (ssm_a = −exp(A_log) < 0)
//   o          = gated delta rule (kernels/gated_delta.hpp): value head j reads key head
//                j / r (Order = grouped: qwen3next) or j % Hk (tiled: qwen35, whose converter
//                reorders the value heads)
//   o_j        = RMSNorm(o_j over dv) · ssm_norm ⊙ silu(z_j)
//   out        = ssm_out(o)
//
// Prefill runs the rule in its chunked WY form (chunks of 64, llama.cpp's), decode the
// recurrence; both are the same map within float32 rounding.
//
// Keys: {arch}.ssm.conv_kernel = K, ssm.state_size = dk, ssm.group_count = Hk (key heads),
// ssm.time_step_rank = Hv (value heads), ssm.inner_size = Hv·dv. Tensors blk.N.attn_qkv,
// attn_gate, ssm_ba or ssm_beta + ssm_alpha, ssm_conv1d.weight [K, 2·Hk·dk + Hv·dv],
// ssm_dt.bias [Hv], ssm_a [Hv], ssm_norm.weight [dv], ssm_out. The output norm's eps is the
// model's ({arch}.attention.layer_norm_rms_epsilon).
//
// Memory per sequence: (K−1)·(2·Hk·dk + Hv·dv) floats of conv state, then Hv·dk·dv.
#include <cmath>
#include <cstddef>
#include <string>

#include "archetype/core/error.hpp"
#include "archetype/core/policy.hpp"
#include "archetype/kernels/causal_conv.hpp"
#include "archetype/kernels/gated_delta.hpp"
#include "archetype/kernels/matmul.hpp"
#include "archetype/policies/impl.hpp"
#include "archetype/policies/mixers/ssm_common.hpp"

namespace archetype {

template <kernels::value_head_order Order = kernels::value_head_order::grouped>
struct GatedDeltaNetWith {
    using axis = archetype::axis::mixer;
    static constexpr std::string_view name = "GatedDeltaNet";
    static constexpr bool attention = false;
    static std::string describe() {
        return std::string("GatedDeltaNet (gated delta rule, value heads ") +
               (Order == kernels::value_head_order::grouped ? "grouped" : "tiled") + " over key heads)";
    }
};
using GatedDeltaNet = GatedDeltaNetWith<>;

template <kernels::value_head_order Order>
struct mixer_impl<GatedDeltaNetWith<Order>> {
    /// Tokens per chunk of the WY form (prefill).
    static constexpr std::size_t chunk = 64;

    struct weights {
        kernels::weight_view qkv{}, gate{}, out{};
        kernels::weight_view ba{};          // fused [b | a] per key head (qwen3next), or
        kernels::weight_view beta{}, alpha{}; // separate (qwen35)
        bool fused_ba = false;
        const float* conv = nullptr; // [CD x K]
        const float* conv_b = nullptr;
        const float *dt_b = nullptr, *A = nullptr, *norm = nullptr;
        std::size_t E = 0, K = 0, Hk = 0, Hv = 0, dk = 0, dv = 0;
        float eps = 1e-6f;
        std::size_t conv_dim() const noexcept { return 2 * Hk * dk + Hv * dv; }
    };
    static constexpr bool keeps_kv = false;

    template <class Binder>
    static void bind(Binder& b, const std::string& blk, weights& w) {
        w.E = b.hparams().dims.n_embd;
        w.K = detail::ssm_key(b, "ssm.conv_kernel", 64);
        w.dk = detail::ssm_key(b, "ssm.state_size", 4096);
        w.Hk = detail::ssm_key(b, "ssm.group_count");
        w.Hv = detail::ssm_key(b, "ssm.time_step_rank");
        const std::size_t inner = detail::ssm_key(b, "ssm.inner_size");
        if (inner % w.Hv != 0 || w.Hv % w.Hk != 0)
            throw shape_error(b.prefix() + "ssm.inner_size = " + std::to_string(inner) + ", ssm.time_step_rank = " +
                              std::to_string(w.Hv) + ", ssm.group_count = " + std::to_string(w.Hk) +
                              ": the value heads must divide the inner size and be a multiple of the key heads");
        w.dv = inner / w.Hv;
        w.eps = b.hparams().norm_eps;
        const std::size_t CD = w.conv_dim();
        w.qkv = b.matrix(blk + "attn_qkv.weight", w.E, CD);
        w.gate = b.matrix(blk + "attn_gate.weight", w.E, inner);
        w.fused_ba = b.file().find_tensor(blk + "ssm_ba.weight") != nullptr;
        if (w.fused_ba) {
            w.ba = b.matrix(blk + "ssm_ba.weight", w.E, 2 * w.Hv);
        } else {
            w.beta = b.matrix(blk + "ssm_beta.weight", w.E, w.Hv);
            w.alpha = b.matrix(blk + "ssm_alpha.weight", w.E, w.Hv);
        }
        w.conv = detail::f32_tensor(b, blk + "ssm_conv1d.weight", {w.K, CD});
        w.conv_b = b.optional_vector_f32(blk + "ssm_conv1d.bias", CD);
        w.dt_b = b.vector_f32(blk + "ssm_dt.bias", w.Hv);
        w.A = b.vector_f32(blk + "ssm_a", w.Hv);
        w.norm = b.vector_f32(blk + "ssm_norm.weight", w.dv);
        w.out = b.matrix(blk + "ssm_out.weight", inner, w.E);
    }

    static std::size_t conv_state_floats(const weights& w) noexcept { return (w.K - 1) * w.conv_dim(); }
    static std::size_t state_floats(const weights& w) noexcept { return conv_state_floats(w) + w.Hv * w.dk * w.dv; }
    static std::size_t scratch_floats(const weights& w, std::size_t rows) noexcept {
        const std::size_t inner = w.Hv * w.dv;
        // qkv, its conv, z, o, [b | a] (2 Hv), then g and beta (Hv each)
        return rows * (2 * w.conv_dim() + 2 * inner + 4 * w.Hv) + kernels::gated_delta_chunked_scratch(rule_shape(w), chunk);
    }
    /// The rule's dimensions (what its scratch depends on; the forward pass adds the rows).
    static kernels::gated_delta_params rule_shape(const weights& w) noexcept {
        kernels::gated_delta_params p;
        p.n_key_heads = w.Hk;
        p.n_value_heads = w.Hv;
        p.dk = w.dk;
        p.dv = w.dv;
        p.order = Order;
        return p;
    }

    template <class Ctx>
    static void forward(Ctx& c, const weights& w, const float* in, float* out) {
        const std::size_t n = c.rows(), E = w.E, CD = w.conv_dim(), inner = w.Hv * w.dv, Hv = w.Hv;
        float* raw = c.scratch();      // [n x CD]
        float* qkv = raw + n * CD;     // [n x CD] after the conv
        float* z = qkv + n * CD;       // [n x inner]
        float* o = z + n * inner;      // [n x inner]
        float* ba = o + n * inner;     // [n x 2Hv]
        float* g = ba + n * 2 * Hv;    // [n x Hv]
        float* beta = g + n * Hv;      // [n x Hv]
        float* wy_scratch = beta + n * Hv;
        kernels::matmul(w.qkv, in, E, n, raw, CD, c.pool());
        kernels::matmul(w.gate, in, E, n, z, inner, c.pool());
        if (w.fused_ba) {
            kernels::matmul(w.ba, in, E, n, ba, 2 * Hv, c.pool());
        } else {
            kernels::matmul(w.beta, in, E, n, ba, 2 * Hv, c.pool());
            kernels::matmul(w.alpha, in, E, n, ba + Hv, 2 * Hv, c.pool());
        }
        const std::size_t r = Hv / w.Hk;
        for (std::size_t t = 0; t < n; ++t) {
            const float* row = ba + t * 2 * Hv;
            for (std::size_t j = 0; j < Hv; ++j) {
                // fused: key head kh's block [b (r) | a (r)]; separate: [b (Hv) | a (Hv)]
                const float bj = w.fused_ba ? row[(j / r) * 2 * r + j % r] : row[j];
                const float aj = w.fused_ba ? row[(j / r) * 2 * r + r + j % r] : row[Hv + j];
                beta[t * Hv + j] = 1.f / (1.f + std::exp(-bj));
                g[t * Hv + j] = w.A[j] * detail::softplus(aj + w.dt_b[j]);
            }
        }
        for (const auto& gr : c.groups())
            kernels::causal_conv1d(gr.n, CD, w.K, raw + gr.row * CD, CD, w.conv, w.conv_b, c.state(gr.seq),
                                   qkv + gr.row * CD, CD, c.pool());
        const float q_scale = 1.f / std::sqrt(float(w.dk));
        for (std::size_t t = 0; t < n; ++t) {
            float* row = qkv + t * CD;
            for (std::size_t i = 0; i < CD; ++i) row[i] = detail::silu(row[i]);
            for (std::size_t h = 0; h < 2 * w.Hk; ++h) l2_normalise(row + h * w.dk, w.dk, h < w.Hk ? q_scale : 1.f);
        }
        for (const auto& gr : c.groups()) {
            kernels::gated_delta_params p = rule_shape(w);
            p.n_tok = gr.n;
            p.q = qkv + gr.row * CD;
            p.k = p.q + w.Hk * w.dk;
            p.ldqk = CD;
            p.v = p.q + 2 * w.Hk * w.dk;
            p.ldv = CD;
            p.g = g + gr.row * Hv;
            p.beta = beta + gr.row * Hv;
            p.ldgb = Hv;
            p.state = c.state(gr.seq) + conv_state_floats(w);
            p.o = o + gr.row * inner;
            p.ldo = inner;
            if (gr.n == 1) kernels::gated_delta_recurrent(p, c.pool());
            else kernels::gated_delta_chunked(p, chunk, wy_scratch, c.pool());
        }
        // per value head: RMSNorm · ssm_norm, then ⊙ silu(z)
        for (std::size_t t = 0; t < n; ++t)
            for (std::size_t j = 0; j < Hv; ++j) {
                float* oj = o + t * inner + j * w.dv;
                const float* zj = z + t * inner + j * w.dv;
                double ss = 0;
                for (std::size_t i = 0; i < w.dv; ++i) ss += double(oj[i]) * double(oj[i]);
                const float rr = 1.f / std::sqrt(float(ss / double(w.dv)) + w.eps);
                for (std::size_t i = 0; i < w.dv; ++i) oj[i] = oj[i] * rr * w.norm[i] * detail::silu(zj[i]);
            }
        kernels::matmul(w.out, o, inner, n, out, E, c.pool());
    }

private:
    /// x · rsqrt(Σx² + 1e-6) · scale (transformers' l2norm, eps 1e-6)
    static void l2_normalise(float* x, std::size_t n, float scale) noexcept {
        double ss = 0;
        for (std::size_t i = 0; i < n; ++i) ss += double(x[i]) * double(x[i]);
        const float f = scale / std::sqrt(float(ss) + 1e-6f);
        for (std::size_t i = 0; i < n; ++i) x[i] *= f;
    }
};

} // namespace archetype
