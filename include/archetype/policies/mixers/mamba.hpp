#pragma once
// Mamba: Mamba-1's mixer (Gu & Dao 2023; llama.cpp src/models/mamba-base.cpp
// build_mamba_layer, transformers MambaMixer), a recurrent mixer with a conv state and an
// SSM state per sequence.
//
//   [x | z]      = ssm_in(h)                           x, z [d_inner]
//   x            = silu(conv1d(x) + conv_b)            depthwise causal, kernel K, with state
//   [dt | B | C] = ssm_x(x)                            dt [R], B, C [N]
//   (dt, B, C    = RMSNorm of each: Jamba's ssm_{dt,b,c}_norm weights, or FalconMamba's
//                  {arch}.ssm.dt_b_c_rms without weights)
//   dt           = softplus(ssm_dt(dt) + ssm_dt.bias)  [d_inner]
//   y            = selective_scan(x, dt, A, B, C) + D ⊙ x   (kernels/selective_scan.hpp)
//   out          = ssm_out(y ⊙ silu(z))
//
// The decay is per channel and state (A [d_inner x N]), so the scan has no chunked matrix
// form (Mamba-2's has: policies/mixers/mamba2.hpp); prefill and decode both run it token
// by token.
//
// Keys: {arch}.ssm.conv_kernel = K, ssm.inner_size = d_inner, ssm.state_size = N,
// ssm.time_step_rank = R (the dt rank), ssm.dt_b_c_rms (optional, default false).
// Tensors blk.N.ssm_in.weight [E, 2·d_inner], ssm_conv1d.weight [K, d_inner] (+ .bias),
// ssm_x.weight [d_inner, R + 2N], ssm_dt.weight [R, d_inner] (+ .bias), ssm_a [N, d_inner]
// (A = −exp(A_log), as the converter writes it), ssm_d [d_inner], ssm_out.weight
// [d_inner, E]; Jamba's ssm_{dt,b,c}_norm.weight [R], [N], [N] where present. The norms'
// eps is the model's ({arch}.attention.layer_norm_rms_epsilon).
//
// Memory per sequence: (K−1)·d_inner floats of conv state, then d_inner·N of SSM state.
#include <cmath>
#include <cstddef>
#include <string>

#include "archetype/core/error.hpp"
#include "archetype/core/policy.hpp"
#include "archetype/kernels/causal_conv.hpp"
#include "archetype/kernels/matmul.hpp"
#include "archetype/kernels/selective_scan.hpp"
#include "archetype/policies/impl.hpp"
#include "archetype/policies/mixers/ssm_common.hpp"

namespace archetype {

struct Mamba {
    using axis = archetype::axis::mixer;
    static constexpr std::string_view name = "Mamba";
    static constexpr bool attention = false;
    static std::string describe() { return "Mamba (selective state space, Mamba-1)"; }
};

template <>
struct mixer_impl<Mamba> {
    struct weights {
        kernels::weight_view in_proj{}, x_proj{}, dt_proj{}, out_proj{};
        const float* conv = nullptr;   // [d_inner x K]
        const float* conv_b = nullptr; // [d_inner] or null
        const float *dt_b = nullptr, *A = nullptr, *D = nullptr;
        bool dt_b_c_norm = false;      // RMSNorm dt, B and C (weights below, or none)
        const float *dt_norm = nullptr, *b_norm = nullptr, *c_norm = nullptr;
        std::size_t E = 0, d_inner = 0, N = 0, R = 0, K = 0;
        float eps = 1e-5f;
    };
    static constexpr bool keeps_kv = false;

    template <class Binder>
    static void bind(Binder& b, const std::string& blk, weights& w) {
        w.E = b.hparams().dims.n_embd;
        w.K = detail::ssm_key(b, "ssm.conv_kernel", 64);
        w.d_inner = detail::ssm_key(b, "ssm.inner_size");
        w.N = detail::ssm_key(b, "ssm.state_size", 4096);
        w.R = detail::ssm_key(b, "ssm.time_step_rank");
        w.eps = b.hparams().norm_eps;
        const std::size_t DI = w.d_inner;
        w.in_proj = b.matrix(blk + "ssm_in.weight", w.E, 2 * DI);
        w.conv = detail::f32_tensor(b, blk + "ssm_conv1d.weight", {w.K, DI});
        w.conv_b = b.optional_vector_f32(blk + "ssm_conv1d.bias", DI);
        w.x_proj = b.matrix(blk + "ssm_x.weight", DI, w.R + 2 * w.N);
        w.dt_proj = b.matrix(blk + "ssm_dt.weight", w.R, DI);
        w.dt_b = b.vector_f32(blk + "ssm_dt.bias", DI);
        w.A = detail::f32_tensor(b, blk + "ssm_a", {w.N, DI});
        w.D = b.vector_f32(blk + "ssm_d", DI);
        w.out_proj = b.matrix(blk + "ssm_out.weight", DI, w.E);
        // the dt/B/C norms: Jamba's weights (all three, as llama.cpp requires), FalconMamba's flag
        const bool flag = b.file().template get_or<bool>(b.prefix() + "ssm.dt_b_c_rms", false);
        if (b.file().find_tensor(blk + "ssm_dt_norm.weight") || b.file().find_tensor(blk + "ssm_b_norm.weight") ||
            b.file().find_tensor(blk + "ssm_c_norm.weight")) {
            w.dt_norm = b.vector_f32(blk + "ssm_dt_norm.weight", w.R);
            w.b_norm = b.vector_f32(blk + "ssm_b_norm.weight", w.N);
            w.c_norm = b.vector_f32(blk + "ssm_c_norm.weight", w.N);
        }
        w.dt_b_c_norm = flag || w.dt_norm;
    }

    static std::size_t conv_state_floats(const weights& w) noexcept { return (w.K - 1) * w.d_inner; }
    static std::size_t state_floats(const weights& w) noexcept { return conv_state_floats(w) + w.d_inner * w.N; }
    static std::size_t scratch_floats(const weights& w, std::size_t rows) noexcept {
        return rows * (2 * w.d_inner + w.d_inner + (w.R + 2 * w.N) + 2 * w.d_inner);
    }

    template <class Ctx>
    static void forward(Ctx& c, const weights& w, const float* in, float* out) {
        const std::size_t n = c.rows(), E = w.E, DI = w.d_inner, XW = w.R + 2 * w.N;
        float* xz = c.scratch();    // [n x 2 DI]: x | z
        float* xc = xz + n * 2 * DI; // [n x DI]: x after the conv
        float* dbc = xc + n * DI;    // [n x (R + 2N)]: dt | B | C
        float* dt = dbc + n * XW;    // [n x DI]
        float* y = dt + n * DI;      // [n x DI]
        kernels::matmul(w.in_proj, in, E, n, xz, 2 * DI, c.pool());
        for (const auto& g : c.groups())
            kernels::causal_conv1d(g.n, DI, w.K, xz + g.row * 2 * DI, 2 * DI, w.conv, w.conv_b, c.state(g.seq),
                                   xc + g.row * DI, DI, c.pool());
        for (std::size_t i = 0; i < n * DI; ++i) xc[i] = detail::silu(xc[i]);
        kernels::matmul(w.x_proj, xc, DI, n, dbc, XW, c.pool());
        if (w.dt_b_c_norm)
            for (std::size_t t = 0; t < n; ++t) {
                float* r = dbc + t * XW;
                rms(r, w.R, w.dt_norm, w.eps);
                rms(r + w.R, w.N, w.b_norm, w.eps);
                rms(r + w.R + w.N, w.N, w.c_norm, w.eps);
            }
        kernels::matmul(w.dt_proj, dbc, XW, n, dt, DI, c.pool());
        for (std::size_t t = 0; t < n; ++t)
            for (std::size_t i = 0; i < DI; ++i) dt[t * DI + i] = detail::softplus(dt[t * DI + i] + w.dt_b[i]);
        for (const auto& g : c.groups()) {
            kernels::selective_scan_params p;
            p.n_tok = g.n;
            p.channels = DI;
            p.d_state = w.N;
            p.x = xc + g.row * DI;
            p.ldx = DI;
            p.dt = dt + g.row * DI;
            p.lddt = DI;
            p.A = w.A;
            p.B = dbc + g.row * XW + w.R;
            p.C = dbc + g.row * XW + w.R + w.N;
            p.ldbc = XW;
            p.state = c.state(g.seq) + conv_state_floats(w);
            p.y = y + g.row * DI;
            p.ldy = DI;
            kernels::selective_scan(p, c.pool());
        }
        for (std::size_t t = 0; t < n; ++t)
            for (std::size_t i = 0; i < DI; ++i)
                y[t * DI + i] = (y[t * DI + i] + w.D[i] * xc[t * DI + i]) * detail::silu(xz[t * 2 * DI + DI + i]);
        kernels::matmul(w.out_proj, y, DI, n, out, E, c.pool());
    }

private:
    /// v = v / rms(v) (· weight when there is one)
    static void rms(float* v, std::size_t n, const float* weight, float eps) noexcept {
        double ss = 0;
        for (std::size_t i = 0; i < n; ++i) ss += double(v[i]) * double(v[i]);
        const float r = 1.f / std::sqrt(float(ss / double(n)) + eps);
        for (std::size_t i = 0; i < n; ++i) v[i] = v[i] * r * (weight ? weight[i] : 1.f);
    }
};

} // namespace archetype
