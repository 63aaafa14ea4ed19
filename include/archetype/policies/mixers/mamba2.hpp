#pragma once
// Mamba2: Mamba-2's mixer (Dao & Gu 2024; llama.cpp src/models/mamba-base.cpp
// build_mamba2_layer, transformers Mamba2Mixer), a recurrent mixer with a conv state
// and an SSM state per sequence.
//
//   [z | xBC | dt] = ssm_in(h)           z [d_inner], xBC [d_inner + 2·G·N], dt [H]
//   xBC            = silu(conv1d(xBC) + conv_b)    depthwise causal, kernel K, with state
//   [x | B | C]    = xBC                 x: H heads of P = d_inner / H; B, C: G groups of N
//   dt             = softplus(dt + dt_b)          (at least dt_min: Mamba2With<DtMinMillionths>)
//   y              = SSD(x, dt, A, B, C) + D ⊙ x   (kernels/ssd.hpp; A, D per head)
//   y              = RMSNorm_G(y ⊙ silu(z)) · ssm_norm   gated first, then an RMSNorm over
//                                                   each of the G groups of d_inner / G
//   out            = ssm_out(y)
//
// Prefill runs the SSD in its chunked matrix form (chunks of 64 tokens), decode the
// recurrence; both are the same map within float32 rounding.
//
// Keys: {arch}.ssm.conv_kernel = K, ssm.inner_size = d_inner, ssm.state_size = N,
// ssm.time_step_rank = H (llama.cpp's name for the head count), ssm.group_count = G.
// Tensors blk.N.ssm_{in,out}.weight, ssm_conv1d.weight [K, d_inner + 2GN] (+ .bias,
// optional as in llama.cpp's granitehybrid), ssm_dt.bias [H], ssm_a [1, H] (A = −exp(A_log),
// as the converter writes it), ssm_d [1, H], ssm_norm.weight [d_inner / G, G] (optional:
// no norm without it, as llama.cpp). The gated norm's eps is the model's
// ({arch}.attention.layer_norm_rms_epsilon).
//
// Memory per sequence: (K−1)·(d_inner + 2GN) floats of conv state, then H·P·N of SSM
// state ([head][p][n], ggml's layout).
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>

#include "archetype/core/error.hpp"
#include "archetype/core/policy.hpp"
#include "archetype/kernels/causal_conv.hpp"
#include "archetype/kernels/matmul.hpp"
#include "archetype/kernels/ssd.hpp"
#include "archetype/policies/impl.hpp"
#include "archetype/policies/mixers/ssm_common.hpp"

namespace archetype {

/// DtMinMillionths: a floor on dt after the softplus, in millionths (0: none). Nemotron-H's
/// transformers model clamps dt at config.time_step_min (1e-3), a value its GGUF does not
/// carry (llama.cpp does not clamp): its preset says Mamba2With<1000>. (An integer, not a
/// float template argument: clang 14, the sanitizer compiler, has no float NTTPs;
/// 1000 / 1e6f is 1e-3f, correctly rounded, the float32 value torch's clamp compares with.)
template <std::uint32_t DtMinMillionths = 0>
struct Mamba2With {
    using axis = archetype::axis::mixer;
    static constexpr std::string_view name = "Mamba2";
    static constexpr bool attention = false;
    static constexpr float dt_min = float(DtMinMillionths) / 1e6f;
    static std::string describe() {
        return DtMinMillionths == 0 ? "Mamba2 (selective state space, SSD)"
                                    : "Mamba2 (selective state space, SSD; dt >= " + std::to_string(dt_min) + ")";
    }
};
using Mamba2 = Mamba2With<>;

template <std::uint32_t DtMinMillionths>
struct mixer_impl<Mamba2With<DtMinMillionths>> {
    static constexpr float DtMin = Mamba2With<DtMinMillionths>::dt_min;
    /// Tokens per chunk of the SSD's matrix form (prefill).
    static constexpr std::size_t chunk = 64;

    struct weights {
        kernels::weight_view in_proj{}, out_proj{};
        const float* conv = nullptr;   // [conv_dim x K]: conv[c * K + i]
        const float* conv_b = nullptr; // [conv_dim] or null
        const float *dt_b = nullptr, *A = nullptr, *D = nullptr; // [H]
        const float* norm = nullptr;   // [d_inner] or null
        std::size_t E = 0, d_inner = 0, N = 0, H = 0, P = 0, G = 0, K = 0;
        float eps = 1e-5f;
        std::size_t conv_dim() const noexcept { return d_inner + 2 * G * N; }
        std::size_t in_width() const noexcept { return 2 * d_inner + 2 * G * N + H; }
    };
    static constexpr bool keeps_kv = false;

    template <class Binder>
    static void bind(Binder& b, const std::string& blk, weights& w) {
        w.E = b.hparams().dims.n_embd;
        w.K = detail::ssm_key(b, "ssm.conv_kernel", 64);
        w.d_inner = detail::ssm_key(b, "ssm.inner_size");
        w.N = detail::ssm_key(b, "ssm.state_size", 4096);
        w.H = detail::ssm_key(b, "ssm.time_step_rank");
        w.G = detail::ssm_key(b, "ssm.group_count");
        if (w.d_inner % w.H != 0 || w.H % w.G != 0)
            throw shape_error(b.prefix() + "ssm.inner_size = " + std::to_string(w.d_inner) + ", ssm.time_step_rank = " +
                              std::to_string(w.H) + ", ssm.group_count = " + std::to_string(w.G) +
                              ": Mamba-2 needs heads dividing the inner size and groups dividing the heads");
        w.P = w.d_inner / w.H;
        w.eps = b.hparams().norm_eps;
        const std::size_t cd = w.conv_dim();
        w.in_proj = b.matrix(blk + "ssm_in.weight", w.E, w.in_width());
        w.out_proj = b.matrix(blk + "ssm_out.weight", w.d_inner, w.E);
        w.conv = detail::f32_tensor(b, blk + "ssm_conv1d.weight", {w.K, cd});
        w.conv_b = b.optional_vector_f32(blk + "ssm_conv1d.bias", cd);
        w.dt_b = b.vector_f32(blk + "ssm_dt.bias", w.H);
        w.A = detail::f32_tensor(b, blk + "ssm_a", {1, w.H});
        w.D = detail::f32_tensor(b, blk + "ssm_d", {1, w.H});
        if (b.file().find_tensor(blk + "ssm_norm.weight"))
            w.norm = detail::f32_tensor(b, blk + "ssm_norm.weight", {w.d_inner / w.G, w.G});
    }

    static std::size_t conv_state_floats(const weights& w) noexcept { return (w.K - 1) * w.conv_dim(); }
    static std::size_t state_floats(const weights& w) noexcept { return conv_state_floats(w) + w.H * w.P * w.N; }
    static std::size_t scratch_floats(const weights& w, std::size_t rows) noexcept {
        return rows * (w.in_width() + w.conv_dim() + w.d_inner + w.H) + kernels::ssd_chunked_scratch(ssd_shape(w), chunk);
    }

    /// The scan's dimensions (what its scratch depends on; the forward pass adds the rows).
    static kernels::ssd_params ssd_shape(const weights& w) noexcept {
        kernels::ssd_params p;
        p.n_head = w.H;
        p.head_dim = w.P;
        p.d_state = w.N;
        p.n_group = w.G;
        return p;
    }

    /// The pass's rows `in` [rows x E] -> `out` [rows x E].
    template <class Ctx>
    static void forward(Ctx& c, const weights& w, const float* in, float* out) {
        const std::size_t n = c.rows(), E = w.E, W = w.in_width(), cd = w.conv_dim(), DI = w.d_inner;
        float* zx = c.scratch();       // [n x W]: z | xBC | dt
        float* xbc = zx + n * W;       // [n x cd]: x | B | C after the conv
        float* y = xbc + n * cd;       // [n x d_inner]
        float* dt = y + n * DI;        // [n x H]
        float* ssd_scratch = dt + n * w.H;
        kernels::matmul(w.in_proj, in, E, n, zx, W, c.pool());
        for (std::size_t t = 0; t < n; ++t)
            for (std::size_t h = 0; h < w.H; ++h) {
                const float d = detail::softplus(zx[t * W + DI + cd + h] + w.dt_b[h]);
                dt[t * w.H + h] = DtMin > 0.f && d < DtMin ? DtMin : d;
            }
        for (const auto& g : c.groups()) {
            float* conv_state = c.state(g.seq);
            float* ssm_state = conv_state + conv_state_floats(w);
            float* xg = xbc + g.row * cd;
            kernels::causal_conv1d(g.n, cd, w.K, zx + g.row * W + DI, W, w.conv, w.conv_b, conv_state, xg, cd, c.pool());
            for (std::size_t i = 0; i < g.n * cd; ++i) xg[i] = detail::silu(xg[i]);
            kernels::ssd_params p = ssd_shape(w);
            p.n_tok = g.n;
            p.x = xg;
            p.ldx = cd;
            p.B = xg + DI;
            p.C = xg + DI + w.G * w.N;
            p.ldbc = cd;
            p.dt = dt + g.row * w.H;
            p.lddt = w.H;
            p.A = w.A;
            p.state = ssm_state;
            p.y = y + g.row * DI;
            p.ldy = DI;
            if (g.n == 1) kernels::ssd_recurrent(p, c.pool());
            else kernels::ssd_chunked(p, chunk, ssd_scratch, c.pool());
        }
        // y += D ⊙ x; y ⊙= silu(z); the grouped RMSNorm
        const std::size_t gw = DI / w.G;
        for (std::size_t t = 0; t < n; ++t) {
            float* yr = y + t * DI;
            const float* x = xbc + t * cd;
            const float* z = zx + t * W;
            for (std::size_t i = 0; i < DI; ++i) yr[i] = (yr[i] + w.D[i / w.P] * x[i]) * detail::silu(z[i]);
            if (!w.norm) continue;
            for (std::size_t gi = 0; gi < w.G; ++gi) {
                float* v = yr + gi * gw;
                double ss = 0;
                for (std::size_t i = 0; i < gw; ++i) ss += double(v[i]) * double(v[i]);
                const float r = 1.f / std::sqrt(float(ss / double(gw)) + w.eps);
                for (std::size_t i = 0; i < gw; ++i) v[i] = v[i] * r * w.norm[gi * gw + i];
            }
        }
        kernels::matmul(w.out_proj, y, DI, n, out, E, c.pool());
    }
};

} // namespace archetype
