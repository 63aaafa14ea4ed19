#pragma once
// Decoder<Policies...>: the structure of a decoder-only transformer, assembled
// from policies given in any order (found by axis). This header holds the
// compile-time part: resolution, checks, describe() and the figures the type
// alone determines. Loading weights and running sessions build on it
// (runtime/decoder_*.hpp).
//
//   using Mistral = Decoder<GQA<32, 8>, RoPE, SlidingWindow<4096>, RollingCache>;
//
// Defaults for a missing axis: heads GQA<dynamic, dynamic> (from the file),
// position RoPE, mask Causal, cache FullCache, mixer SelfAttention, ffn SwiGLU,
// norm RMSNorm (pre-norm blocks; PrePostNorm<RMSNorm> adds a norm after each
// sublayer, NormAfterSublayer<RMSNorm> has only that one), block SequentialBlock
// (ParallelResidual: x + mixer(n(x)) + ffn(n(x))), logits PlainLogits, storage
// WeightsFromFile, embedding PlainEmbedding, attention scale InvSqrtHeadDim,
// attention-score cap NoScoreCap.
// Family quirks are policies on these axes that read their own keys (Gemma 2's soft caps:
// AttentionSoftCap, LogitSoftCap; Granite's multipliers: policies/multipliers.hpp).
#include <cstddef>
#include <string>
#include <type_traits>

#include "archetype/core/dims.hpp"
#include "archetype/core/policy.hpp"
#include "archetype/models/compose.hpp"
#include "archetype/policies/attention_scale.hpp"
#include "archetype/policies/attention_softcap.hpp"
#include "archetype/policies/block.hpp"
#include "archetype/policies/block_post_norm.hpp"
#include "archetype/policies/block_rwkv.hpp"
#include "archetype/policies/block_single.hpp"
#include "archetype/policies/cache.hpp"
#include "archetype/policies/embedding.hpp"
#include "archetype/policies/encoder_head.hpp"
#include "archetype/policies/ffn.hpp"
#include "archetype/policies/ffn_rwkv.hpp"
#include "archetype/policies/ffn_xielu.hpp"
#include "archetype/policies/heads.hpp"
#include "archetype/policies/logit_softcap.hpp"
#include "archetype/policies/logits.hpp"
#include "archetype/policies/mask.hpp"
#include "archetype/policies/mixer.hpp"
#include "archetype/policies/mixers/gated_attention.hpp"
#include "archetype/policies/mixers/gated_delta_net.hpp"
#include "archetype/policies/mixers/hybrid.hpp"
#include "archetype/policies/mixers/mamba.hpp"
#include "archetype/policies/mixers/mamba2.hpp"
#include "archetype/policies/mixers/parallel.hpp"
#include "archetype/policies/mixers/mla.hpp"
#include "archetype/policies/mixers/rwkv_v5_v6.hpp"
#include "archetype/policies/mixers/rwkv7.hpp"
#include "archetype/policies/mixers/short_conv.hpp"
#include "archetype/policies/multipliers.hpp"
#include "archetype/policies/norm.hpp"
#include "archetype/policies/norm_sandwich.hpp"
#include "archetype/policies/position.hpp"
#include "archetype/policies/storage.hpp"

namespace archetype {

/// Run-time dimensions of a transformer (from a file or a preset).
struct transformer_dims {
    std::size_t n_layer = 0, n_embd = 0, n_vocab = 0, n_ff = 0;
    std::size_t n_head = 0, n_head_kv = 0, head_dim = 0;
    std::size_t window = 0;     // sliding window (0 = none)
    std::size_t n_expert = 1;   // MoE experts (1 = dense)
    std::size_t n_expert_used = 1;
    bool tied_output = false;   // output head shares the token embedding
};

/// Whole-model figures once the dimensions are known.
struct model_figures {
    std::size_t parameters = 0;             // weights, embeddings included
    std::size_t matmul_flops_per_token = 0; // 2 x multiply-adds of all projections + head
    std::size_t attention_flops_per_token = 0; // QK^T and AV at the given context
    std::size_t cache_bytes = 0;            // KV cache of one sequence at the given context
};

namespace detail {
/// A cache policy's figures: whether it keeps only a ring of the window on windowed
/// layers, and its sink positions (both optional in a policy: a user's cache that
/// says nothing is sized like FullCache in describe()/figures()).
template <class Cache>
inline constexpr bool cache_rolls = [] {
    if constexpr (requires { Cache::rolling; }) return bool(Cache::rolling);
    else return false;
}();
template <class Cache>
inline constexpr dim_t cache_sink = [] {
    if constexpr (requires { Cache::sink; }) return dim_t(Cache::sink);
    else return dim_t(0);
}();
template <class Mask, class Cache>
inline constexpr bool rolling_needs_window = !cache_rolls<Cache> || Mask::windowed;
template <class N>
struct decoder_base_norm {
    using type = N;
    static constexpr bool sandwich = false;
    static constexpr bool pre = true;
};
template <class N>
    requires requires { N::sandwich; }
struct decoder_base_norm<N> {
    using type = typename N::base_norm;
    static constexpr bool sandwich = N::sandwich;
    static constexpr bool pre = N::pre;
};
template <class Position, class Heads>
inline constexpr bool rope_head_dim_even =
    !Position::rotary || Heads::head_dim == dynamic || Heads::head_dim % 2 == 0;
} // namespace detail

template <class... Policies>
struct Decoder {
    static_assert(detail::check_composition<Policies...>::ok); // one sentence per broken rule

    using heads = policy_on_axis_t<axis::heads, GQA<dynamic, dynamic>, Policies...>;
    using position = policy_on_axis_t<axis::position, RoPE, Policies...>;
    using mask = policy_on_axis_t<axis::mask, Causal, Policies...>;
    using cache = policy_on_axis_t<axis::cache, FullCache, Policies...>;
    using mixer = policy_on_axis_t<axis::mixer, SelfAttention, Policies...>;
    using ffn = policy_on_axis_t<axis::ffn, SwiGLU, Policies...>;
    using norm = policy_on_axis_t<axis::norm, RMSNorm, Policies...>;
    using storage = policy_on_axis_t<axis::storage, WeightsFromFile, Policies...>;
    /// The norm itself, whether it is applied to each sublayer's output (PrePostNorm<Norm>,
    /// NormAfterSublayer<Norm>) and to its input (all but NormAfterSublayer<Norm>).
    using base_norm = typename detail::decoder_base_norm<norm>::type;
    static constexpr bool sandwich_norms = detail::decoder_base_norm<norm>::sandwich;
    static constexpr bool pre_norms = detail::decoder_base_norm<norm>::pre;
    using embedding = policy_on_axis_t<axis::embedding, PlainEmbedding, Policies...>;
    /// The layer's shape: how the mixer and the feed-forward meet the residual stream.
    using block = policy_on_axis_t<axis::block, SequentialBlock, Policies...>;
    /// What is done to the logits (LogitMultiplier: Command-R's logit_scale).
    using logits = policy_on_axis_t<axis::logits, PlainLogits, Policies...>;
    /// The attention scores' scale (AttentionScaleKey: Granite; QueryPreAttnScale<L>: Gemma 2 / 3).
    using attn_scale = policy_on_axis_t<axis::attn_scale, InvSqrtHeadDim, Policies...>;
    /// What bounds the attention scores before the softmax (AttentionSoftCap: Gemma 2).
    using score_cap = policy_on_axis_t<axis::score_cap, NoScoreCap, Policies...>;

    static_assert(!(detail::block_is_parallel<block> && (sandwich_norms || !pre_norms)),
                  "archetype: a parallel residual block norms the stream once before both sublayers: use a plain "
                  "norm (RMSNorm, LayerNorm), not PrePostNorm or NormAfterSublayer");

    static_assert(detail::rolling_needs_window<mask, cache>,
                  "archetype: RollingCache/SinkCache keep only a window of positions, but the mask has "
                  "no window: add SlidingWindow<W> (or Interleave<N, SlidingWindow<W>, Causal>), or use FullCache");
    static_assert(detail::rope_head_dim_even<position, heads>,
                  "archetype: RoPE rotates pairs of dimensions, so the head dimension must be even: "
                  "change the head dimension or use another position policy");
    // The mask and the memory go together: a causal query sees past tokens, which a cache
    // keeps for the next pass; a bidirectional one sees later tokens too, so each pass must
    // hold its sequences whole and nothing is kept (NoCache: an encoder on the core).
    static_assert(mask::causal || std::is_same_v<cache, NoCache>,
                  "archetype: a Decoder is causal unless it keeps no cache: a bidirectional mask (Bidirectional, "
                  "SymmetricWindow) sees later tokens, which a cache of past tokens cannot serve: compose NoCache "
                  "(each pass runs whole sequences, as an encoder) or use Causal, SlidingWindow or Interleave of them");
    static_assert(!mask::causal || !std::is_same_v<cache, NoCache>,
                  "archetype: NoCache keeps no past tokens, so a causal Decoder could not decode token by token: "
                  "use FullCache or RollingCache (NoCache goes with Bidirectional or SymmetricWindow)");
    static_assert(!(detail::block_is_post_norm<block> && (sandwich_norms || !pre_norms)),
                  "archetype: a post-norm block norms the stream after each residual add: use a plain norm "
                  "(LayerNorm, RMSNorm), not PrePostNorm or NormAfterSublayer");
    // a mixer that never attends (Mamba, Mamba2) leaves every layer without KV cells: the
    // cache policy then holds positions only

    static constexpr dim_t n_head = heads::n_head;
    static constexpr dim_t n_head_kv = heads::n_head_kv;
    static constexpr dim_t head_dim = heads::head_dim;
    static constexpr bool static_heads = n_head != dynamic && n_head_kv != dynamic && head_dim != dynamic;

    /// Bytes of K and V (float32 cells) one token adds to one layer's cache (K only where the
    /// mixer's values are a prefix of its keys: multi-head latent attention).
    static constexpr std::size_t kv_bytes_per_token_per_layer(std::size_t n_kv, std::size_t hd) noexcept {
        return (detail::mixer_values_in_keys<mixer> ? 1 : 2) * n_kv * hd * sizeof(float);
    }
    /// Attention FLOPs one token spends per layer per attended key (QK^T and AV).
    static constexpr std::size_t attention_flops_per_key_per_layer(std::size_t n_q, std::size_t hd) noexcept {
        return 4 * n_q * hd;
    }

    /// Figures of the whole model at a context length (0 = none).
    static constexpr model_figures figures(const transformer_dims& d, std::size_t context = 0) noexcept {
        const std::size_t q = d.n_head * d.head_dim, kv = d.n_head_kv * d.head_dim;
        const std::size_t attn = d.n_embd * q + 2 * d.n_embd * kv + q * d.n_embd;
        const std::size_t one_ffn = (ffn::gated ? 3 : 2) * d.n_embd * d.n_ff;
        const std::size_t ffn_params = one_ffn * d.n_expert + (d.n_expert > 1 ? d.n_embd * d.n_expert : 0);
        const std::size_t ffn_active = one_ffn * d.n_expert_used;
        const std::size_t layer = attn + ffn_params + block_impl<block>::template norms_per_layer<Decoder>() * d.n_embd;
        const std::size_t emb = d.n_vocab * d.n_embd;
        model_figures f;
        f.parameters = emb + (d.tied_output ? 0 : emb) + d.n_layer * layer + d.n_embd;
        f.matmul_flops_per_token = 2 * (d.n_layer * (attn + ffn_active) + emb);
        std::size_t keys_total = 0; // keys attended by the last token, summed over layers
        for (std::size_t il = 0; il < d.n_layer; ++il)
            keys_total += layer_is_windowed(il) && d.window ? (context < d.window ? context : d.window) : context;
        f.attention_flops_per_token = keys_total * attention_flops_per_key_per_layer(d.n_head, d.head_dim);
        std::size_t cells = 0;
        for (std::size_t il = 0; il < d.n_layer; ++il)
            cells += detail::cache_rolls<cache> && layer_is_windowed(il) && d.window
                         ? (context < d.window + detail::cache_sink<cache> ? context : d.window + detail::cache_sink<cache>)
                         : context;
        f.cache_bytes = cells * kv_bytes_per_token_per_layer(d.n_head_kv, d.head_dim);
        return f;
    }

    static constexpr bool layer_is_windowed(std::size_t il) noexcept {
        if constexpr (requires { mask::period; })
            return mask::is_local(il) && mask::local::windowed;
        else
            return mask::windowed;
    }

    static std::string describe() {
        using detail::describe_line;
        std::string s = "Decoder\n";
        s += describe_line("heads", heads::describe());
        s += describe_line("position", position::describe());
        s += describe_line("mask", mask::describe());
        std::string c = cache::describe();
        if constexpr (detail::cache_rolls<cache>) {
            c += mask::window == dynamic ? " (ring of the file's window per sequence per windowed layer)"
                                         : " (ring of " + std::to_string(mask::window) +
                                               " cells per sequence per windowed layer)";
        }
        s += describe_line("cache", c);
        s += describe_line("mixer", mixer::describe());
        s += describe_line("ffn", ffn::describe());
        s += describe_line("norm", norm::describe());
        if constexpr (!std::is_same_v<block, SequentialBlock>) s += describe_line("block", block::describe());
        if constexpr (!std::is_same_v<logits, PlainLogits>) s += describe_line("logits", logits::describe());
        if constexpr (!std::is_same_v<attn_scale, InvSqrtHeadDim>) s += describe_line("scale", attn_scale::describe());
        if constexpr (!std::is_same_v<score_cap, NoScoreCap>) s += describe_line("scores", score_cap::describe());
        if constexpr (!std::is_same_v<embedding, PlainEmbedding>) s += describe_line("embedding", embedding::describe());
        s += describe_line("weights", storage::describe());
        if constexpr (static_heads) {
            s += describe_line("KV cache", std::to_string(kv_bytes_per_token_per_layer(n_head_kv, head_dim)) +
                                               " bytes per token per layer");
            s += describe_line("attention", std::to_string(attention_flops_per_key_per_layer(n_head, head_dim)) +
                                                " FLOPs per token per attended key per layer");
        } else {
            s += describe_line("KV cache", "bytes per token known once the head dimension is (from the file)");
        }
        return s;
    }
};

} // namespace archetype
