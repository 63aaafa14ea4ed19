// rwkv_state: an RWKV-6 sequence's whole past is one fixed-size recurrent state,
// so a session can fork it (copy_sequence), save it to bytes (save_state) and
// put it back later (restore_state) -- for caching a long system prompt, or for
// trying several continuations of one prefix.
//
//   sequence 0: prompt, then K tokens                     (uninterrupted)
//   sequence 2: fork of 0 after the prompt, then K tokens
//   sequence 1: fork of 0, disturbed by other tokens, restored from the bytes
//               saved after the prompt, then K tokens
//
// Checks that the K x n_vocab logits of sequences 1 and 2 equal those of
// sequence 0 bit for bit (memcmp).
//
//   ./build/examples/rwkv_state               (writes a tiny random rwkv6 GGUF to a temp file)
//   ./build/examples/rwkv_state model.gguf    (your RWKV-6 file: a llama.cpp rwkv6 GGUF or an rwkv.cpp .bin)
//
// The random model is the RWKV tests' writer (tests/rwkv/random_model.hpp),
// which writes the GGUF with the library's GGUF writer.
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "archetype/runtime/rwkv_api.hpp"
#include "random_model.hpp"

using Finch = archetype::Rwkv6<archetype::dynamic, archetype::dynamic>; // width and head size from the file

namespace {
bool run(const std::string& path) {
    const auto model = archetype::load_model<Finch>(path);
    auto sess = archetype::session(model, {.n_threads = 2, .max_sequences = 3});
    const auto V = std::int32_t(sess.n_vocab());
    auto tokens = [&](std::vector<std::int32_t> t) {
        for (auto& x : t) x %= V;
        return t;
    };
    const auto prompt = tokens({1, 2, 3, 4, 5, 6, 7, 8}), next = tokens({9, 10, 11, 12, 13, 14}),
               noise = tokens({40, 41, 42, 43});
    // K tokens fed one by one to sequence s: their logits, K x n_vocab
    auto continue_with = [&](int s) {
        std::vector<float> logits(next.size() * V);
        for (std::size_t i = 0; i < next.size(); ++i) sess.decode(s, next[i], logits.data() + i * V);
        return logits;
    };

    sess.prefill(0, prompt); // no logits wanted
    const std::vector<std::byte> saved = sess.save_state(0);
    sess.copy_sequence(0, 1);
    sess.copy_sequence(0, 2);

    const auto uninterrupted = continue_with(0);
    const auto forked = continue_with(2);
    sess.prefill(1, noise);         // sequence 1 drifts away...
    sess.restore_state(1, saved);   // ...and comes back to the end of the prompt
    const auto restored = continue_with(1);

    const std::size_t bytes = uninterrupted.size() * sizeof(float);
    const bool fork_ok = std::memcmp(forked.data(), uninterrupted.data(), bytes) == 0;
    const bool restore_ok = std::memcmp(restored.data(), uninterrupted.data(), bytes) == 0;
    std::printf("%s: %zu layers, width %zu, %d-token vocabulary\n", path.c_str(), sess.hparams().n_layer,
                sess.hparams().n_embd, V);
    std::printf("  state per sequence: %zu bytes (saved buffer: %zu bytes), whatever the length\n", sess.state_bytes(),
                saved.size());
    std::printf("  prompt %zu tokens, then %zu tokens: %zu logits per sequence\n", prompt.size(), next.size(),
                uninterrupted.size());
    std::printf("  fork (copy_sequence 0 -> 2):            %s\n", fork_ok ? "bit-identical" : "DIFFERENT");
    std::printf("  disturbed, then restore_state (seq 1):  %s\n", restore_ok ? "bit-identical" : "DIFFERENT");
    return fork_ok && restore_ok;
}
} // namespace

int main(int argc, char** argv) {
    namespace fs = std::filesystem;
    const bool own_model = argc < 2;
    const std::string path = own_model ? (fs::temp_directory_path() / "archetype_rwkv_state.gguf").string() : argv[1];
    if (own_model) rwkv_test::make_gguf({.version = 6, .C = 64, .N = 16, .L = 2, .V = 96, .seed = 3}).write(path);
    bool ok = false;
    try {
        ok = run(path);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "error: %s\n", e.what());
    }
    if (own_model) fs::remove(path);
    std::printf(ok ? "OK\n" : "FAIL\n");
    return ok ? 0 : 1;
}
