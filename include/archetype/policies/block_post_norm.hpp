#pragma once
// PostNormBlock: BERT's layer, the norms after each residual add,
//
//   x = n1(x + mix(x));  x = n2(x + ffn(x))
//
// with llama.cpp's bert names blk.N.attn_output_norm and blk.N.layer_output_norm
// (PostNormBlockWith<...>: other stems). The last layer's n2 is the model's last norm,
// so a model of these blocks has no output_norm (final_norm = false). Each sublayer's
// bias is added to its output before the residual add (x + (y + b)), as the encoder
// always has. The norm axis gives the norm itself (LayerNorm; not PrePostNorm or
// NormAfterSublayer, which place norms of their own: a static_assert in Decoder).
#include <cstddef>
#include <string>

#include "archetype/policies/block.hpp"

namespace archetype {

template <tensor_stem AttnNorm = "attn_output_norm", tensor_stem FfnNorm = "layer_output_norm">
struct PostNormBlockWith {
    using axis = archetype::axis::block;
    static constexpr std::string_view name = "PostNormBlock";
    static constexpr bool parallel = false;
    static constexpr bool post_norm = true;
    static constexpr bool final_norm = false;
    static std::string describe() {
        return "post-norm: x = " + AttnNorm.str() + "(x + mixer(x)), then x = " + FfnNorm.str() + "(x + ffn(x))";
    }
};
using PostNormBlock = PostNormBlockWith<>;

template <tensor_stem AttnNorm, tensor_stem FfnNorm>
struct block_impl<PostNormBlockWith<AttnNorm, FfnNorm>> {
    template <class D>
    static constexpr std::size_t norms_per_layer() {
        return 2;
    }

    template <class D, class Binder>
    static void bind(Binder& b, std::size_t, const std::string& blk, block_norms& L, float eps) {
        detail::check_parallel_residual_key(b, false, PostNormBlockWith<AttnNorm, FfnNorm>::describe());
        const std::size_t E = b.hparams().dims.n_embd;
        // the norms after the sublayers (a pre-norm's attn_norm in the file stays unbound:
        // the tensor ledger refuses the file rather than run it without)
        L.attn_post_norm = detail::bind_norm<typename D::base_norm>(b, blk + AttnNorm.str(), E, eps);
        L.ffn_post_norm = detail::bind_norm<typename D::base_norm>(b, blk + FfnNorm.str(), E, eps);
    }

    template <class D, class S>
    static void forward(S& s, const block_norms& L) {
        float* x = s.stream();
        float* t = s.out();
        s.mix(x, t);
        s.add(x, t);
        s.norm(L.attn_post_norm, x, x);
        s.ffn(x, t);
        s.add(x, t);
        s.norm(L.ffn_post_norm, x, x);
    }
};

} // namespace archetype
