#pragma once
// ALiBi (Press et al.): no rotation; score(q, k) += slope(h) * (p_k - p_q), with
// ggml's slopes (layers::alibi_slopes); the maximum bias from {arch}.attention.max_alibi_bias
// (MPT's converter writes it), 8 when absent (llama.cpp's default for BLOOM).
#include <cmath>
#include <string>
#include <vector>

#include "archetype/layers/positions.hpp"
#include "archetype/core/error.hpp"
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
    struct weights {
        float max_bias = 8.f;
    };
    struct state {
        std::vector<float> slopes; // per head
    };
    template <class Binder>
    static void bind(Binder& b, weights& w) {
        const std::string key = b.prefix() + "attention.max_alibi_bias";
        if (!b.file().has(key)) return;
        w.max_bias = b.file().template get<float>(key);
        if (!std::isfinite(w.max_bias) || !(w.max_bias > 0.f))
            throw format_error(key + " = " + std::to_string(w.max_bias) + " must be a finite positive number");
    }
    static void init(const weights& w, const position_context& c, state& s) {
        s.slopes = layers::alibi_slopes(c.n_head, w.max_bias);
    }
    /// Additive bias of head h's score between a query at pq and a visible key at pk <= pq.
    static float score_bias(const weights&, const state& s, std::size_t, std::size_t h, std::int64_t pq,
                            std::int64_t pk) noexcept {
        return s.slopes[h] * float(pk - pq);
    }
};

} // namespace archetype
