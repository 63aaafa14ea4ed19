#pragma once
// NoPEEvery<N, P> and NoPEOnGlobalLayers<P>: per-layer instances of the position axis.
// NoPEEvery<N, P>: position P (a RoPE) on every layer but every N-th, which attends
// without positions (layer il unrotated iff (il + 1) % N == 0): SmolLM3's NoPE layers
// (N = 4; llama.cpp hard-codes the same rule for `smollm3`). A per-layer instance of the
// position axis: the session asks the policy which layers it rotates
// (detail::position_rotates_layer), nothing else changes.
#include <cstddef>
#include <string>

#include "archetype/core/policy.hpp"
#include "archetype/policies/impl.hpp"
#include "archetype/policies/position/rope.hpp"

namespace archetype {

template <std::size_t N, class P = RoPE>
struct NoPEEvery : P {
    static_assert(N >= 2, "archetype: NoPEEvery<N, P> needs N >= 2 (N = 1 would rotate no layer: use NoPE)");
    static_assert(P::rotary, "archetype: NoPEEvery<N, P> leaves every N-th layer of a rotary position unrotated: "
                             "P must be a RoPE");
    static constexpr std::size_t period = N;
    static constexpr bool rotates_layer(std::size_t il) noexcept { return (il + 1) % N != 0; }
    static std::string describe() { return P::describe() + ", none on every " + std::to_string(N) + "th layer (NoPE)"; }
};

/// The behaviour is P's; only which layers rotate differs.
template <std::size_t N, class P>
struct position_impl<NoPEEvery<N, P>> : position_impl<P> {};

/// Which layers NoPEOnGlobalLayers leaves unrotated: the global (unwindowed) ones
/// (Cohere 2: its layers rotate iff they are windowed); or those only when the model has
/// a window at all (EXAONE 4: a model without a window rotates every layer).
enum class nope_rule { global_layers, global_layers_of_a_windowed_model };

/// NoPEOnGlobalLayers<P, Rule>: position P (a RoPE) on the windowed layers of the mask's
/// pattern, none on the global layers, which attend without positions (Cohere 2, EXAONE 4).
template <class P = RoPE, nope_rule Rule = nope_rule::global_layers>
struct NoPEOnGlobalLayers : P {
    static_assert(P::rotary, "archetype: NoPEOnGlobalLayers<P> leaves the global layers of a rotary position "
                             "unrotated: P must be a RoPE");
    static constexpr bool rotates_layer(std::size_t, bool windowed, bool model_has_window) noexcept {
        return windowed || (Rule == nope_rule::global_layers_of_a_windowed_model && !model_has_window);
    }
    static std::string describe() { return P::describe() + ", none on the global layers (NoPE)"; }
};
template <class P, nope_rule R>
struct position_impl<NoPEOnGlobalLayers<P, R>> : position_impl<P> {};

namespace detail {
/// Whether position policy P rotates layer il, windowed or not in a model with or without
/// a window (every layer unless P says otherwise).
template <class P>
constexpr bool position_rotates_layer(std::size_t il, bool windowed = false, bool model_has_window = false) noexcept {
    if constexpr (requires { P::rotates_layer(il, windowed, model_has_window); })
        return P::rotates_layer(il, windowed, model_has_window);
    else if constexpr (requires { P::rotates_layer(il); }) return P::rotates_layer(il);
    else return true;
}
} // namespace detail

} // namespace archetype
