// layer_gate: a per-layer scalar gate read from the model file — a quirk of a new
// architecture written as a block policy in application code, no library header edited.
// The file carries one number per layer, {arch}.layer_residual_scale = [g0, g1, ...],
// and layer il adds g_il times each sublayer's output: x += g * attn(n(x)); x += g * ffn(n(x)).
//
// The policy reads its own key in its bind hook (so the key ledger counts it as read; a
// plain Decoder refuses the same file by naming the key), keeps the gate beside the
// layer's norms, and reuses the library's sequential block for the norms themselves.
#include <cstdio>
#include <filesystem>
#include <string>
#include <type_traits>
#include <vector>

#include "archetype/models/architectures.hpp"
#include "archetype/models/decoder_model.hpp"
#include "archetype/runtime/decoder_session.hpp"
#include "scalar_reference.hpp"
#include "tiny_decoder.hpp"

// ---- the policy: a tag on the block axis and its behaviour --------------------------
struct GatedBlock {
    using axis = archetype::axis::block;
    static constexpr std::string_view name = "GatedBlock";
    static std::string describe() { return "sequential, each sublayer times {arch}.layer_residual_scale[il]"; }
};
template <>
struct archetype::block_impl<GatedBlock> {
    using base = block_impl<SequentialBlock>;
    struct weights : block_norms {
        float gate = 1.f;
    };
    template <class D>
    static constexpr std::size_t norms_per_layer() { return base::norms_per_layer<D>(); }
    template <class D, class Binder>
    static void bind(Binder& b, std::size_t il, const std::string& blk, weights& w, float eps) {
        base::bind<D>(b, il, blk, w, eps);
        const std::string key = b.prefix() + "layer_residual_scale";
        const auto g = b.file().template get<std::vector<float>>(key);
        if (g.size() != b.hparams().dims.n_layer)
            throw shape_error(key + " has " + std::to_string(g.size()) + " values, one per layer expected");
        w.gate = g[il];
    }
    template <class D, class S>
    static void forward(S& s, const weights& w) {
        const std::size_t m = s.rows() * s.width();
        float* t = s.out();
        s.norm(w.attn_norm, s.stream(), s.normed());
        s.mix(s.normed(), t);
        for (std::size_t i = 0; i < m; ++i) t[i] *= w.gate;
        s.add(s.stream(), t);
        s.norm(w.ffn_norm, s.stream(), s.normed());
        s.ffn(s.normed(), t);
        for (std::size_t i = 0; i < m; ++i) t[i] *= w.gate;
        s.add(s.stream(), t);
    }
};

// ---- the architecture ------------------------------------------------------------
using GatedLlama = archetype::Decoder<archetype::GQA<4, 2>, archetype::RoPENeox, GatedBlock>;
struct gated_llama_architecture {
    static constexpr std::string_view gguf_name = "gated-llama";
    using model = GatedLlama;
};
using my_architectures = archetype::extend_t<archetype::default_architectures, gated_llama_architecture>;

int main() {
    using namespace archetype;
    examples::tiny_decoder m;
    m.arch = "gated-llama";
    m.randomise(2028);
    const std::vector<float> gates = {0.5f, 1.75f};
    m.extra_f32_array["layer_residual_scale"] = gates;
    const auto path = (std::filesystem::temp_directory_path() / "archetype_gated_llama.gguf").string();
    m.write(path);

    const std::vector<std::int32_t> tok = {3, 17, 42, 8, 8, 63, 0, 25, 11};
    std::vector<float> logits;
    // the registry, extended with our entry, picks it from the file's general.architecture;
    // the model is then loaded as that entry (instantiating only our structure)
    const bool picked = with_architecture<my_architectures>(
        gguf::file::open(path), []<class A>(std::type_identity<A>) { return std::is_same_v<A, gated_llama_architecture>; });
    const auto model = load_model<gated_llama_architecture>(path);
    std::printf("%s", model.describe().c_str());
    auto s = session(model, {.n_threads = 2, .max_sequences = 1, .n_ctx = 64});
    logits.resize(tok.size() * model.n_vocab());
    s.prefill(0, tok, logits.data());
    // a plain Decoder does not read the gate: the key ledger refuses the file by name
    bool refused = false;
    try {
        (void)load_model<Decoder<GQA<4, 2>, RoPENeox>>(path);
    } catch (const shape_error& e) {
        refused = std::string(e.what()).find("gated-llama.layer_residual_scale") != std::string::npos;
        std::printf("a plain Decoder: %s\n", e.what());
    }
    std::filesystem::remove(path);

    const examples::scalar_reference ref{m};
    auto x = ref.embed(tok);
    for (std::size_t il = 0; il < m.n_layer; ++il) {
        std::vector<std::vector<double>> h(x.size());
        for (std::size_t t = 0; t < x.size(); ++t) h[t] = ref.rms_norm(x[t], ref.W(il, "attn_norm.weight"));
        const auto a = ref.attention(il, h);
        for (std::size_t t = 0; t < x.size(); ++t) {
            for (std::size_t i = 0; i < m.n_embd; ++i) x[t][i] += gates[il] * a[t][i];
            const auto f = ref.ffn(il, ref.rms_norm(x[t], ref.W(il, "ffn_norm.weight")));
            for (std::size_t i = 0; i < m.n_embd; ++i) x[t][i] += gates[il] * f[i];
        }
    }
    const double worst = examples::scalar_reference::worst_error(logits, ref.logits(x), m.n_vocab);
    std::printf("gated-llama vs the scalar reference: max |diff| / max(1, max |ref|) = %.3g\n", worst);
    if (!picked || !(worst <= 1e-4) || !refused) {
        std::printf("FAIL\n");
        return 1;
    }
    std::printf("OK\n");
    return 0;
}
