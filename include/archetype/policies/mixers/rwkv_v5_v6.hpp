#pragma once
// Rwkv5TimeMix and Rwkv6TimeMix as mixers of the decoder core: RWKV-5.2's and RWKV-6's time
// mix (layers/rwkv_time_mix.hpp, the same code rwkv_forward runs) on any layer of a Decoder —
// alone (an RWKV model composed on the core: docs/rwkv.md) or per layer beside attention
// (HybridMixer<SelfAttention, Rwkv6TimeMix>).
//
// Its memory per sequence is the token-shift vector [C] and the H x N x N wkv matrix.
//
// Tensors per layer, llama.cpp's rwkv6 names: time_mix_lerp_x [C], time_mix_lerp_fused
// [C, 1, 1, 5] (w, k, v, r, g), time_mix_w1 [C, 5 D_MIX], time_mix_w2 [D_MIX, C, 5],
// time_mix_decay [C], time_mix_decay_w1 [C, D_DECAY], time_mix_decay_w2 [D_DECAY, C],
// time_mix_first [N, H] (the bonus u), time_mix_{receptance, key, value, gate, output}
// [C, C], time_mix_ln (+ .bias) [C]. RWKV-5.2 (no GGUF architecture in llama.cpp: rwkv.cpp's
// .bin files, converted by io/rwkv_bin_gguf.hpp) has static lerps instead of the ddlerp,
// time_mix_lerp_{k, v, r, g} [C] (as 1 - mu: x_c = xa + (prev - xa) * lerp_c), and a static
// decay, time_mix_decay [C] holding exp(-exp(w0)).
// Keys: {arch}.wkv.head_size = N (C = the embedding width); the LoRA ranks come from the
// tensors' shapes and must agree with {arch}.time_mix_extra_dim and
// {arch}.time_decay_extra_dim where the file states them; the eps of ln_x's GroupNorm is
// {arch}.attention.group_norm_epsilon, 64e-5 (RWKV's and llama.cpp's) when absent.
#include <cstddef>
#include <cstdint>
#include <string>

#include "archetype/core/error.hpp"
#include "archetype/core/policy.hpp"
#include "archetype/layers/rwkv_time_mix.hpp"
#include "archetype/policies/impl.hpp"
#include "archetype/policies/mixer.hpp"
#include "archetype/policies/rwkv.hpp"

namespace archetype {

namespace detail {
/// ln_x's GroupNorm eps: {arch}.attention.group_norm_epsilon, or RWKV's 64e-5.
template <class Binder>
float rwkv_group_norm_eps(Binder& b) {
    const std::string key = b.prefix() + "attention.group_norm_epsilon";
    const float eps = b.file().template get_or<float>(key, 64e-5f);
    if (!(eps > 0.f) || !(eps <= 1.f))
        throw format_error("metadata key '" + key + "' = " + std::to_string(eps) + " is outside (0, 1]");
    return eps;
}

template <class Mixer>
struct rwkv_v5_v6_mixer {
    struct weights {
        rwkv_layer_weights L; // the time-mix fields
        rwkv_hparams hp;      // C, N, H, the LoRA ranks, gn_eps
    };
    static constexpr bool keeps_kv = false;
    static std::size_t state_floats(const weights& w) noexcept { return w.hp.n_embd * (1 + w.hp.head_size); }
    static std::size_t scratch_floats(const weights& w, std::size_t rows) noexcept {
        return rows * (scratch_rows * w.hp.n_embd + 5 * w.hp.n_lora_mix + w.hp.n_lora_decay);
    }

    template <class Binder>
    static void bind(Binder& b, const std::string& blk, weights& w) {
        const std::size_t C = b.hparams().dims.n_embd;
        const std::string hs_key = b.prefix() + "wkv.head_size";
        const auto N = b.file().template get<std::uint64_t>(hs_key);
        if (N == 0 || C % N != 0)
            throw shape_error("metadata key '" + hs_key + "' = " + std::to_string(N) +
                              " does not divide the embedding width " + std::to_string(C));
        auto& hp = w.hp;
        hp.version = Mixer::rwkv_version;
        hp.n_embd = C;
        hp.head_size = std::size_t(N);
        hp.n_head = C / std::size_t(N);
        hp.gn_eps = rwkv_group_norm_eps(b);
        // a LoRA's rank from its tensor (dimension `at` of a [C, rank x parts] matrix), checked
        // against the key where the file has it
        auto rank = [&](const char* t, std::size_t parts, const char* key) -> std::size_t {
            const auto& info = b.file().tensor(blk + t);
            if (info.ne.size() < 2 || info.ne[0] != C || info.ne[1] == 0 || info.ne[1] % parts != 0)
                throw shape_error("tensor '" + blk + t + "' has shape " + info.shape_string() + ", expected [" +
                                  std::to_string(C) + ", " + (parts > 1 ? std::to_string(parts) + " x " : "") + "rank]");
            const std::size_t D = std::size_t(info.ne[1]) / parts;
            const std::string k = b.prefix() + key;
            if (b.file().has(k) && b.file().template get<std::uint64_t>(k) != D)
                throw shape_error("metadata key '" + k + "' = " + std::to_string(b.file().template get<std::uint64_t>(k)) +
                                  " but tensor '" + blk + t + "' has rank " + std::to_string(D));
            return D;
        };
        auto& L = w.L;
        if constexpr (Mixer::ddlerp) {
            const std::size_t DM = hp.n_lora_mix = rank("time_mix_w1.weight", 5, "time_mix_extra_dim");
            const std::size_t DD = hp.n_lora_decay = rank("time_mix_decay_w1.weight", 1, "time_decay_extra_dim");
            L.maa_x = b.vector_f32(blk + "time_mix_lerp_x.weight", C);
            const auto& lerp = b.tensor(blk + "time_mix_lerp_fused.weight", {C, 1, 1, 5});
            if (lerp.type != ggml_type::F32)
                throw shape_error("tensor '" + lerp.name + "' is " + std::string(type_name(lerp.type)) + ", expected F32");
            const float* fused = reinterpret_cast<const float*>(lerp.data);
            for (std::size_t c = 0; c < 5; ++c) L.maa[c] = fused + c * C; // w, k, v, r, g
            L.maa_w1 = b.matrix(blk + "time_mix_w1.weight", C, 5 * DM);
            for (std::size_t c = 0; c < 5; ++c) L.maa_w2[c] = b.expert(blk + "time_mix_w2.weight", DM, C, 5, c);
            L.decay_w1 = b.matrix(blk + "time_mix_decay_w1.weight", C, DD);
            L.decay_w2 = b.matrix(blk + "time_mix_decay_w2.weight", DD, C);
        } else {
            (void)rank; // no LoRA
            // static lerps of k, v, r, g (no w: the decay does not depend on the input)
            L.maa[mix_k] = b.vector_f32(blk + "time_mix_lerp_k.weight", C);
            L.maa[mix_v] = b.vector_f32(blk + "time_mix_lerp_v.weight", C);
            L.maa[mix_r] = b.vector_f32(blk + "time_mix_lerp_r.weight", C);
            L.maa[mix_g] = b.vector_f32(blk + "time_mix_lerp_g.weight", C);
        }
        L.decay = b.vector_f32(blk + "time_mix_decay.weight", C); // v6: w0; v5.2: exp(-exp(w0))
        const auto& u = b.tensor(blk + "time_mix_first.weight", {hp.head_size, hp.n_head});
        if (u.type != ggml_type::F32)
            throw shape_error("tensor '" + u.name + "' is " + std::string(type_name(u.type)) + ", expected F32");
        L.u = reinterpret_cast<const float*>(u.data);
        L.wr = b.matrix(blk + "time_mix_receptance.weight", C, C);
        L.wk = b.matrix(blk + "time_mix_key.weight", C, C);
        L.wv = b.matrix(blk + "time_mix_value.weight", C, C);
        L.wg = b.matrix(blk + "time_mix_gate.weight", C, C);
        L.wo = b.matrix(blk + "time_mix_output.weight", C, C);
        L.lnx_w = b.vector_f32(blk + "time_mix_ln.weight", C);
        L.lnx_b = b.vector_f32(blk + "time_mix_ln.bias", C);
    }

    /// The pass's rows `in` -> `out`. Ctx gives rows(), groups() (sequence, first row,
    /// count), state(seq), scratch() and pool().
    template <class Ctx>
    static void forward(Ctx& c, const weights& w, const float* in, float* out) {
        const std::size_t n = c.rows(), C = w.hp.n_embd;
        // the pass's sequences as RWKV segments, made as they are visited (nothing allocated)
        const rwkv_segments_of segs(c.groups(), [&c](std::size_t seq) { return c.state(seq); });
        rwkv_scratch scratch(c.scratch());
        workspace ws;
        ws.xn = rwkv_rows<const float>{in};
        ws.y = rwkv_rows<float>{out};
        for (auto* r : {&ws.sx, &ws.xxx, &ws.xw, &ws.xk, &ws.xv, &ws.xr, &ws.xg, &ws.r, &ws.k, &ws.v, &ws.g, &ws.w,
                        &ws.out})
            *r = scratch.take(n * C);
        ws.mix = scratch.take(n * 5 * w.hp.n_lora_mix);
        ws.dd = scratch.take(n * w.hp.n_lora_decay);
        archetype::rwkv_time_mix<Mixer>(w.hp, C, w.hp.head_size, w.L, segs, rwkv_state_at{0, C}, n, ws, c.pool());
    }

private:
    static constexpr std::size_t scratch_rows = 13; // the [rows x C] buffers of workspace below
    /// The workspace members that the time mix reads, as views of the session's scratch
    struct workspace {
        rwkv_rows<const float> xn;
        rwkv_rows<float> y, sx, xxx, mix, xw, xk, xv, xr, xg, r, k, v, g, dd, w, out;
    };
};
} // namespace detail

template <>
struct mixer_impl<Rwkv5TimeMix> : detail::rwkv_v5_v6_mixer<Rwkv5TimeMix> {};
template <>
struct mixer_impl<Rwkv6TimeMix> : detail::rwkv_v5_v6_mixer<Rwkv6TimeMix> {};

} // namespace archetype
