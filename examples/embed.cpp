// embed: sentence embeddings with any registered encoder -- llama.cpp's `bert` GGUF
// (e.g. all-MiniLM-L6-v2) or `modern-bert` (ModernBERT). The registry picks the
// encoder's structure from the file (archetype::encoder_architectures); what an
// embedding is here -- the mean of the last hidden states over the sentence's
// tokens, scaled to unit L2 norm -- is chosen at run time, and every dimension
// comes from the file.
//
// The sentences are tokenised with the file's own vocabulary (WordPiece with
// [CLS] ... [SEP] for BERT); a file without one, or whose vocabulary spells none of
// their characters (the tiny test files), gets fixed token ids instead. The three
// sentences run in one packed batch, the first one twice. Checks: every embedding
// has L2 norm 1; the repeated sentence has cosine 1 with itself; two different
// sentences have a cosine strictly between -1 and 1.
//
//   ./build/examples/embed               (writes a tiny random BERT GGUF to a temp file)
//   ./build/examples/embed model.gguf    (your `bert` or `modern-bert` GGUF)
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "archetype/models/architectures.hpp"
#include "archetype/models/encoder_model.hpp"
#include "archetype/runtime/encoder_session.hpp"
#include "archetype/runtime/tokenizer/load.hpp"
#include "tiny_encoder.hpp"

namespace {
double dot(const float* a, const float* b, std::size_t n) {
    double s = 0;
    for (std::size_t i = 0; i < n; ++i) s += double(a[i]) * b[i];
    return s;
}

template <class Model>
bool run(const Model& model, const std::string& path) {
    const std::vector<std::string> text = {"The cat sat on the mat.", "A dog ran in the park.",
                                           "The cat sat on the mat."};
    std::vector<std::vector<std::int32_t>> ids;
    if (model.file().has("tokenizer.ggml.tokens")) {
        const auto tok = archetype::tokenizer::load_tokenizer(model.file());
        for (const auto& s : text) ids.push_back(tok->encode(s, /*add_special=*/true));
    }
    if (ids.empty() || ids[0].empty() || ids[1].empty() || ids[0] == ids[1]) {
        const auto V = std::int32_t(model.n_vocab());
        ids = {{1 % V, 2 % V, 3 % V, 4 % V}, {5 % V, 6 % V, 7 % V}, {1 % V, 2 % V, 3 % V, 4 % V}};
    }

    auto enc = archetype::encoder_session(model, {.n_threads = 2});
    const std::vector<archetype::token_span> batch(ids.begin(), ids.end());
    // [3 x n_embd], row-major, one row per sentence: mean pooling, L2 normalisation (2)
    std::vector<float> e(enc.output_size(batch, archetype::pooling_type::mean));
    enc.embed(batch, e, archetype::pooling_type::mean, 2);
    const std::size_t E = model.n_embd();
    const float* row[3] = {e.data(), e.data() + E, e.data() + 2 * E};

    bool ok = true;
    std::printf("%s: %zu-dimensional embeddings\n", path.c_str(), E);
    for (int s = 0; s < 3; ++s) {
        const double norm = std::sqrt(dot(row[s], row[s], E));
        std::printf("  \"%s\" -> %zu tokens, L2 norm %.7f\n", text[s].c_str(), ids[s].size(), norm);
        ok = ok && std::abs(norm - 1.0) < 1e-5;
    }
    // the rows have norm 1, so the cosine is their dot product
    const double same = dot(row[0], row[2], E), different = dot(row[0], row[1], E);
    std::printf("  cosine(sentence 1, sentence 3) = %.7f (the same sentence)\n", same);
    std::printf("  cosine(sentence 1, sentence 2) = %.7f\n", different);
    return ok && std::abs(1.0 - same) < 1e-5 && different < 1.0 - 1e-5 && different > -1.0;
}
} // namespace

int main(int argc, char** argv) {
    namespace fs = std::filesystem;
    const bool own_model = argc < 2;
    const std::string path = own_model ? (fs::temp_directory_path() / "archetype_embed.gguf").string() : argv[1];
    if (own_model) examples::tiny_encoder{}.write(path, 11);
    bool ok = false;
    try {
        // the registry maps the file's general.architecture to its encoder entry
        ok = archetype::with_architecture<archetype::encoder_architectures>(
            archetype::gguf::file::open(path),
            [&]<class E>(std::type_identity<E>) { return run(archetype::load_model<E>(path), path); });
    } catch (const std::exception& e) {
        std::fprintf(stderr, "error: %s\n", e.what());
    }
    if (own_model) fs::remove(path);
    std::printf(ok ? "OK\n" : "FAIL\n");
    return ok ? 0 : 1;
}
