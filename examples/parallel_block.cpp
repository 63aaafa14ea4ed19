// parallel_block: a parallel-residual architecture composed in application code — no
// library header edited. Each layer runs attention and the feed-forward on the same
// normed input and adds both to the residual stream, x + attn(n(x)) + ffn(n(x)) (the
// block of GPT-J, Phi-2 and Command-R), here on a Llama-shaped model:
//
//   using ParallelLlama = Decoder<GQA<4, 2>, RoPENeox, ParallelResidual>;
//
// A tiny GGUF of that architecture (one norm per layer: no ffn_norm) is written here,
// loaded through the registry, and checked against a plain scalar forward pass.
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

// ---- the architecture: library policies only -------------------------------------
using ParallelLlama = archetype::Decoder<archetype::GQA<4, 2>, archetype::RoPENeox, archetype::ParallelResidual>;
struct parallel_llama_architecture {
    static constexpr std::string_view gguf_name = "parallel-llama";
    using model = ParallelLlama;
};
using my_architectures = archetype::extend_t<archetype::default_architectures, parallel_llama_architecture>;

int main() {
    using namespace archetype;
    examples::tiny_decoder m;
    m.arch = "parallel-llama";
    m.randomise(2027);
    for (std::size_t il = 0; il < m.n_layer; ++il) { // one shared norm per layer
        m.w.erase("blk." + std::to_string(il) + ".ffn_norm.weight");
        m.ne.erase("blk." + std::to_string(il) + ".ffn_norm.weight");
    }
    const auto path = (std::filesystem::temp_directory_path() / "archetype_parallel_llama.gguf").string();
    m.write(path);

    const std::vector<std::int32_t> tok = {3, 17, 42, 8, 8, 63, 0, 25, 11};
    std::vector<float> logits;
    // the registry, extended with our entry, picks it from the file's general.architecture;
    // the model is then loaded as that entry (instantiating only our structure)
    const bool picked = with_architecture<my_architectures>(
        gguf::file::open(path), []<class A>(std::type_identity<A>) { return std::is_same_v<A, parallel_llama_architecture>; });
    const auto model = load_model<parallel_llama_architecture>(path);
    std::printf("%s", model.describe().c_str());
    auto s = session(model, {.n_threads = 2, .max_sequences = 1, .n_ctx = 64});
    logits.resize(tok.size() * model.n_vocab());
    s.prefill(0, tok, logits.data());
    std::filesystem::remove(path);

    // the scalar reference: x += attn(n(x)) + ffn(n(x)) with one norm
    const examples::scalar_reference ref{m};
    auto x = ref.embed(tok);
    for (std::size_t il = 0; il < m.n_layer; ++il) {
        std::vector<std::vector<double>> h(x.size());
        for (std::size_t t = 0; t < x.size(); ++t) h[t] = ref.rms_norm(x[t], ref.W(il, "attn_norm.weight"));
        const auto a = ref.attention(il, h);
        for (std::size_t t = 0; t < x.size(); ++t) {
            const auto f = ref.ffn(il, h[t]);
            for (std::size_t i = 0; i < m.n_embd; ++i) x[t][i] += a[t][i] + f[i];
        }
    }
    const double worst = examples::scalar_reference::worst_error(logits, ref.logits(x), m.n_vocab);
    std::printf("parallel-llama vs the scalar reference: max |diff| / max(1, max |ref|) = %.3g\n", worst);
    if (!picked || !(worst <= 1e-4)) {
        std::printf("FAIL\n");
        return 1;
    }
    std::printf("OK\n");
    return 0;
}
