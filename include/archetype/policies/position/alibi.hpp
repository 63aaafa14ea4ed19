#pragma once
// ALiBi (Press et al.): no rotation; score(q, k) += slope(h) * (p_k - p_q), with
// ggml's slopes (layers::alibi_slopes, max_bias 8). Nothing read from the file.
#include <string>
#include <vector>

#include "archetype/layers/positions.hpp"
#include "archetype/core/policy.hpp"
#include "archetype/policies/impl.hpp"

namespace archetype {

struct ALiBi {
    using axis = archetype::axis::position;
    static constexpr std::string_view name = "ALiBi";
    static constexpr bool rotary = false;
    static std::string describe() { return "ALiBi"; }
};

template <>
struct position_impl<ALiBi> {
    struct weights {};
    struct state {
        std::vector<float> slopes; // per head
    };
    template <class Binder>
    static void bind(Binder&, weights&) {}
    static void init(const weights&, const position_context& c, state& s) { s.slopes = layers::alibi_slopes(c.n_head); }
    /// Additive bias of head h's score between a query at pq and a visible key at pk <= pq.
    static float score_bias(const weights&, const state& s, std::size_t, std::size_t h, std::int64_t pq,
                            std::int64_t pk) noexcept {
        return s.slopes[h] * float(pk - pq);
    }
};

} // namespace archetype
