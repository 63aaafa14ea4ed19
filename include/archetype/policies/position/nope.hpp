#pragma once
// NoPE: no position information at all (causality alone orders the tokens).
#include <string>

#include "archetype/core/policy.hpp"
#include "archetype/policies/impl.hpp"

namespace archetype {

struct NoPE {
    using axis = archetype::axis::position;
    static constexpr std::string_view name = "NoPE";
    static constexpr bool rotary = false;
    static std::string describe() { return "NoPE"; }
};

template <>
struct position_impl<NoPE> {
    struct weights {};
    struct state {};
    template <class Binder>
    static void bind(Binder&, weights&) {}
    static void init(const weights&, const position_context&, state&) {}
};

} // namespace archetype
