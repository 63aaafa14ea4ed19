#pragma once
// Rwkv5<D, H> (Eagle, v5.2), Rwkv6<D, H> (Finch) and Rwkv7<D, H> (Goose): D =
// embedding size, H = head size (N); either may be `dynamic` (read from the file).
// The structure is the policy set: mixer (Rwkv5TimeMix / Rwkv6TimeMix /
// Rwkv7TimeMix), feed-forward (RwkvChannelMix; Rwkv7ChannelMix), norm (LayerNorm; ln_x is a GroupNorm over heads), cache
// (RecurrentState), storage (WeightsFromFile or a fixed type).
//
//   using Finch = archetype::Rwkv6<2048, 64>;
//   std::cout << archetype::describe<Finch>();
//
// Each is a composition on the decoder core (Arch::core: a Decoder whose mixer is the time
// mix, whose feed-forward is the channel mix and whose block is RwkvBlock), which loads and
// runs it: the same block loop, binder, tensor and key ledgers as every decoder.
// rwkv_model<Arch> is a loaded model (models/rwkv_model.hpp, loaded by models/rwkv_load.hpp),
// rwkv_session<Arch> RWKV's session API over the core's session (runtime/rwkv_session.hpp).
#include <cstddef>
#include <cstdio>
#include <string>
#include <type_traits>

#include "archetype/core/dims.hpp"
#include "archetype/core/error.hpp"
#include "archetype/core/policy.hpp"
#include "archetype/layers/rwkv_weights.hpp"
#include "archetype/models/compose.hpp"
#include "archetype/models/decoder.hpp"
#include "archetype/policies/cache.hpp"
#include "archetype/policies/norm.hpp"
#include "archetype/policies/rwkv.hpp"
#include "archetype/policies/storage.hpp"

namespace archetype {

namespace detail {

inline std::string rwkv_dim_str(dim_t d) { return d == dynamic ? std::string("dynamic") : std::to_string(d); }

template <int V, dim_t D, dim_t H, class... Ps>
struct rwkv_arch {
    static_assert(check_composition<Ps...>::ok);
    static_assert(V == 5 || V == 6 || V == 7);
    static_assert(D != 0 && H != 0, "archetype: Rwkv<D, H>: the embedding size D and head size H must be positive");
    static_assert(D == dynamic || H == dynamic || D % H == 0,
                  "archetype: Rwkv<D, H>: D must be a multiple of the head size H (D / H heads)");
    static_assert(count_on_axis<axis::heads, Ps...> == 0 && count_on_axis<axis::position, Ps...> == 0 &&
                      count_on_axis<axis::mask, Ps...> == 0 && count_on_axis<axis::pooling, Ps...> == 0 &&
                      count_on_axis<axis::embd_norm, Ps...> == 0,
                  "archetype: RWKV models have no attention heads, positions, masks or pooling: the head "
                  "count follows from D / H; remove MHA/GQA/RoPE/Causal/... from Rwkv5/Rwkv6/Rwkv7");

    static constexpr int version = V;
    static constexpr dim_t embd = D;
    static constexpr dim_t head_size = H;
    static constexpr dim_t n_head = (D == dynamic || H == dynamic) ? dynamic : D / H;

    using default_mixer = std::conditional_t<V == 5, Rwkv5TimeMix, std::conditional_t<V == 6, Rwkv6TimeMix, Rwkv7TimeMix>>;
    using default_ffn = std::conditional_t<V == 7, Rwkv7ChannelMix, RwkvChannelMix>;
    using mixer = policy_on_axis_t<axis::mixer, default_mixer, Ps...>;
    using ffn = policy_on_axis_t<axis::ffn, default_ffn, Ps...>;
    using norm = policy_on_axis_t<axis::norm, LayerNorm, Ps...>;
    using cache = policy_on_axis_t<axis::cache, RecurrentState, Ps...>;
    using storage = policy_on_axis_t<axis::storage, WeightsFromFile, Ps...>;

    static_assert(rwkv_time_mix<mixer>,
                  "archetype: an RWKV model's mixer must be Rwkv5TimeMix, Rwkv6TimeMix or Rwkv7TimeMix");
    static_assert(!rwkv_time_mix<mixer> || mixer::rwkv_version == V,
                  "archetype: the time mix does not match the model version: Rwkv5 takes Rwkv5TimeMix, "
                  "Rwkv6 takes Rwkv6TimeMix, Rwkv7 takes Rwkv7TimeMix");
    static_assert(rwkv_channel_mix<ffn>,
                  "archetype: an RWKV model's feed-forward must be RwkvChannelMix (Rwkv7ChannelMix for Rwkv7)");
    static_assert(!rwkv_channel_mix<ffn> || ffn::receptance == (V != 7),
                  "archetype: RWKV-7's channel mix has no receptance (Rwkv7ChannelMix); v5.2 and v6 have one "
                  "(RwkvChannelMix)");
    static_assert(std::is_same_v<norm, LayerNorm>, "archetype: RWKV blocks use LayerNorm (ln_x is a GroupNorm)");
    static_assert(recurrent_cache<cache>,
                  "archetype: RWKV keeps a recurrent state, not a KV cache: use RecurrentState (or no cache policy)");

    /// What runs it: the decoder core with the time mix as the mixer, the channel mix as the
    /// feed-forward (each with its memory per sequence), RWKV's block, LayerNorm after the
    /// embedding (ln0) and a head summed in blocks as every RWKV projection is (a prompt as
    /// exact as decoding). No position, no KV cell: FullCache only counts positions here.
    using core = Decoder<NoPE, Causal, FullCache, norm, NormedEmbedding<norm>, mixer, ffn, RwkvBlock, BlockSummedLogits,
                         storage>;

    /// Floats of recurrent state per layer and sequence: 2 shift vectors + H x N x N = (2 + N) * D.
    static constexpr dim_t state_floats_per_layer = (D == dynamic || H == dynamic) ? dynamic : (2 + H) * D;

    static std::string type_name() {
        return "Rwkv" + std::to_string(V) + "<" + rwkv_dim_str(D) + ", " + rwkv_dim_str(H) + ">";
    }
    static std::string describe() {
        std::string s = type_name() + (V == 5 ? "  (RWKV-5.2 Eagle)\n" : V == 6 ? "  (RWKV-6 Finch)\n" : "  (RWKV-7 Goose)\n");
        s += describe_line("embd", rwkv_dim_str(D));
        s += describe_line("head size", rwkv_dim_str(H) +
                                            (n_head == dynamic ? std::string() : " (" + std::to_string(n_head) + " heads)"));
        s += describe_line("mixer", mixer::describe());
        s += describe_line("ffn", ffn::describe());
        s += describe_line("norm", norm::describe() + " (ln0, ln1, ln2, ln_out); GroupNorm ln_x per head, eps a load option (default 64e-5)");
        std::string st = cache::describe() + ": 2 token-shift vectors + H x N x N wkv per layer";
        if constexpr (state_floats_per_layer != dynamic)
            st += " = " + std::to_string(state_floats_per_layer * 4) + " bytes per layer per sequence";
        s += describe_line("cache", st + ", constant in the sequence length");
        s += describe_line("storage", storage::describe());
        return s;
    }
};

} // namespace detail

/// RWKV-6 "Finch": D embedding size, H head size (`dynamic` = from the file).
template <dim_t D, dim_t H, class... Policies>
struct Rwkv6 : detail::rwkv_arch<6, D, H, Policies...> {
    static constexpr std::string_view name = "Rwkv6";
};
/// RWKV-5.2 "Eagle": D embedding size, H head size (`dynamic` = from the file).
template <dim_t D, dim_t H, class... Policies>
struct Rwkv5 : detail::rwkv_arch<5, D, H, Policies...> {
    static constexpr std::string_view name = "Rwkv5";
};
/// RWKV-7 "Goose": D embedding size, H head size (`dynamic` = from the file).
template <dim_t D, dim_t H, class... Policies>
struct Rwkv7 : detail::rwkv_arch<7, D, H, Policies...> {
    static constexpr std::string_view name = "Rwkv7";
};

namespace detail {
template <class T>
struct is_rwkv_arch : std::false_type {};
template <dim_t D, dim_t H, class... Ps>
struct is_rwkv_arch<Rwkv6<D, H, Ps...>> : std::true_type {};
template <dim_t D, dim_t H, class... Ps>
struct is_rwkv_arch<Rwkv5<D, H, Ps...>> : std::true_type {};
template <dim_t D, dim_t H, class... Ps>
struct is_rwkv_arch<Rwkv7<D, H, Ps...>> : std::true_type {};
} // namespace detail

/// True for Rwkv5<...>, Rwkv6<...> and Rwkv7<...>.
template <class T>
concept RwkvArchitecture = detail::is_rwkv_arch<T>::value;

} // namespace archetype
