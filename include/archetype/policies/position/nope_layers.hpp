#pragma once
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

namespace detail {
/// Whether position policy P rotates layer il (every layer unless P says otherwise).
template <class P>
constexpr bool position_rotates_layer(std::size_t il) noexcept {
    if constexpr (requires { P::rotates_layer(il); }) return P::rotates_layer(il);
    else return true;
}
} // namespace detail

} // namespace archetype
