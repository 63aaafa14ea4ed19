#pragma once
// The behaviour of a policy lives in a specialisation of its axis's *_impl
// template, next to the policy itself (CuTe's way: the policy selects an
// implementation by specialisation). The model templates call only the hooks
// these specialisations define; nothing in the library branches on a policy's
// name. A policy without its specialisation stops the build with one sentence.
//
//   position_impl<P>   parameters read from the file, tensors bound, per-session
//                      state, hooks embed_add / score_bias / max_positions
//                      (policies/position/*.hpp)
//   ffn_impl<F>        the activation of a dense feed-forward block, and optionally
//                      its tensor binding (policies/ffn.hpp)
//   norm_impl<N>       the normalisation of a row (policies/norm.hpp)
//   embedding_impl<E>  what is done to a token's embedding row (policies/embedding.hpp)
//   mixer_impl<M>      the attention block's tensors (policies/mixer.hpp)
//   block_impl<B>      a decoder layer's shape: its norms and how it wires the mixer and
//                      the feed-forward into the residual stream (policies/block.hpp)
//   logits_impl<L>     what is done to the logits, and the keys that say it (policies/logits.hpp,
//                      policies/logit_softcap.hpp)
//   attn_scale_impl<S> the attention scores' scale and the keys that say it
//                      (policies/attention_scale.hpp)
//   score_cap_impl<C>  what caps the attention scores before the softmax, and its keys
//                      (policies/attention_softcap.hpp)
//   mask_impl<M>       a decoder mask's window and windowed layers, checked against
//                      the file (policies/mask.hpp)
//   cache_impl<C>      where a decoder keeps keys and values, and how a layer
//                      attends over them (runtime/cache/*.hpp); RecurrentState's
//                      names the RWKV state store
//
// docs/README.md ("Adding a policy") lists each hook with its signature.
#include <cstddef>

namespace archetype {

namespace detail {
template <class>
inline constexpr bool no_impl = false;
}

template <class P>
struct position_impl {
    static_assert(detail::no_impl<P>,
                  "archetype: this position policy has no behaviour: specialise archetype::position_impl<YourPolicy> "
                  "(see docs/README.md, Adding a policy)");
};
template <class P>
struct ffn_impl {
    static_assert(detail::no_impl<P>,
                  "archetype: this feed-forward policy has no behaviour: specialise archetype::ffn_impl<YourPolicy> "
                  "(see docs/README.md, Adding a policy)");
};
template <class P>
struct norm_impl {
    static_assert(detail::no_impl<P>,
                  "archetype: this norm policy has no behaviour: specialise archetype::norm_impl<YourPolicy> "
                  "(see docs/README.md, Adding a policy)");
};
template <class P>
struct embedding_impl {
    static_assert(detail::no_impl<P>,
                  "archetype: this embedding policy has no behaviour: specialise archetype::embedding_impl<YourPolicy> "
                  "(see docs/README.md, Adding a policy)");
};
template <class P>
struct mixer_impl {
    static_assert(detail::no_impl<P>,
                  "archetype: this mixer policy has no behaviour: specialise archetype::mixer_impl<YourPolicy> "
                  "(see docs/README.md, Adding a policy)");
};
template <class P>
struct block_impl {
    static_assert(detail::no_impl<P>,
                  "archetype: this block policy has no behaviour: specialise archetype::block_impl<YourPolicy> "
                  "(see docs/README.md, Adding a block shape)");
};
template <class P>
struct logits_impl {
    static_assert(detail::no_impl<P>,
                  "archetype: this logits policy has no behaviour: specialise archetype::logits_impl<YourPolicy> "
                  "(see docs/README.md, Adding a quirk)");
};
template <class P>
struct attn_scale_impl {
    static_assert(detail::no_impl<P>,
                  "archetype: this attention-scale policy has no behaviour: specialise archetype::attn_scale_impl<YourPolicy> "
                  "(see docs/README.md, Adding a quirk)");
};
template <class P>
struct score_cap_impl {
    static_assert(detail::no_impl<P>,
                  "archetype: this attention-score cap policy has no behaviour: specialise archetype::score_cap_impl<YourPolicy> "
                  "(see docs/README.md, Adding a quirk)");
};
template <class P>
struct mask_impl {
    static_assert(detail::no_impl<P>,
                  "archetype: this mask policy has no behaviour in a decoder: specialise archetype::mask_impl<YourPolicy> "
                  "(see docs/README.md, Adding a policy)");
};
template <class P>
struct cache_impl {
    static_assert(detail::no_impl<P>,
                  "archetype: this cache policy has no behaviour: specialise archetype::cache_impl<YourPolicy> "
                  "(see docs/README.md, Adding a policy, and runtime/cache/)");
};

/// What a position policy's per-session state is sized for (position_impl<P>::init).
struct position_context {
    std::size_t n_head = 0, n_embd = 0, n_ctx = 0;
};

} // namespace archetype
