#pragma once
// Block-shape axis: how a decoder layer wires its mixer and its feed-forward into the
// residual stream, with which norms. The session calls the block once per layer; the
// block calls the sublayers it is handed (a `Sublayers` object, below) and owns
// nothing but the norms it binds.
//
//   SequentialBlock (default)   x += mix(n(x)); x += ffn(n(x))       Llama, Qwen, Mistral, ...
//                               (SequentialBlockWith<"attn_norm", "post_attention_norm">: the
//                               norms' tensor names, where a family files them otherwise)
//                               with the norm axis saying where the norms sit:
//                               PrePostNorm<N> the sandwich x += n'(f(n(x))) (Gemma 2/3),
//                               NormAfterSublayer<N> x += n'(f(x)) (OLMo 2)
//   ParallelResidual            x += mix(n(x)) + ffn(n(x)), one shared norm
//                               (Phi-2, GPT-J, Command-R): blk.N.attn_norm only
//   ParallelResidualTwoNorms    x += mix(n1(x)) + ffn(n2(x)) (GPT-NeoX / Pythia):
//                               blk.N.attn_norm and blk.N.ffn_norm
//
// Each block reads its own key, {arch}.use_parallel_residual (GPT-NeoX's and
// StableLM's converters write it): a sequential block refuses `true`, a parallel one
// refuses `false`.
//
// A block_impl<B> specialisation has
//   using weights = ...;   optional: what it keeps per layer (default block_norms; a user's
//                          block may derive from block_norms and add its own, e.g. a gate)
//   template <class D, class Binder> static void bind(Binder&, std::size_t il, const std::string& blk,
//                                                     weights&, float eps);
//   template <class D, class Sublayers> static void forward(Sublayers&, const weights&);
//   template <class D> static constexpr std::size_t norms_per_layer();   // for figures()
//   optional: template <class Binder> static layer_parts parts(Binder&, std::size_t il);
//                          which sublayers layer il has (default both): the loader binds a
//                          mixer / a feed-forward only where the block says so, and the
//                          session keeps no memory for a layer without a mixer (a block of
//                          one sublayer: policies/block_single.hpp)
//   optional: static constexpr bool feeds_forward = false;   no layer has a feed-forward
//   optional (on B): static constexpr bool final_norm = false;   no output_norm after the last
//                          block (PostNormBlock, policies/block_post_norm.hpp)
// where Sublayers offers, over the n rows of one pass:
//   std::size_t layer(), rows(), width()   the layer index, n, E
//   float* stream()                the residual stream x [n x E]
//   float* normed()                a row buffer [n x E] (free between sublayers)
//   float* out() / float* out2()   two output row buffers [n x E] (out2 only for a block
//                                  whose policy says `static constexpr bool parallel = true`)
//   void norm(const layers::norm_weights&, const float* src, float* dst)   (dst may be src)
//   void mix(const float* in, float* out)    the mixer: in rows -> out rows (wo applied)
//   void ffn(const float* in, float* out)    the feed-forward
//   void add(float* x, const float* y)       x += y (a residual multiplier is the session's)
//   void add2(float* x, const float* y, const float* z)   x += y + z
#include <cstddef>
#include <string>
#include <type_traits>

#include "archetype/core/error.hpp"
#include "archetype/core/policy.hpp"
#include "archetype/layers/norm.hpp"
#include "archetype/policies/impl.hpp"

namespace archetype {

/// A tensor-name stem as a template argument (a block's norm names): a family that files a
/// norm under another name says so in its block's type, SequentialBlockWith<"attn_norm",
/// "post_attention_norm">, instead of a flag in a central struct.
template <std::size_t N>
struct tensor_stem {
    char text[N]{};
    constexpr tensor_stem(const char (&s)[N]) noexcept {
        for (std::size_t i = 0; i < N; ++i) text[i] = s[i];
    }
    std::string str() const { return text; }
};

/// The norms a block binds per layer (which of them are set is the block's business).
struct block_norms {
    layers::norm_weights attn_norm, ffn_norm;           // before the sublayers
    layers::norm_weights attn_post_norm, ffn_post_norm; // after them (sandwich, norm-after)
};

/// How a norm's weight is named: <stem>.weight (and .bias), or the bare stem (llama.cpp's
/// falcon-h1 files its FFN norm as blk.N.ffn_norm, no suffix).
enum class norm_tensor { suffixed, bare };

/// Whether layer 0 may lack its attention norm (absent = identity): ModernBERT's first layer
/// feeds the embedding norm's output straight to attention.
enum class first_attn_norm { required, optional };

/// The pre-norms are blk.N.<AttnNorm> (before the mixer) and blk.N.<FfnNorm> (before
/// the feed-forward); Seed-OSS files the latter as post_attention_norm.
template <tensor_stem AttnNorm = "attn_norm", tensor_stem FfnNorm = "ffn_norm", norm_tensor FfnName = norm_tensor::suffixed,
          first_attn_norm First = first_attn_norm::required>
struct SequentialBlockWith {
    using axis = archetype::axis::block;
    static constexpr std::string_view name = "SequentialBlock";
    static constexpr bool parallel = false;
    static std::string describe() {
        const std::string names = AttnNorm.str() == "attn_norm" && FfnNorm.str() == "ffn_norm" &&
                                          FfnName == norm_tensor::suffixed
                                      ? ""
                                      : " (norms " + AttnNorm.str() + ", " + FfnNorm.str() +
                                            (FfnName == norm_tensor::bare ? " without .weight" : "") + ")";
        return "sequential: x + mixer, then x + ffn" + names +
               (First == first_attn_norm::optional ? " (layer 0's attention norm optional)" : "");
    }
};
using SequentialBlock = SequentialBlockWith<>;
/// A sequential block whose layer 0 may lack its attention norm (ModernBERT).
using SequentialBlockFirstNormOptional =
    SequentialBlockWith<"attn_norm", "ffn_norm", norm_tensor::suffixed, first_attn_norm::optional>;

/// Norms = 1: blk.N.<AttnNorm> before both sublayers; 2: <AttnNorm> before the mixer and
/// <FfnNorm> before the feed-forward (Falcon-40B: attn_norm_2 and attn_norm).
template <std::size_t Norms, tensor_stem AttnNorm = "attn_norm", tensor_stem FfnNorm = "ffn_norm">
struct ParallelResidualWith {
    static_assert(Norms == 1 || Norms == 2, "archetype: a parallel residual block has one shared norm or two");
    using axis = archetype::axis::block;
    static constexpr std::string_view name = "ParallelResidual";
    static constexpr bool parallel = true;
    static constexpr std::size_t norms = Norms;
    static std::string describe() {
        return Norms == 1 ? "parallel residual: x + mixer(n(x)) + ffn(n(x))"
                          : "parallel residual: x + mixer(" + AttnNorm.str() + "(x)) + ffn(" + FfnNorm.str() + "(x))";
    }
};
using ParallelResidual = ParallelResidualWith<1>;
using ParallelResidualTwoNorms = ParallelResidualWith<2>;

/// Which sublayers a layer has (block_impl<B>::parts; both by default).
struct layer_parts {
    bool mixer = true, ffn = true;
};

namespace detail {
/// Layer il's sublayers as the block shape says (both unless its block_impl has `parts`).
template <class B, class Binder>
layer_parts block_parts(Binder& b, std::size_t il) {
    if constexpr (requires { block_impl<B>::parts(b, il); }) return block_impl<B>::parts(b, il);
    else return {};
}
/// Whether any layer of block shape B may have a feed-forward.
template <class B>
inline constexpr bool block_feeds_forward = [] {
    if constexpr (requires { B::feeds_forward; }) return bool(B::feeds_forward);
    else return true;
}();
/// What a block keeps per layer: its block_impl's `weights`, or the norms.
template <class B>
struct block_weights {
    using type = block_norms;
};
template <class B>
    requires requires { typename block_impl<B>::weights; }
struct block_weights<B> {
    using type = typename block_impl<B>::weights;
};
/// Whether a block asks for the second output buffer (a parallel residual).
template <class B>
inline constexpr bool block_is_parallel = [] {
    if constexpr (requires { B::parallel; }) return bool(B::parallel);
    else return false;
}();
/// Whether a block norms the stream after each residual add (PostNormBlock: BERT).
template <class B>
inline constexpr bool block_is_post_norm = [] {
    if constexpr (requires { B::post_norm; }) return bool(B::post_norm);
    else return false;
}();
/// Whether the model ends with a final norm (output_norm) after its last block: yes unless
/// the block says `static constexpr bool final_norm = false` (a post-norm block's last norm is it).
template <class B>
inline constexpr bool block_final_norm = [] {
    if constexpr (requires { B::final_norm; }) return bool(B::final_norm);
    else return true;
}();
/// {arch}.use_parallel_residual, when the file has it, must say what the block does.
template <class Binder>
void check_parallel_residual_key(Binder& b, bool parallel, const std::string& block) {
    const std::string key = b.prefix() + "use_parallel_residual";
    if (!b.file().has(key)) return;
    if (b.file().template get<bool>(key) != parallel)
        throw shape_error("the file has " + key + " = " + (parallel ? "false" : "true") + " but the model's block is " +
                          block + (parallel ? ": use SequentialBlock" : ": use ParallelResidual or ParallelResidualTwoNorms"));
}
/// A pre-norm with its optional bias when the norm has one (LayerNorm's); a bias in the
/// file of a norm without one (RMSNorm, LayerNormNoBias) stays unbound, and the tensor
/// ledger refuses the file rather than drop it.
template <class Norm>
inline constexpr bool norm_may_have_bias = [] {
    if constexpr (requires { Norm::has_bias; }) return bool(Norm::has_bias);
    else return true; // a user's norm that does not say: its bias is bound when the file has one
}();
template <class Norm, class Binder>
layers::norm_weights bind_norm(Binder& b, const std::string& name, std::size_t E, float eps) {
    const float* bias = nullptr;
    if constexpr (norm_may_have_bias<Norm>) bias = b.optional_vector_f32(name + ".bias", E);
    return {b.vector_f32(name + ".weight", E), bias, eps};
}
} // namespace detail

template <tensor_stem AttnNorm, tensor_stem FfnNorm, norm_tensor FfnName, first_attn_norm First>
struct block_impl<SequentialBlockWith<AttnNorm, FfnNorm, FfnName, First>> {
    template <class D>
    static constexpr std::size_t norms_per_layer() {
        return (D::sandwich_norms ? 2 : 0) + (D::pre_norms ? 2 : 0);
    }

    template <class D, class Binder>
    static void bind(Binder& b, std::size_t il, const std::string& blk, block_norms& L, float eps) {
        detail::check_parallel_residual_key(b, false, SequentialBlockWith<AttnNorm, FfnNorm, FfnName, First>::describe());
        const std::size_t E = b.hparams().dims.n_embd;
        using norm_policy = typename D::norm;
        const std::string attn_norm = blk + AttnNorm.str(), ffn_norm = blk + FfnNorm.str();
        if constexpr (D::pre_norms) {
            // layer 0 without an attention norm: where the type says so, or the architecture's
            // conventions (the modern-bert entry's first_attn_norm_optional)
            const bool may_lack = il == 0 && (First == first_attn_norm::optional || b.conventions().first_attn_norm_optional);
            if (!may_lack || b.file().find_tensor(attn_norm + ".weight"))
                L.attn_norm = detail::bind_norm<typename D::base_norm>(b, attn_norm, E, eps);
            if constexpr (FfnName == norm_tensor::bare) L.ffn_norm = {b.vector_f32(ffn_norm, E), nullptr, eps};
            else L.ffn_norm = detail::bind_norm<typename D::base_norm>(b, ffn_norm, E, eps);
        } else if (b.file().find_tensor(attn_norm + ".weight") || b.file().find_tensor(ffn_norm + ".weight")) {
            throw shape_error(norm_policy::describe() + " but the file has norms before the sublayers (" + attn_norm +
                              ".weight): use " + D::base_norm::describe() + " or PrePostNorm<" +
                              D::base_norm::describe() + ">");
        }
        // a post-norm name the block reads as a pre-norm (Seed-OSS's post_attention_norm) is its own
        auto post_norm_unbound = [&](const std::string& name) {
            return name != attn_norm && name != ffn_norm && b.file().find_tensor(name + ".weight");
        };
        if constexpr (D::sandwich_norms) {
            L.attn_post_norm = {b.vector_f32(blk + "post_attention_norm.weight", E), nullptr, eps};
            L.ffn_post_norm = {b.vector_f32(blk + "post_ffw_norm.weight", E), nullptr, eps};
        } else if (post_norm_unbound(blk + "post_attention_norm") || post_norm_unbound(blk + "post_ffw_norm")) {
            throw shape_error(norm_policy::describe() + " but the file has norms after the sublayers (" + blk +
                              "post_attention_norm.weight): use PrePostNorm<" + norm_policy::describe() + ">");
        }
    }

    template <class D, class S>
    static void forward(S& s, const block_norms& L) {
        constexpr bool pre = D::pre_norms, post = D::sandwich_norms;
        float* x = s.stream();
        float* h = s.normed();
        float* t = s.out();
        // a sublayer reads the normed residual stream, or the stream itself (NormAfterSublayer)
        const float* in = pre ? h : x;
        // (a layer 0 the file gives no attention norm mixes the stream itself: ModernBERT;
        // bind allowed that only there)
        const bool attn_normed = pre && L.attn_norm.w;
        if (attn_normed) s.norm(L.attn_norm, x, h);
        s.mix(attn_normed ? h : x, t);
        if constexpr (post) s.norm(L.attn_post_norm, t, t);
        s.add(x, t);
        if constexpr (pre) s.norm(L.ffn_norm, x, h);
        s.ffn(in, t);
        if constexpr (post) s.norm(L.ffn_post_norm, t, t);
        s.add(x, t);
    }
};

template <std::size_t Norms, tensor_stem AttnNorm, tensor_stem FfnNorm>
struct block_impl<ParallelResidualWith<Norms, AttnNorm, FfnNorm>> {
    template <class D>
    static constexpr std::size_t norms_per_layer() {
        return Norms;
    }

    template <class D, class Binder>
    static void bind(Binder& b, std::size_t, const std::string& blk, block_norms& L, float eps) {
        detail::check_parallel_residual_key(b, true, ParallelResidualWith<Norms, AttnNorm, FfnNorm>::describe());
        const std::size_t E = b.hparams().dims.n_embd;
        L.attn_norm = detail::bind_norm<typename D::base_norm>(b, blk + AttnNorm.str(), E, eps);
        if constexpr (Norms == 2) L.ffn_norm = detail::bind_norm<typename D::base_norm>(b, blk + FfnNorm.str(), E, eps);
    }

    template <class D, class S>
    static void forward(S& s, const block_norms& L) {
        float* x = s.stream();
        float* h = s.normed();
        float* t = s.out();
        float* u = s.out2();
        s.norm(L.attn_norm, x, h);
        s.mix(h, t);
        // the mixer has consumed h (its projections are taken): the second norm may reuse it
        if constexpr (Norms == 2) s.norm(L.ffn_norm, x, h);
        s.ffn(h, u);
        s.add2(x, t, u);
    }
};

} // namespace archetype
