#pragma once
// LogitSoftCap (logits axis): the final logits soft-capped, x -> c * tanh(x / c) with
// c = {arch}.final_logit_softcapping (Gemma 2, Gemma 3; llama.cpp's
// f_final_logit_softcapping). The key is optional (Gemma 3 files usually lack it: the
// logits are then as computed); 0 means no cap; a negative or non-finite value is a
// format_error naming the key. A file with the key and a model without the policy is
// refused by the key ledger (io/key_ledger.hpp).
#include <cmath>
#include <cstddef>
#include <string>

#include "archetype/core/error.hpp"
#include "archetype/core/policy.hpp"
#include "archetype/policies/impl.hpp"

namespace archetype {

struct LogitSoftCap {
    using axis = archetype::axis::logits;
    static constexpr std::string_view name = "LogitSoftCap";
    static std::string describe() { return "c tanh(x / c), c = {arch}.final_logit_softcapping"; }
};
template <>
struct logits_impl<LogitSoftCap> {
    struct weights {
        float cap = 0.f; // 0: the file has no cap
    };
    static constexpr bool identity = false;
    template <class Binder>
    static void bind(Binder& b, weights& w) {
        const std::string key = b.prefix() + "final_logit_softcapping";
        if (!b.file().has(key)) return;
        w.cap = b.file().template get<float>(key);
        if (!std::isfinite(w.cap) || w.cap < 0.f)
            throw format_error(key + " = " + std::to_string(w.cap) + " must be a finite non-negative number");
    }
    /// describe()'s line of what the file said (none without a cap).
    static std::string describe(const weights& w) {
        return w.cap != 0.f ? "  softcap:   " + std::to_string(w.cap) + " (final logits)\n" : std::string();
    }
    static void apply(const weights& w, float* logits, std::size_t n) noexcept {
        if (const float c = w.cap; c != 0.f)
            for (std::size_t i = 0; i < n; ++i) logits[i] = c * std::tanh(logits[i] / c);
    }
};

} // namespace archetype
