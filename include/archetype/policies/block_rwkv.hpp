#pragma once
// RwkvBlock: RWKV's layer on the decoder core's block axis (policies/block.hpp):
//
//   x += time_mix(ln1(x));  x += channel_mix(ln2(x));  x *= 1/2 after every
//   {arch}.rescale_every_n_layers-th layer (llama.cpp's rwkv6 key; absent or 0: never)
//
// {arch}.token_shift_count (llama.cpp's, 2 when absent) must be the block's token-shift
// vectors per layer: 2 with the channel mix, 1 with a feed-forward without memory.
// ln1 and ln2 are the model's norm (LayerNorm with biases) filed as blk.N.attn_norm and
// blk.N.attn_norm_2, llama.cpp's rwkv6 / rwkv7 names. The mixer is the model's
// (Rwkv6TimeMix, Rwkv7TimeMix), the feed-forward its channel mix (policies/ffn_rwkv.hpp).
#include <cstddef>
#include <cstdint>
#include <string>

#include "archetype/core/error.hpp"
#include "archetype/core/policy.hpp"
#include "archetype/policies/block.hpp"
#include "archetype/policies/ffn.hpp"
#include "archetype/policies/impl.hpp"

namespace archetype {

struct RwkvBlock {
    using axis = archetype::axis::block;
    static constexpr std::string_view name = "RwkvBlock";
    static constexpr bool parallel = false;
    static std::string describe() {
        return "RWKV: x + mixer(attn_norm(x)), then x + ffn(attn_norm_2(x)); x / 2 after every "
               "{arch}.rescale_every_n_layers-th layer";
    }
};

template <>
struct block_impl<RwkvBlock> {
    struct weights : block_norms {
        bool halve = false; ///< x *= 1/2 after this layer (rescale_every_n_layers)
    };
    template <class D>
    static constexpr std::size_t norms_per_layer() {
        return 2;
    }

    template <class D, class Binder>
    static void bind(Binder& b, std::size_t il, const std::string& blk, weights& L, float eps) {
        static_assert(D::pre_norms && !D::sandwich_norms,
                      "archetype: RwkvBlock norms each sublayer's input: use a plain norm (LayerNorm)");
        const std::size_t E = b.hparams().dims.n_embd;
        L.attn_norm = detail::bind_norm<typename D::base_norm>(b, blk + "attn_norm", E, eps);
        L.ffn_norm = detail::bind_norm<typename D::base_norm>(b, blk + "attn_norm_2", E, eps);
        const std::string key = b.prefix() + "rescale_every_n_layers";
        const std::uint64_t every = b.file().template get_or<std::uint64_t>(key, 0);
        if (every > b.hparams().dims.n_layer)
            throw format_error("metadata key '" + key + "' = " + std::to_string(every) + " exceeds the " +
                               std::to_string(b.hparams().dims.n_layer) + " layers");
        L.halve = every != 0 && (il + 1) % every == 0;
        // token-shift vectors per layer (llama.cpp's key, 2 when absent): the time mix's and
        // the channel mix's; RWKV hybrids with another feed-forward (rwkv6qwen2, arwkv7) write 1
        const std::string shifts = b.prefix() + "token_shift_count";
        const std::uint64_t count = b.file().template get_or<std::uint64_t>(shifts, 2);
        constexpr std::uint64_t ours = detail::ffn_has_memory<typename D::ffn> ? 2 : 1;
        if (count != ours)
            throw shape_error("metadata key '" + shifts + "' = " + std::to_string(count) + " but this RWKV block shifts " +
                              std::to_string(ours) + (ours == 1 ? " vector" : " vectors") + " per layer (" +
                              (ours == 2 ? "time mix and channel mix" : "the time mix only") + ")");
    }

    template <class D, class S>
    static void forward(S& s, const weights& L) {
        float* x = s.stream();
        float* h = s.normed();
        float* t = s.out();
        s.norm(L.attn_norm, x, h);
        s.mix(h, t);
        s.add(x, t);
        s.norm(L.ffn_norm, x, h);
        s.ffn(h, t);
        s.add(x, t);
        if (L.halve) {
            const std::size_t m = s.rows() * s.width();
            for (std::size_t i = 0; i < m; ++i) x[i] *= 0.5f;
        }
    }
};

} // namespace archetype
