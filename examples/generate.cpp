// generate: greedy decoding of any decoder GGUF the library knows (llama, mellum,
// gemma3, qwen2, ...). The registry reads general.architecture and hands the
// matching compiled structure to a generic lambda; the lambda loads the model,
// prefills a prompt of token ids and decodes 16 tokens, taking the argmax of the
// logits at each step. It generates twice in one session (forgetting the
// sequence in between) and checks that both runs give the same 16 tokens.
//
//   ./build/examples/generate               (writes a tiny random llama GGUF to a temp file)
//   ./build/examples/generate model.gguf    (your file; the prompt is token ids 1, 2, 3)
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "archetype/models/architectures.hpp"
#include "archetype/models/decoder_model.hpp"
#include "archetype/runtime/decoder_session.hpp"
#include "tiny_decoder.hpp"

namespace {
constexpr std::size_t n_new = 16;

/// Feeds the prompt to sequence 0, then n_new greedy steps: the tokens chosen.
template <class Session>
std::vector<std::int32_t> greedy(Session& sess, const std::vector<std::int32_t>& prompt) {
    std::vector<float> logits(sess.n_vocab());
    sess.prefill(0, prompt, logits.data(), archetype::logits_rows::last); // logits of the last position only
    std::vector<std::int32_t> out;
    while (true) {
        out.push_back(std::int32_t(std::max_element(logits.begin(), logits.end()) - logits.begin()));
        if (out.size() == n_new) return out;
        sess.decode(0, out.back(), logits.data()); // one token, its logits
    }
}

void print(const char* label, const std::vector<std::int32_t>& t) {
    std::printf("%s", label);
    for (auto id : t) std::printf(" %d", id);
    std::printf("\n");
}

/// Loads the file as registry entry A (A::model is the compiled structure) and
/// generates twice: 0 when both runs agree.
template <class A>
int generate_twice(const std::string& path) {
    const auto model = archetype::load_model<A>(path);
    const auto V = std::int32_t(model.n_vocab());
    const std::vector<std::int32_t> prompt = {1 % V, 2 % V, 3 % V};
    auto sess = archetype::session(model, {.n_threads = 2, .max_sequences = 1, .n_ctx = prompt.size() + n_new});

    const auto first = greedy(sess, prompt);
    sess.remove_sequence(0); // forget the prompt and the 16 tokens: sequence 0 is empty again
    const auto second = greedy(sess, prompt);

    std::printf("%s: architecture '%s', %d-token vocabulary\n", path.c_str(), std::string(A::gguf_name).c_str(), V);
    print("prompt:            ", prompt);
    print("greedy, first run: ", first);
    print("greedy, second run:", second);
    return first == second ? 0 : 1;
}
} // namespace

int main(int argc, char** argv) {
    namespace fs = std::filesystem;
    const bool own_model = argc < 2;
    const std::string path = own_model ? (fs::temp_directory_path() / "archetype_generate.gguf").string() : argv[1];
    if (own_model) {
        examples::tiny_decoder m; // arch "llama", 64-token vocabulary
        m.randomise(7);
        m.write(path);
    }

    // The registry calls this with the entry that matches the file's general.architecture.
    auto run = [&]<class A>(std::type_identity<A>) {
        if constexpr (archetype::DecoderType<typename A::model>) {
            return generate_twice<A>(path);
        } else { // the registry knows encoders and RWKV too
            std::fprintf(stderr, "error: '%s' is not a decoder model\n", std::string(A::gguf_name).c_str());
            return 1;
        }
    };
    int rc = 1;
    try {
        rc = archetype::with_architecture<archetype::default_architectures>(archetype::gguf::file::open(path), run);
    } catch (const std::exception& e) { // e.g. an architecture the registry does not know
        std::fprintf(stderr, "error: %s\n", e.what());
    }
    if (own_model) fs::remove(path);
    if (rc != 0) {
        std::printf("FAIL\n");
        return 1;
    }
    std::printf("OK: both runs chose the same %zu tokens\n", n_new);
    return 0;
}
