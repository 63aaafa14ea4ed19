#pragma once
// QueryTemperature<P>: position P (a RoPE), then each query row scaled by the Llama-4
// attention temperature of its position (Ministral 3; llama.cpp's llm_graph_input_attn_temp):
//
//   q(p) *= 1 + beta * ln(1 + floor(p / L))
//
// beta = {arch}.attention.temperature_scale, L = {arch}.rope.scaling.original_context_length
// (llama.cpp's n_attn_temp_floor_scale for mistral3). Positions below L keep q unchanged.
// The policy reads its own keys (the key ledger counts them); the session calls its
// query_scale hook on the rotated queries before they attend.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>

#include "archetype/core/error.hpp"
#include "archetype/core/policy.hpp"
#include "archetype/policies/impl.hpp"
#include "archetype/policies/position/rope.hpp"

namespace archetype {

template <class P = RoPE>
struct QueryTemperature : P {
    static_assert(P::rotary, "archetype: QueryTemperature<P> scales the rotated queries: P must be a RoPE");
    static std::string describe() { return P::describe() + ", queries times 1 + beta ln(1 + floor(p / L))"; }
};

template <class P>
struct position_impl<QueryTemperature<P>> : position_impl<P> {
    struct weights : position_impl<P>::weights {
        float beta = 0.f;
        std::size_t floor_scale = 0;
    };
    template <class Binder>
    static void bind(Binder& b, weights& w) {
        position_impl<P>::bind(b, static_cast<typename position_impl<P>::weights&>(w));
        const std::string key = b.prefix() + "attention.temperature_scale";
        w.beta = b.file().template get<float>(key);
        if (!std::isfinite(w.beta)) throw format_error("metadata key '" + key + "' is not finite");
        const std::string lk = b.prefix() + "rope.scaling.original_context_length";
        w.floor_scale = b.file().template get<std::uint64_t>(lk);
        if (w.floor_scale == 0)
            throw format_error("metadata key '" + lk + "' = 0: the attention temperature needs its floor scale");
    }
    /// The factor of the query row at position p.
    static float query_scale(const weights& w, std::int64_t p) noexcept {
        return float(std::log(std::floor(double(p) / double(w.floor_scale)) + 1.0) * w.beta + 1.0);
    }
};

} // namespace archetype
