#pragma once
// ParallelMixers<A, B>: two mixers on the same normed input, their outputs summed —
// out = A(in) + B(in) — each with its own memory (Falcon-H1 runs attention beside Mamba-2 in
// every layer). The layer's memory is the two composed: A's KV cells or state, then B's
// state after A's; each mixer sees its own state and scratch through a context that
// offsets them, so neither knows it is one of two.
#include <algorithm>
#include <cstddef>
#include <string>

#include "archetype/core/policy.hpp"
#include "archetype/policies/impl.hpp"
#include "archetype/policies/mixer.hpp"

namespace archetype {

template <class A, class B>
struct ParallelMixers {
    static_assert(!(A::attention && B::attention),
                  "archetype: ParallelMixers<A, B> keeps one set of KV cells per layer: at most one of A and B may "
                  "attend");
    using axis = archetype::axis::mixer;
    static constexpr std::string_view name = "ParallelMixers";
    static constexpr bool attention = A::attention || B::attention;
    static std::string describe() { return A::describe() + " + " + B::describe() + " (in parallel)"; }
};

namespace detail {
/// The session's sublayer context with a mixer's state and scratch moved past another's.
template <class Ctx>
struct offset_mixer_context : Ctx {
    std::size_t state_at = 0, scratch_at = 0;
    offset_mixer_context(const Ctx& c, std::size_t state, std::size_t scratch) : Ctx(c), state_at(state), scratch_at(scratch) {}
    float* state(std::size_t seq) noexcept { return Ctx::state(seq) + state_at; }
    float* scratch() noexcept { return Ctx::scratch() + scratch_at; }
};
} // namespace detail

template <class A, class B>
struct mixer_impl<ParallelMixers<A, B>> {
    struct weights {
        typename mixer_impl<A>::weights a{};
        typename mixer_impl<B>::weights b{};
        std::size_t width = 0; // E: B's output rows are kept in the scratch before the sum
    };
    template <class Binder>
    static void bind(Binder& b, const std::string& blk, weights& w) {
        mixer_impl<A>::bind(b, blk, w.a);
        mixer_impl<B>::bind(b, blk, w.b);
        w.width = b.hparams().dims.n_embd;
    }
    static bool keeps_kv(const weights& w) { return detail::mixer_keeps_kv<A>(w.a) || detail::mixer_keeps_kv<B>(w.b); }
    static std::size_t state_floats(const weights& w) {
        return detail::mixer_state_floats<A>(w.a) + detail::mixer_state_floats<B>(w.b);
    }
    /// B's output rows, then room for whichever mixer needs more scratch
    static std::size_t scratch_floats(const weights& w, std::size_t rows) {
        return rows * w.width +
               std::max(detail::mixer_scratch_floats<A>(w.a, rows), detail::mixer_scratch_floats<B>(w.b, rows));
    }
    static std::size_t side_channel_floats(const weights& w, std::size_t rows) {
        return std::max(detail::mixer_side_channel_floats<A>(w.a, rows), detail::mixer_side_channel_floats<B>(w.b, rows));
    }
    template <class Ctx>
    static void forward(Ctx& c, const weights& w, const float* in, float* out) {
        const std::size_t m = c.rows() * w.width;
        detail::offset_mixer_context<Ctx> ca(c, 0, m);
        mixer_impl<A>::forward(ca, w.a, in, out);
        detail::offset_mixer_context<Ctx> cb(c, detail::mixer_state_floats<A>(w.a), m);
        float* y = c.scratch(); // B's rows
        mixer_impl<B>::forward(cb, w.b, in, y);
        for (std::size_t i = 0; i < m; ++i) out[i] += y[i];
    }
};

} // namespace archetype
