#pragma once
// rwkv_model<Arch>: a loaded RWKV model (Rwkv5/6/7<...>, models/rwkv.hpp) — the decoder core's
// model of Arch::core and the dimensions it was loaded with, in RWKV's terms. Loaded by
// models/rwkv_load.hpp, run by runtime/rwkv_session.hpp.
#include <cstddef>
#include <cstdio>
#include <string>

#include "archetype/layers/rwkv_weights.hpp"
#include "archetype/models/decoder_model.hpp"
#include "archetype/models/layer_range.hpp"
#include "archetype/models/rwkv.hpp"

namespace archetype {

/// A loaded RWKV model: the decoder core's model of Arch::core (the weights are views of the
/// file, or of the GGUF an rwkv.cpp .bin was converted to in memory: io/rwkv_bin_gguf.hpp)
/// and the RWKV dimensions it was loaded with.
template <class Arch>
    requires RwkvArchitecture<Arch>
struct rwkv_model {
    using arch = Arch;
    using core_model = decoder_model<typename Arch::core>;
    core_model core;     ///< what runs: the core's layers, binder and ledgers
    rwkv_hparams hp;     ///< the loaded dimensions, in RWKV's terms
    std::string source;  ///< "rwkv.cpp .bin v101 FP16", "GGUF rwkv6", ...

    const rwkv_hparams& hparams() const noexcept { return hp; }
    /// The layers loaded (a pipeline stage, models/layer_range.hpp).
    layer_range stage() const noexcept { return core.layers(); }
    bool has_embedding() const noexcept { return core.has_embedding(); }
    bool has_head() const noexcept { return core.has_head(); }
    /// The compiled structure with the loaded dimensions (as decoder_model::describe).
    std::string describe() const;
};

/// The loaded dimensions of a model, after its compiled structure.
template <class Arch>
    requires RwkvArchitecture<Arch>
std::string rwkv_model<Arch>::describe() const {
    const auto& m = *this;
    std::string s = Arch::describe();
    s += "loaded from " + m.source + ":\n";
    s += detail::describe_line("embd", std::to_string(hp.n_embd));
    s += detail::describe_line("heads", std::to_string(hp.n_head) + " x head size " + std::to_string(hp.head_size));
    s += detail::describe_line("layers", std::to_string(hp.n_layer));
    s += detail::describe_line("vocab", std::to_string(hp.n_vocab));
    s += detail::describe_line("ffn", std::to_string(hp.n_ffn));
    if (hp.version == 6)
        s += detail::describe_line("lora", "mix " + std::to_string(hp.n_lora_mix) + " x 5, decay " +
                                               std::to_string(hp.n_lora_decay));
    if (hp.version == 7)
        s += detail::describe_line("lora", "decay " + std::to_string(hp.n_lora_decay) + ", in-context rate " +
                                               std::to_string(hp.n_lora_iclr) + ", value residual " +
                                               std::to_string(hp.n_lora_vres) + ", gate " +
                                               std::to_string(hp.n_lora_gate));
    char eps[64];
    std::snprintf(eps, sizeof eps, "LayerNorm %g, GroupNorm %g", double(hp.ln_eps), double(hp.gn_eps));
    s += detail::describe_line("eps", eps);
    s += detail::describe_line("state", std::to_string(hp.state_floats() * sizeof(float)) +
                                            " bytes per sequence (constant in the sequence length)");
    s += detail::describe_line("runs on", "the decoder core: " + std::string(Arch::core::block::name) + " of " +
                                              std::string(Arch::mixer::name) + " and " + std::string(Arch::ffn::name));
    return s;
}
/// The one describe spelling of the three families (decoder, encoder, RWKV).
template <class Arch>
std::string describe(const rwkv_model<Arch>& m) {
    return m.describe();
}

} // namespace archetype
