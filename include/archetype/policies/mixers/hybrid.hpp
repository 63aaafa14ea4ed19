#pragma once
// HybridMixer<Attention, Recurrent>: per-layer mixers from the file, as llama.cpp reads
// hybrids (lfm2, jamba, granitehybrid): layer il runs `Recurrent` where
// {arch}.attention.head_count_kv[il] == 0, `Attention` elsewhere. Each layer keeps the
// memory its own mixer declares — KV cells under the model's cache policy on the
// attention layers, the recurrent mixer's state on the others — and the session's
// memory is their composition (llama_memory_hybrid's idea, without its downcast: the
// layer's mixer type says which memory it has).
#include <cstddef>
#include <string>

#include "archetype/core/error.hpp"
#include "archetype/core/policy.hpp"
#include "archetype/policies/impl.hpp"
#include "archetype/policies/mixer.hpp"

namespace archetype {

template <class Attention, class Recurrent>
struct HybridMixer {
    static_assert(Attention::attention && !Recurrent::attention,
                  "archetype: HybridMixer<Attention, Recurrent> takes an attention mixer first and a recurrent one "
                  "(ShortConv, ...) second");
    using axis = archetype::axis::mixer;
    static constexpr std::string_view name = "HybridMixer";
    static constexpr bool attention = true; // some layers attend: the model has a KV cache
    static std::string describe() {
        return Attention::describe() + " | " + Recurrent::describe() + " where head_count_kv[il] == 0";
    }
};


template <class A, class R>
struct mixer_impl<HybridMixer<A, R>> {
    struct weights {
        bool recurrent = false; // this layer's mixer is R
        typename mixer_impl<A>::weights a{};
        typename mixer_impl<R>::weights r{};
    };
    template <class Binder>
    static void bind(Binder& b, const std::string& blk, weights& w) {
        w.recurrent = !detail::layer_attends(b);
        if (w.recurrent) mixer_impl<R>::bind(b, blk, w.r);
        else mixer_impl<A>::bind(b, blk, w.a);
    }
    static bool keeps_kv(const weights& w) { return !w.recurrent && detail::mixer_keeps_kv<A>(w.a); }
    static std::size_t state_floats(const weights& w) {
        return w.recurrent ? detail::mixer_state_floats<R>(w.r) : detail::mixer_state_floats<A>(w.a);
    }
    static std::size_t scratch_floats(const weights& w, std::size_t rows) {
        return w.recurrent ? detail::mixer_scratch_floats<R>(w.r, rows) : detail::mixer_scratch_floats<A>(w.a, rows);
    }
    static std::size_t side_channel_floats(const weights& w, std::size_t rows) {
        return w.recurrent ? detail::mixer_side_channel_floats<R>(w.r, rows)
                           : detail::mixer_side_channel_floats<A>(w.a, rows);
    }
    template <class Ctx>
    static void forward(Ctx& c, const weights& w, const float* in, float* out) {
        if (w.recurrent) mixer_impl<R>::forward(c, w.r, in, out);
        else mixer_impl<A>::forward(c, w.a, in, out);
    }
};

} // namespace archetype
