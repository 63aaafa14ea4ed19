#pragma once
// Block shapes of one sublayer per layer (policies/block.hpp's axis):
//
//   MixerOnlyBlock        x += mix(n(x))                    Mamba, Mamba-2: no feed-forward
//                                                           in any layer
//   SingleSublayerBlock   x += mix(n(x))  or  x += ffn(n(x)), per layer from the file:
//                         layer il feeds forward iff {arch}.feed_forward_length[il] > 0
//                         (Nemotron-H: llama.cpp's nemotron_h; its mixer layers are Mamba-2
//                         or attention as the mixer policy reads head_count_kv[il])
//
// Both norm with blk.N.attn_norm (the one norm a layer has). The loader binds only the
// sublayer a layer has (block_impl<B>::parts), and the session keeps no memory for a
// layer without a mixer.
#include <cstddef>
#include <string>

#include "archetype/core/error.hpp"
#include "archetype/core/policy.hpp"
#include "archetype/policies/block.hpp"
#include "archetype/policies/impl.hpp"

namespace archetype {

struct MixerOnlyBlock {
    using axis = archetype::axis::block;
    static constexpr std::string_view name = "MixerOnlyBlock";
    static constexpr bool parallel = false;
    static constexpr bool feeds_forward = false;
    static std::string describe() { return "mixer only: x + mixer(n(x)), no feed-forward"; }
};

struct SingleSublayerBlock {
    using axis = archetype::axis::block;
    static constexpr std::string_view name = "SingleSublayerBlock";
    static constexpr bool parallel = false;
    static std::string describe() {
        return "one sublayer per layer: x + ffn(n(x)) where feed_forward_length[il] > 0, else x + mixer(n(x))";
    }
};

namespace detail {
template <class D>
inline constexpr bool plain_pre_norm = D::pre_norms && !D::sandwich_norms;
} // namespace detail

template <>
struct block_impl<MixerOnlyBlock> {
    template <class D>
    static constexpr std::size_t norms_per_layer() {
        return 1;
    }
    template <class Binder>
    static layer_parts parts(Binder&, std::size_t) {
        return {.mixer = true, .ffn = false};
    }
    template <class D, class Binder>
    static void bind(Binder& b, std::size_t, const std::string& blk, block_norms& L, float eps) {
        static_assert(detail::plain_pre_norm<D>, "archetype: MixerOnlyBlock norms the stream before its mixer: use a "
                                                 "plain norm (RMSNorm, LayerNorm)");
        detail::check_parallel_residual_key(b, false, MixerOnlyBlock::describe());
        L.attn_norm = detail::bind_norm<typename D::base_norm>(b, blk + "attn_norm", b.hparams().dims.n_embd, eps);
    }
    template <class D, class S>
    static void forward(S& s, const block_norms& L) {
        float* x = s.stream();
        s.norm(L.attn_norm, x, s.normed());
        s.mix(s.normed(), s.out());
        s.add(x, s.out());
    }
};

template <>
struct block_impl<SingleSublayerBlock> {
    struct weights : block_norms {
        bool ffn = false; // this layer's sublayer is the feed-forward
    };
    template <class D>
    static constexpr std::size_t norms_per_layer() {
        return 1;
    }
    template <class Binder>
    static layer_parts parts(Binder& b, std::size_t il) {
        const auto& ff = b.keys().n_ff_per_layer;
        if (ff.empty())
            throw shape_error("SingleSublayerBlock reads which layers feed forward from " + b.prefix() +
                              "feed_forward_length per layer, but the file gives one value for all layers");
        const bool ffn = ff.at(il) > 0;
        return {.mixer = !ffn, .ffn = ffn};
    }
    template <class D, class Binder>
    static void bind(Binder& b, std::size_t il, const std::string& blk, weights& L, float eps) {
        static_assert(detail::plain_pre_norm<D>, "archetype: SingleSublayerBlock norms the stream before its "
                                                 "sublayer: use a plain norm (RMSNorm, LayerNorm)");
        detail::check_parallel_residual_key(b, false, SingleSublayerBlock::describe());
        L.ffn = parts(b, il).ffn;
        L.attn_norm = detail::bind_norm<typename D::base_norm>(b, blk + "attn_norm", b.hparams().dims.n_embd, eps);
    }
    template <class D, class S>
    static void forward(S& s, const weights& L) {
        float* x = s.stream();
        s.norm(L.attn_norm, x, s.normed());
        if (L.ffn) s.ffn(s.normed(), s.out());
        else s.mix(s.normed(), s.out());
        s.add(x, s.out());
    }
};

} // namespace archetype
