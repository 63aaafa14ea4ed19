#pragma once
// WindowedRoPEBase<Base, P>: position P (a RoPE) whose windowed layers rotate with their own
// base: {arch}.rope.freq_base_swa when the file has it (P reads that key, as for any
// architecture), else Base, with no frequency scaling on those layers (Gemma 3: 10000,
// llama.cpp's llama_model_gemma3 default; its global layers keep rope.freq_base, 10^6).
// A per-layer instance of the position axis like NoPEEvery: which layers are windowed is the
// mask's (Interleave), the session rotates them with hparams().rope_swa; nothing else changes.
#include <string>

#include "archetype/core/policy.hpp"
#include "archetype/policies/impl.hpp"
#include "archetype/policies/position/rope.hpp"

namespace archetype {

template <long long Base, class P = RoPE>
struct WindowedRoPEBase : P {
    static_assert(P::rotary, "archetype: WindowedRoPEBase<Base, P> sets the RoPE base of the windowed layers: P must "
                             "be a RoPE");
    static_assert(Base > 0, "archetype: WindowedRoPEBase<Base, P>: the base must be positive");
    static constexpr long long windowed_base = Base;
    static std::string describe() {
        return P::describe() + ", base " + std::to_string(Base) + " on windowed layers (unless rope.freq_base_swa)";
    }
};

/// P's behaviour; the windowed layers' base defaults to Base.
template <long long Base, class P>
struct position_impl<WindowedRoPEBase<Base, P>> : position_impl<P> {
    using typename position_impl<P>::weights;
    template <class Binder>
    static void bind(Binder& b, weights& w) {
        position_impl<P>::bind(b, w); // reads rope.freq_base_swa when the file has it
        if (b.file().has(b.prefix() + "rope.freq_base_swa")) return;
        auto& hp = b.hparams();
        hp.rope_swa.freq_base = float(Base);
        hp.rope_swa.freq_scale = 1.f;
    }
};

} // namespace archetype
