#pragma once
// Score-cap axis: what bounds the attention scores before the softmax.
//   NoScoreCap (default)   the scaled scores as they are
//   AttentionSoftCap       s -> c * tanh(s / c) with c = {arch}.attn_logit_softcapping
//                          (Gemma 2; llama.cpp's f_attn_logit_softcapping), applied by the
//                          attention kernel to the scaled scores before bias and mask
//                          (kernels::attention_params::softcap)
// A score_cap_impl<P> has `weights` (what it read), a bind hook that reads its keys
// through the binder, and apply(weights, params) that sets the attention kernel's
// parameters of one call. A file with {arch}.attn_logit_softcapping and a model without
// AttentionSoftCap is refused by the key ledger (io/key_ledger.hpp).
#include <cmath>
#include <string>

#include "archetype/core/error.hpp"
#include "archetype/core/policy.hpp"
#include "archetype/policies/impl.hpp"

namespace archetype {

struct NoScoreCap {
    using axis = archetype::axis::score_cap;
    static constexpr std::string_view name = "NoScoreCap";
    static std::string describe() { return "none"; }
};
template <>
struct score_cap_impl<NoScoreCap> {
    struct weights {};
    template <class Binder>
    static void bind(Binder&, weights&) {}
    template <class Params>
    static void apply(const weights&, Params&) noexcept {}
};

struct AttentionSoftCap {
    using axis = archetype::axis::score_cap;
    static constexpr std::string_view name = "AttentionSoftCap";
    static std::string describe() { return "c tanh(s / c), c = {arch}.attn_logit_softcapping"; }
};
template <>
struct score_cap_impl<AttentionSoftCap> {
    struct weights {
        float cap = 0.f; // 0: the file has no cap
    };
    template <class Binder>
    static void bind(Binder& b, weights& w) {
        const std::string key = b.prefix() + "attn_logit_softcapping";
        if (!b.file().has(key)) return;
        w.cap = b.file().template get<float>(key);
        if (!std::isfinite(w.cap) || w.cap < 0.f)
            throw format_error(key + " = " + std::to_string(w.cap) + " must be a finite non-negative number");
    }
    /// describe()'s line of what the file said (none without a cap).
    static std::string describe(const weights& w) {
        return w.cap != 0.f ? "  softcap:   " + std::to_string(w.cap) + " (attention scores)\n" : std::string();
    }
    template <class Params>
    static void apply(const weights& w, Params& p) noexcept {
        p.softcap = w.cap;
    }
};

} // namespace archetype
