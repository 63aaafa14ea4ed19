#pragma once
// Encoder<Policies...>: the structure of an encoder-only transformer (BERT and
// its descendants), assembled from policies given in any order (found by axis).
// This header holds the compile-time part: resolution, checks, describe() and
// figures. Loading (models/encoder_model.hpp) and running
// (runtime/encoder_session.hpp) build on it.
//
//   using MiniLM = Encoder<MHA<12>, LearnedPositions<512>, LayerNorm, GeluMLP, MeanPooling, L2Normalize>;
//
// Defaults for a missing axis: heads MHA<dynamic> (from the file), position
// LearnedPositions<> (table size from the file), mask Bidirectional, cache
// NoCache, mixer SelfAttention, ffn GeluMLP (tanh GELU, as llama.cpp's bert),
// norm LayerNorm in post-norm blocks (BERT), pooling from the file
// (`bert.pooling_type`), embedding normalisation L2Normalize, storage
// WeightsFromFile. Pre-norm blocks: give the norm as PreNorm<LayerNorm>.
#include <cstddef>
#include <string>
#include <type_traits>

#include "archetype/core/dims.hpp"
#include "archetype/core/policy.hpp"
#include "archetype/models/compose.hpp"
#include "archetype/models/decoder.hpp"
#include "archetype/policies/block.hpp"
#include "archetype/policies/block_post_norm.hpp"
#include "archetype/policies/cache.hpp"
#include "archetype/policies/embd_norm.hpp"
#include "archetype/policies/ffn.hpp"
#include "archetype/policies/heads.hpp"
#include "archetype/policies/mask.hpp"
#include "archetype/policies/mixer.hpp"
#include "archetype/policies/norm.hpp"
#include "archetype/policies/pooling.hpp"
#include "archetype/policies/position.hpp"
#include "archetype/policies/storage.hpp"

namespace archetype {

/// Where a block's norms sit: after each residual add (BERT, "post-norm") or at
/// the input of each sub-layer with one final norm (pre-norm).
enum class norm_placement { post, pre };

/// A norm policy placed before each sub-layer: x + f(norm(x)).
template <class Norm>
struct PreNorm : Norm {
    static_assert(std::is_same_v<axis_of_t<Norm>, archetype::axis::norm>,
                  "archetype: PreNorm<Norm> takes a norm policy such as LayerNorm or RMSNorm");
    static constexpr norm_placement placement = norm_placement::pre;
    using base_norm = Norm;
    static std::string describe() { return Norm::describe() + ", pre-norm blocks"; }
};
/// A norm policy placed after each residual add: norm(x + f(x)) (BERT; the Encoder's default).
template <class Norm>
struct PostNorm : Norm {
    static_assert(std::is_same_v<axis_of_t<Norm>, archetype::axis::norm>,
                  "archetype: PostNorm<Norm> takes a norm policy such as LayerNorm or RMSNorm");
    static constexpr norm_placement placement = norm_placement::post;
    using base_norm = Norm;
    static std::string describe() { return Norm::describe() + ", post-norm blocks"; }
};

namespace detail {
template <class N>
constexpr norm_placement placement_of() noexcept {
    if constexpr (requires { N::placement; })
        return N::placement;
    else
        return norm_placement::post;
}
template <class N>
struct base_norm_of { using type = N; };
template <class N>
    requires requires { typename N::base_norm; }
struct base_norm_of<N> { using type = typename N::base_norm; };

template <class P>
inline constexpr bool is_learned_positions = false;
template <dim_t N>
inline constexpr bool is_learned_positions<LearnedPositions<N>> = true;

template <class M>
inline constexpr bool is_interleave = requires { M::period; };
template <class F>
inline constexpr bool is_moe = requires { F::experts; };
} // namespace detail

/// Run-time dimensions of an encoder (from a file).
struct encoder_dims {
    std::size_t n_layer = 0, n_embd = 0, n_vocab = 0, n_ff = 0;
    std::size_t n_head = 0, head_dim = 0;
    std::size_t n_positions = 0; // learned-position table rows (0 = none)
    std::size_t n_token_types = 0;
};

template <class... Policies>
struct Encoder {
    static constexpr bool checked_ = detail::check_composition<Policies...>::ok;

    using heads = policy_on_axis_t<axis::heads, MHA<dynamic>, Policies...>;
    using position = policy_on_axis_t<axis::position, LearnedPositions<>, Policies...>;
    using mask = policy_on_axis_t<axis::mask, Bidirectional, Policies...>;
    using cache = policy_on_axis_t<axis::cache, NoCache, Policies...>;
    using mixer = policy_on_axis_t<axis::mixer, SelfAttention, Policies...>;
    using ffn = policy_on_axis_t<axis::ffn, GeluMLP, Policies...>;
    using norm_policy = policy_on_axis_t<axis::norm, LayerNorm, Policies...>;
    using norm = typename detail::base_norm_of<norm_policy>::type;
    using pooling = policy_on_axis_t<axis::pooling, PoolingFromFile, Policies...>;
    using embd_norm = policy_on_axis_t<axis::embd_norm, L2Normalize, Policies...>;
    using storage = policy_on_axis_t<axis::storage, WeightsFromFile, Policies...>;

    static constexpr norm_placement placement = detail::placement_of<norm_policy>();
    static constexpr bool is_encoder = true;

    /// The layer's shape on the core: post-norm blocks (PostNormBlock) or pre-norm ones
    /// (SequentialBlock; SequentialBlockFirstNormOptional where layer 0 has no attention
    /// norm, ModernBERT), given on the block axis or implied by the norm's placement.
    using block = policy_on_axis_t<axis::block,
                                   std::conditional_t<placement == norm_placement::post, PostNormBlock, SequentialBlock>,
                                   Policies...>;
    static_assert(detail::block_is_post_norm<block> == (placement == norm_placement::post),
                  "archetype: an Encoder's block and its norm placement disagree: PostNormBlock goes with PostNorm<Norm> "
                  "(the default), a pre-norm block with PreNorm<Norm>");
    /// The same model as a composition of the core (models/decoder.hpp): the encoder's
    /// axes, a bidirectional mask with no cache, BERT's embedding and the pooling head.
    using core = Decoder<heads, position, mask, NoCache, mixer, ffn, norm, block, BertEmbedding<norm>, EncoderHead, storage>;

    static_assert(!mask::causal,
                  "archetype: an Encoder sees its whole sequence: use Bidirectional, SymmetricWindow<W> or "
                  "Interleave<N, SymmetricWindow<W>, Bidirectional, ...> (Causal and SlidingWindow belong to Decoder)");
    static_assert(std::is_same_v<cache, NoCache>,
                  "archetype: an Encoder runs each batch whole and keeps no KV cache: remove the cache policy or use NoCache");
    static_assert(mixer::attention, "archetype: an Encoder's mixer must be self-attention");
    static_assert(heads::n_head == dynamic || heads::n_head_kv == dynamic || heads::n_head == heads::n_head_kv ||
                      heads::n_head % heads::n_head_kv == 0,
                  "archetype: the query heads must be a multiple of the key/value heads");
    static_assert(detail::is_learned_positions<position> || std::is_same_v<position, Sinusoidal> ||
                      std::is_same_v<position, NoPE> || position::rotary,
                  "archetype: an Encoder supports LearnedPositions<N>, Sinusoidal, RoPE or NoPE positions "
                  "(ALiBi and RelativeBias are not implemented for encoders)");
    static_assert(!position::rotary || heads::head_dim == dynamic || heads::head_dim % 2 == 0,
                  "archetype: RoPE rotates pairs of dimensions, so the head dimension must be even");
    static_assert(!detail::is_moe<ffn>, "archetype: an Encoder's feed-forward must be dense (GeluMLP, GeGLU or SwiGLU), not MoE");
    static_assert(std::is_same_v<norm, LayerNorm> || std::is_same_v<norm, LayerNormNoBias> ||
                      std::is_same_v<norm, RMSNorm>,
                  "archetype: an Encoder's norm must be LayerNorm, LayerNormNoBias or RMSNorm");

    static constexpr dim_t n_head = heads::n_head;
    static constexpr dim_t head_dim = heads::head_dim;
    static constexpr dim_t max_positions = [] {
        if constexpr (detail::is_learned_positions<position>) return position::max_positions;
        else return dynamic;
    }();

    /// Weights of the whole model (embeddings, token types, norms and biases included).
    static constexpr std::size_t parameters(const encoder_dims& d) noexcept {
        const std::size_t q = d.n_head * d.head_dim;
        const std::size_t attn = 4 * d.n_embd * q + 3 * q + d.n_embd;
        const std::size_t f = (ffn::gated ? 3 : 2) * d.n_embd * d.n_ff + d.n_ff + d.n_embd;
        const std::size_t layer = attn + f + 4 * d.n_embd;
        return (d.n_vocab + d.n_positions + d.n_token_types) * d.n_embd + 2 * d.n_embd + d.n_layer * layer;
    }
    /// FLOPs (2 per multiply-add) of one sequence of n tokens: projections plus attention.
    static constexpr std::size_t flops_per_sequence(const encoder_dims& d, std::size_t n) noexcept {
        const std::size_t q = d.n_head * d.head_dim;
        const std::size_t proj = 4 * d.n_embd * q + (ffn::gated ? 3 : 2) * d.n_embd * d.n_ff;
        std::size_t keys = n;
        if constexpr (mask::windowed && mask::window != dynamic) keys = mask::window / 2 * 2 + 1 < n ? mask::window / 2 * 2 + 1 : n;
        return d.n_layer * n * (2 * proj + 4 * q * keys);
    }

    static std::string describe() {
        using detail::describe_line;
        std::string s = "Encoder\n";
        s += describe_line("heads", heads::describe());
        s += describe_line("position", position::describe());
        s += describe_line("mask", mask::describe());
        s += describe_line("cache", cache::describe());
        s += describe_line("mixer", mixer::describe());
        s += describe_line("ffn", ffn::describe());
        s += describe_line("norm", norm::describe() + (placement == norm_placement::post
                                                              ? " after each residual add (post-norm)"
                                                              : " before each sub-layer (pre-norm)"));
        s += describe_line("pooling", pooling::describe());
        s += describe_line("normalize", embd_norm::describe());
        s += describe_line("weights", storage::describe());
        return s;
    }
};

/// True for Encoder<...> types.
template <class M>
concept EncoderModel = requires { requires M::is_encoder; };

} // namespace archetype
