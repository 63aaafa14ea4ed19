#pragma once
// Policy lookup by axis. Every policy type names its axis with a member
// `using axis = archetype::axis::<name>;`. Model templates take policies in any
// order and find each one by its axis; a missing axis takes the model's default.
//
// Lookup is plain C++20 (folds over the pack), not Boost.Hana: it runs once per
// model instantiation and Hana costs ~20-30 ms and multi-KB messages per variant
// (TOOLCHAIN.md). Hana stays at the edges (introspectable hyperparameter structs).
#include <cstddef>
#include <string_view>
#include <type_traits>

namespace archetype {

namespace axis {
struct heads {};      ///< attention heads: MHA, GQA, MQA
struct position {};   ///< RoPE, ALiBi, Sinusoidal, LearnedPositions, RelativeBias, NoPE
struct mask {};       ///< Causal, Bidirectional, SlidingWindow, SymmetricWindow, Interleave
struct cache {};      ///< NoCache, FullCache, RollingCache, SinkCache, recurrent state
struct mixer {};      ///< self-attention, Rwkv5TimeMix, Rwkv6TimeMix
struct ffn {};        ///< SwiGLU, GeGLU, GeluMLP, RwkvChannelMix, MoE
struct norm {};       ///< RMSNorm, LayerNorm
struct pooling {};    ///< NoPooling, MeanPooling, ClsPooling, LastPooling, MaxPooling, RankPooling
struct embd_norm {};  ///< NoNormalize, MaxAbsInt16, L1Normalize, L2Normalize, PNormalize
struct storage {};    ///< F32, F16, BF16, Q8_0, ... (weight storage)
struct embedding {};  ///< PlainEmbedding, ScaledEmbedding (token embedding scale)
struct block {};      ///< SequentialBlock, ParallelResidual, ParallelResidualTwoNorms (decoder layer shape)
struct logits {};     ///< PlainLogits, LogitMultiplier, LogitSoftCap (what is done to the logits)
struct attn_scale {}; ///< InvSqrtHeadDim, AttentionScaleKey, QueryPreAttnScale (the attention scores' scale)
struct score_cap {};  ///< NoScoreCap, AttentionSoftCap (what caps the attention scores before the softmax)
} // namespace axis

namespace detail {
template <class T, class = void>
struct axis_of { using type = void; };
template <class T>
struct axis_of<T, std::void_t<typename T::axis>> { using type = typename T::axis; };

template <class A>
inline constexpr bool is_axis =
    std::is_same_v<A, axis::heads> || std::is_same_v<A, axis::position> ||
    std::is_same_v<A, axis::mask> || std::is_same_v<A, axis::cache> ||
    std::is_same_v<A, axis::mixer> || std::is_same_v<A, axis::ffn> ||
    std::is_same_v<A, axis::norm> || std::is_same_v<A, axis::pooling> ||
    std::is_same_v<A, axis::embd_norm> || std::is_same_v<A, axis::storage> ||
    std::is_same_v<A, axis::embedding> || std::is_same_v<A, axis::block> || std::is_same_v<A, axis::logits> ||
    std::is_same_v<A, axis::attn_scale> || std::is_same_v<A, axis::score_cap>;
} // namespace detail

/// The axis a type belongs to, or void when it is not a policy.
template <class T>
using axis_of_t = typename detail::axis_of<T>::type;

/// True for a type that declares one of the known axes.
template <class T>
concept Policy = detail::is_axis<axis_of_t<T>>;

/// How many of Ps... are on axis A.
template <class A, class... Ps>
inline constexpr std::size_t count_on_axis = (std::size_t{0} + ... + std::size_t(std::is_same_v<axis_of_t<Ps>, A>));

namespace detail {
template <class A, class Default, class... Ps>
struct find_policy { using type = Default; };
template <class A, class Default, class P, class... Ps>
struct find_policy<A, Default, P, Ps...> {
    using type = std::conditional_t<std::is_same_v<axis_of_t<P>, A>, P,
                                    typename find_policy<A, Default, Ps...>::type>;
};
} // namespace detail

/// The policy of Ps... on axis A, or Default when none is given.
template <class A, class Default, class... Ps>
using policy_on_axis_t = typename detail::find_policy<A, Default, Ps...>::type;

} // namespace archetype
