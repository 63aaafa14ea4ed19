#pragma once
// Rwkv7TimeMix as a mixer of the decoder core: RWKV-7's time mix (layers/rwkv7_time_mix.hpp,
// the same code the RWKV models run) on any layer of a Decoder, alone or per layer beside
// attention (HybridMixer<SelfAttention, Rwkv7TimeMix>: the RWKV-7 layers are those whose
// {arch}.attention.head_count_kv[il] is 0).
//
// Its memory per sequence is the token-shift vector [C] and the H x N x N wkv matrix.
// Its cross-layer side channel is v_first: the first RWKV-7 layer of the model writes its
// values there, every later one mixes its values toward them (the value residual). The
// layer stack owns the channel (decoder_session: side_channel), for the rows of one pass.
//
// Tensors per layer, llama.cpp's rwkv7 names: time_mix_lerp_fused [C, 1, 1, 6] (r, w, k,
// v, a, g), time_mix_{w0, a0, k_k, k_a, r_k} [C], time_mix_{w, a, g}{1 [C, D], 2 [D, C]},
// time_mix_{v0, v1, v2} on every RWKV-7 layer but the first (where they are ignored if
// present: llama.cpp's converter writes copies there), time_mix_{receptance, key, value,
// output} [C, C], time_mix_ln (+ .bias) [C]. Key: {arch}.wkv.head_size = N (C = the
// embedding width); the LoRA ranks come from the tensors' shapes, and where the file
// states them ({arch}.attention.{decay,iclr,value_residual_mix,gate}_lora_rank) they
// must agree. The GroupNorm of ln_x uses {arch}.attention.group_norm_epsilon, or 64e-5 (RWKV-7's
// and llama.cpp's) when absent.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <string>
#include <vector>

#include "archetype/core/error.hpp"
#include "archetype/core/policy.hpp"
#include "archetype/layers/rwkv7_time_mix.hpp"
#include "archetype/policies/impl.hpp"
#include "archetype/policies/mixer.hpp"
#include "archetype/policies/mixers/rwkv_v5_v6.hpp" // detail::rwkv_group_norm_eps
#include "archetype/policies/rwkv.hpp"

namespace archetype {

template <>
struct mixer_impl<Rwkv7TimeMix> {
    struct weights {
        rwkv_layer_weights L;  // the time-mix fields
        rwkv_hparams hp;       // C, N, H, gn_eps
        std::size_t rank = 0;  // the widest LoRA middle
        bool first = false;    // the model's first RWKV-7 layer: writes v_first
    };
    static constexpr bool keeps_kv = false;
    static std::size_t state_floats(const weights& w) noexcept { return w.hp.n_embd * (1 + w.hp.head_size); }
    static std::size_t scratch_floats(const weights& w, std::size_t rows) noexcept {
        return rows * (scratch_rows * w.hp.n_embd + w.rank);
    }
    static std::size_t side_channel_floats(const weights& w, std::size_t rows) noexcept { return rows * w.hp.n_embd; }

    template <class Binder>
    static void bind(Binder& b, const std::string& blk, weights& w) {
        const std::size_t C = b.hparams().dims.n_embd, il = b.layer_index();
        const std::string hs_key = b.prefix() + "wkv.head_size";
        const auto N = b.file().template get<std::uint64_t>(hs_key);
        if (N == 0 || C % N != 0)
            throw shape_error("metadata key '" + hs_key + "' = " + std::to_string(N) + " does not divide the embedding width " +
                              std::to_string(C));
        auto& hp = w.hp;
        hp.version = 7;
        hp.n_embd = C;
        hp.head_size = std::size_t(N);
        hp.n_head = C / std::size_t(N);
        hp.gn_eps = detail::rwkv_group_norm_eps(b);
        w.first = first_rwkv7_layer(b, il);
        // a LoRA's rank from its first matrix [C, D], checked against the key where the file has it
        auto rank = [&](const char* t, const char* key) -> std::size_t {
            const auto& info = b.file().tensor(blk + t);
            if (info.ne.size() < 2 || info.ne[0] != C)
                throw shape_error("tensor '" + blk + t + "' has shape " + info.shape_string() + ", expected [" +
                                  std::to_string(C) + ", rank]");
            const std::size_t D = std::size_t(info.ne[1]);
            const std::string k = b.prefix() + "attention." + key;
            if (b.file().has(k) && b.file().template get<std::uint64_t>(k) != D)
                throw shape_error("metadata key '" + k + "' = " + std::to_string(b.file().template get<std::uint64_t>(k)) +
                                  " but tensor '" + blk + t + "' has rank " + std::to_string(D));
            w.rank = std::max(w.rank, D);
            return D;
        };
        auto& L = w.L;
        const std::size_t DW = rank("time_mix_w1.weight", "decay_lora_rank");
        const std::size_t DA = rank("time_mix_a1.weight", "iclr_lora_rank");
        const std::size_t DG = rank("time_mix_g1.weight", "gate_lora_rank");
        const auto& lerp = b.tensor(blk + "time_mix_lerp_fused.weight", {C, 1, 1, 6});
        if (lerp.type != ggml_type::F32)
            throw shape_error("tensor '" + lerp.name + "' is " + std::string(type_name(lerp.type)) + ", expected F32");
        const float* fused = reinterpret_cast<const float*>(lerp.data);
        for (std::size_t c = 0; c < 6; ++c) L.lerp7[c] = fused + c * C;
        L.decay = b.vector_f32(blk + "time_mix_w0.weight", C);
        L.decay_w1 = b.matrix(blk + "time_mix_w1.weight", C, DW);
        L.decay_w2 = b.matrix(blk + "time_mix_w2.weight", DW, C);
        L.iclr0 = b.vector_f32(blk + "time_mix_a0.weight", C);
        L.iclr_w1 = b.matrix(blk + "time_mix_a1.weight", C, DA);
        L.iclr_w2 = b.matrix(blk + "time_mix_a2.weight", DA, C);
        if (!w.first) {
            const std::size_t DV = rank("time_mix_v1.weight", "value_residual_mix_lora_rank");
            L.vres0 = b.vector_f32(blk + "time_mix_v0.weight", C);
            L.vres_w1 = b.matrix(blk + "time_mix_v1.weight", C, DV);
            L.vres_w2 = b.matrix(blk + "time_mix_v2.weight", DV, C);
        } else {
            for (const char* t : {"time_mix_v0.weight", "time_mix_v1.weight", "time_mix_v2.weight"}) b.ignore(blk + t);
        }
        L.gate_w1 = b.matrix(blk + "time_mix_g1.weight", C, DG);
        L.gate_w2 = b.matrix(blk + "time_mix_g2.weight", DG, C);
        L.k_k = b.vector_f32(blk + "time_mix_k_k.weight", C);
        L.k_a = b.vector_f32(blk + "time_mix_k_a.weight", C);
        L.r_k = b.vector_f32(blk + "time_mix_r_k.weight", C);
        L.wr = b.matrix(blk + "time_mix_receptance.weight", C, C);
        L.wk = b.matrix(blk + "time_mix_key.weight", C, C);
        L.wv = b.matrix(blk + "time_mix_value.weight", C, C);
        L.wo = b.matrix(blk + "time_mix_output.weight", C, C);
        L.lnx_w = b.vector_f32(blk + "time_mix_ln.weight", C);
        L.lnx_b = b.vector_f32(blk + "time_mix_ln.bias", C);
    }

    /// The pass's rows `in` -> `out`. Ctx gives rows(), groups() (sequence, first row,
    /// count), state(seq), scratch(), side_channel() (v_first) and pool().
    template <class Ctx>
    static void forward(Ctx& c, const weights& w, const float* in, float* out) {
        const std::size_t n = c.rows(), C = w.hp.n_embd;
        auto& side = c.side_channel();
        if (!w.first && !side.written)
            throw error("an RWKV-7 layer reads v_first, which the model's first RWKV-7 layer writes, but that "
                              "layer did not run in this pass");
        // the pass's sequences as RWKV segments, made as they are visited (nothing allocated)
        const rwkv_segments_of segs(c.groups(), [&c](std::size_t seq) { return c.state(seq); });
        rwkv_scratch scratch(c.scratch());
        workspace ws;
        ws.xn = rwkv_rows<const float>{in};
        ws.y = rwkv_rows<float>{out};
        ws.v_first = rwkv_rows<float>{side.data};
        for (auto* r : {&ws.sx, &ws.xr, &ws.xw, &ws.xk, &ws.xv, &ws.xia, &ws.xg, &ws.r, &ws.k, &ws.v, &ws.w, &ws.ia,
                        &ws.g, &ws.out, &ws.kk})
            *r = scratch.take(n * C);
        ws.dd = scratch.take(n * w.rank);
        rwkv7_time_mix(w.hp, C, w.hp.head_size, w.L, segs, rwkv7_state_at{0, C}, n, w.first, ws, c.pool());
        side.written = true;
    }

private:
    static constexpr std::size_t scratch_rows = 15; // the [rows x C] buffers of workspace below
    /// The workspace members as views of the session's scratch
    struct workspace {
        rwkv_rows<const float> xn;
        rwkv_rows<float> y, v_first, sx, xr, xw, xk, xv, xia, xg, r, k, v, w, ia, g, out, kk, dd;
    };
    /// Whether layer il is the first whose mixer is RWKV-7: no layer before it is one
    /// (in a hybrid, the layers before it attend: head_count_kv[j] != 0).
    template <class Binder>
    static bool first_rwkv7_layer(Binder& b, std::size_t il) {
        // without a per-layer array every layer is RWKV-7 (the model's one mixer)
        const auto kv = detail::kv_heads_per_layer(b);
        std::size_t first = il;
        for (std::size_t j = 0; j < il; ++j)
            if (kv.empty() || kv.at(j) == 0) {
                first = j;
                break;
            }
        const std::size_t stage_first = b.options().layers.resolved(b.hparams().dims.n_layer).first;
        if (first != il && first < stage_first)
            throw shape_error("layer " + std::to_string(il) + " (RWKV-7) mixes its values toward layer " +
                              std::to_string(first) + "'s (v_first), which a pipeline stage starting at layer " +
                              std::to_string(stage_first) + " does not run: start the stage at or before layer " +
                              std::to_string(first));
        return first == il;
    }
};

} // namespace archetype
