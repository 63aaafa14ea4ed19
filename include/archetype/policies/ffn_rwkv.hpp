#pragma once
// RwkvChannelMix and Rwkv7ChannelMix as feed-forwards of the decoder core: RWKV's channel mix
// (layers/rwkv_channel_mix.hpp, the same code rwkv_forward runs) with its memory per
// sequence, the token-shift vector [C] (detail::ffn_has_memory, policies/ffn.hpp).
//
//   x_k = xf + (prev - xf) * lerp_k,  x_r = xf + (prev - xf) * lerp_r
//   y   = sigmoid(W_r x_r) * (W_v relu(W_k x_k)^2)        (Rwkv7ChannelMix: no W_r, no x_r)
//
// Tensors per layer, llama.cpp's rwkv6 / rwkv7 names: channel_mix_lerp_k [C],
// channel_mix_key [C, F], channel_mix_value [F, C], and with a receptance
// channel_mix_lerp_r [C], channel_mix_receptance [C, C]. F = {arch}.feed_forward_length.
#include <cstddef>
#include <string>

#include "archetype/core/error.hpp"
#include "archetype/layers/rwkv_channel_mix.hpp"
#include "archetype/policies/ffn.hpp"
#include "archetype/policies/impl.hpp"
#include "archetype/policies/rwkv.hpp"

namespace archetype {

namespace detail {
template <class Ffn>
struct rwkv_channel_mix_impl {
    struct weights {
        rwkv_layer_weights L; // the channel-mix fields
        rwkv_hparams hp;      // C, F
    };
    template <class Binder>
    static weights bind(Binder& b, const std::string& blk, std::size_t C, std::size_t F) {
        weights w;
        w.hp.version = Ffn::receptance ? 6 : 7;
        w.hp.n_embd = C;
        w.hp.n_ffn = F;
        auto& L = w.L;
        L.ffn_maa_k = b.vector_f32(blk + "channel_mix_lerp_k.weight", C);
        L.ffn_k = b.matrix(blk + "channel_mix_key.weight", C, F);
        L.ffn_v = b.matrix(blk + "channel_mix_value.weight", F, C);
        if constexpr (Ffn::receptance) {
            L.ffn_maa_r = b.vector_f32(blk + "channel_mix_lerp_r.weight", C);
            L.ffn_r = b.matrix(blk + "channel_mix_receptance.weight", C, C);
        }
        return w;
    }
    static std::size_t state_floats(const weights& w) noexcept { return w.hp.n_embd; }
    static std::size_t scratch_floats(const weights& w, std::size_t rows) noexcept {
        return rows * (4 * w.hp.n_embd + w.hp.n_ffn);
    }
    template <class Ctx>
    static void forward(Ctx& c, const weights& w, const float* in, float* out) {
        const std::size_t n = c.rows(), C = w.hp.n_embd;
        const rwkv_segments_of segs(c.groups(), [&c](std::size_t seq) { return c.state(seq); });
        rwkv_scratch scratch(c.scratch());
        workspace ws;
        ws.xn = rwkv_rows<const float>{in};
        ws.y = rwkv_rows<float>{out};
        ws.sx = scratch.take(n * C);
        ws.xk = scratch.take(n * C);
        ws.xr = scratch.take(n * C);
        ws.r = scratch.take(n * C);
        ws.hid = scratch.take(n * w.hp.n_ffn);
        archetype::rwkv_channel_mix<Ffn>(w.hp, C, w.L, segs, 0, n, ws, c.pool()); // not the concept detail::rwkv_channel_mix
    }

private:
    /// The workspace members that the channel mix reads, as views of the session's scratch
    struct workspace {
        rwkv_rows<const float> xn;
        rwkv_rows<float> y, sx, xk, xr, r, hid;
    };
};
} // namespace detail

template <>
struct ffn_impl<RwkvChannelMix> : detail::rwkv_channel_mix_impl<RwkvChannelMix> {};
template <>
struct ffn_impl<Rwkv7ChannelMix> : detail::rwkv_channel_mix_impl<Rwkv7ChannelMix> {};

} // namespace archetype
