#pragma once
// HybridMixer<Attention, Recurrent>: per-layer mixers from the file, as llama.cpp reads
// hybrids (lfm2, jamba, granitehybrid): layer il runs `Recurrent` where
// {arch}.attention.head_count_kv[il] == 0, `Attention` elsewhere. Each layer keeps the
// memory its own mixer declares — KV cells under the model's cache policy on the
// attention layers, the recurrent mixer's state on the others — and the session's
// memory is their composition (llama_memory_hybrid's idea, without its downcast: the
// layer's mixer type says which memory it has).
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "archetype/core/error.hpp"
#include "archetype/core/policy.hpp"
#include "archetype/policies/impl.hpp"
#include "archetype/policies/mixer.hpp"

namespace archetype {

/// Which layers of a hybrid run its recurrent mixer, read from the file as llama.cpp does.
/// Where head_count_kv[il] == 0 (lfm2, jamba, granitehybrid, nemotron_h): the default.
struct recurrent_where_no_kv_heads {
    static std::string describe() { return "where head_count_kv[il] == 0"; }
    template <class Binder>
    static bool recurrent(Binder& b) {
        return !detail::layer_attends(b);
    }
};
/// Between full-attention layers (qwen3next, qwen35): {arch}.attention.recurrent_layers[il]
/// (bools) when the file has it, else (il + 1) % {arch}.full_attention_interval != 0
/// (interval 4 when absent, llama.cpp's default).
struct recurrent_between_full_attention {
    static std::string describe() { return "where (il + 1) % full_attention_interval != 0"; }
    template <class Binder>
    static bool recurrent(Binder& b) {
        const std::size_t il = b.layer_index(), n_layer = b.keys().n_layer;
        const std::string arr = b.prefix() + "attention.recurrent_layers";
        if (b.file().has(arr)) {
            const auto v = b.file().template get<std::vector<bool>>(arr);
            if (v.size() < n_layer)
                throw format_error("metadata key '" + arr + "' has " + std::to_string(v.size()) + " values for " +
                                   std::to_string(n_layer) + " layers");
            return v[il];
        }
        const std::string key = b.prefix() + "full_attention_interval";
        const auto interval = b.file().template get_or<std::uint64_t>(key, 4);
        if (interval == 0 || interval > n_layer)
            throw format_error("metadata key '" + key + "' = " + std::to_string(interval) + " is out of range (1.." +
                               std::to_string(n_layer) + ")");
        return (il + 1) % interval != 0;
    }
};

template <class Attention, class Recurrent, class Rule = recurrent_where_no_kv_heads>
struct HybridMixer {
    static_assert(Attention::attention && !Recurrent::attention,
                  "archetype: HybridMixer<Attention, Recurrent> takes an attention mixer first and a recurrent one "
                  "(ShortConv, ...) second");
    using axis = archetype::axis::mixer;
    static constexpr std::string_view name = "HybridMixer";
    static constexpr bool attention = true; // some layers attend: the model has a KV cache
    static std::string describe() { return Attention::describe() + " | " + Recurrent::describe() + " " + Rule::describe(); }
};


template <class A, class R, class Rule>
struct mixer_impl<HybridMixer<A, R, Rule>> {
    struct weights {
        bool recurrent = false; // this layer's mixer is R
        typename mixer_impl<A>::weights a{};
        typename mixer_impl<R>::weights r{};
    };
    template <class Binder>
    static void bind(Binder& b, const std::string& blk, weights& w) {
        w.recurrent = Rule::recurrent(b);
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
