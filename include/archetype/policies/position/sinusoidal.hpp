#pragma once
// Fixed sinusoidal absolute positions added to the token embeddings (Vaswani et
// al.): x(p)[2i] += sin(p / 10000^(2i/E)), x(p)[2i+1] += cos(...). Nothing read
// from the file.
#include <string>

#include "archetype/layers/positions.hpp"
#include "archetype/core/policy.hpp"
#include "archetype/policies/impl.hpp"

namespace archetype {

struct Sinusoidal {
    using axis = archetype::axis::position;
    static constexpr std::string_view name = "Sinusoidal";
    static constexpr bool rotary = false;
    static std::string describe() { return "Sinusoidal"; }
};

template <>
struct position_impl<Sinusoidal> {
    struct weights {};
    struct state {};
    template <class Binder>
    static void bind(Binder&, weights&) {}
    static void init(const weights&, const position_context&, state&) {}
    static void embed_add(const weights&, state&, std::int64_t pos, float* x, std::size_t E) {
        layers::add_sinusoidal(pos, x, E);
    }
};

} // namespace archetype
