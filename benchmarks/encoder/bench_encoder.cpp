// Encoder throughput at all-MiniLM-L6-v2 shapes (384 dim, 6 layers, 12 heads,
// FFN 1536, vocab 30522, 512 positions) with random weights written as a `bert`
// GGUF (F32 and F16 matrices): 32 sequences x 128 tokens in one packed batch,
// 2 threads; prints sequences/s. Random weights cost the same as trained ones.
//
// Optional peer: when LLAMA_EMBEDDING names llama.cpp's `llama-embedding`, it is
// run on the same file for a ratio (its prompt is text, so it is given 32 lines
// of the same number of tokens: each line is "a" * 126, which the no_vocab file
// cannot tokenise; hence only the path is reported when it fails).
#include <chrono>
#include <ctime>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <unistd.h>
#include <vector>

#include "archetype/core/half.hpp"
#include "archetype/io/gguf_writer.hpp"
#include "archetype/models/encoder.hpp"
#include "archetype/models/encoder_model.hpp"
#include "archetype/runtime/encoder_session.hpp"

using namespace archetype;

namespace {
constexpr std::size_t E = 384, L = 6, H = 12, FF = 1536, V = 30522, P = 512;

void write_model(const std::string& path, ggml_type wt) {
    gguf::writer w;
    w.set("general.architecture", "bert");
    w.set("general.name", "minilm-shape-random");
    w.set("bert.context_length", std::uint32_t(P));
    w.set("bert.embedding_length", std::uint32_t(E));
    w.set("bert.block_count", std::uint32_t(L));
    w.set("bert.feed_forward_length", std::uint32_t(FF));
    w.set("bert.attention.head_count", std::uint32_t(H));
    w.set("bert.attention.layer_norm_epsilon", 1e-12f);
    w.set("bert.attention.causal", false);
    w.set("bert.pooling_type", std::uint32_t(1));
    w.set("bert.vocab_size", std::uint32_t(V));
    w.set("tokenizer.ggml.model", "no_vocab");
    w.set("tokenizer.ggml.token_type_count", std::uint32_t(2));
    std::uint32_t seed = 1;
    auto rnd = [&](ggml_type t, std::uint64_t cols, std::uint64_t rows, float scale, float offset) {
        return [t, n = cols * rows, scale, offset, s = seed++](std::byte* dst, std::size_t) {
            std::mt19937 g(s);
            std::normal_distribution<float> d(0.f, 1.f);
            for (std::uint64_t i = 0; i < n; ++i) {
                const float v = offset + scale * d(g);
                if (t == ggml_type::F32) reinterpret_cast<float*>(dst)[i] = v;
                else reinterpret_cast<std::uint16_t*>(dst)[i] = fp32_to_fp16(v);
            }
        };
    };
    auto mat = [&](const std::string& name, std::uint64_t cols, std::uint64_t rows) {
        w.add_tensor(name, wt, {cols, rows}, rnd(wt, cols, rows, 0.05f, 0.f));
    };
    auto vec = [&](const std::string& name, std::uint64_t n, float offset) {
        w.add_tensor(name, ggml_type::F32, {n}, rnd(ggml_type::F32, n, 1, 0.05f, offset));
    };
    mat("token_embd.weight", E, V);
    mat("token_types.weight", E, 2);
    mat("position_embd.weight", E, P);
    vec("token_embd_norm.weight", E, 1.f);
    vec("token_embd_norm.bias", E, 0.f);
    for (std::size_t il = 0; il < L; ++il) {
        const std::string p = "blk." + std::to_string(il) + ".";
        for (const char* n : {"attn_q", "attn_k", "attn_v", "attn_output"}) {
            mat(p + n + ".weight", E, E);
            vec(p + n + ".bias", E, 0.f);
        }
        vec(p + "attn_output_norm.weight", E, 1.f);
        vec(p + "attn_output_norm.bias", E, 0.f);
        mat(p + "ffn_up.weight", E, FF);
        vec(p + "ffn_up.bias", FF, 0.f);
        mat(p + "ffn_down.weight", FF, E);
        vec(p + "ffn_down.bias", E, 0.f);
        vec(p + "layer_output_norm.weight", E, 1.f);
        vec(p + "layer_output_norm.bias", E, 0.f);
    }
    w.write(path);
}

using MiniLM = Encoder<MHA<12>, LearnedPositions<512>, LayerNorm, GeluMLP, MeanPooling, L2Normalize>;

struct result {
    double wall_sps, cpu_sps; // sequences per wall second; per CPU second x threads
};

result bench(const std::string& path, std::size_t n_seq, std::size_t n_tok, std::size_t threads) {
    auto model = load_model<MiniLM>(path);
    auto enc = encoder_session(model, {.n_threads = threads});
    std::vector<std::vector<std::int32_t>> ids(n_seq, std::vector<std::int32_t>(n_tok));
    std::mt19937 g(7);
    for (auto& s : ids)
        for (auto& t : s) t = std::int32_t(g() % V);
    std::vector<token_span> seqs(ids.begin(), ids.end());
    std::vector<float> out(enc.output_size(seqs));
    enc.embed(seqs, out); // warm-up: page in the weights, size the buffers
    using clock = std::chrono::steady_clock;
    const auto t0 = clock::now();
    const std::clock_t c0 = std::clock(); // process CPU time: robust to a busy shared machine
    int runs = 0;
    double secs = 0;
    do {
        enc.embed(seqs, out);
        ++runs;
        secs = std::chrono::duration<double>(clock::now() - t0).count();
    } while (secs < 3.0 && runs < 20);
    const double cpu = double(std::clock() - c0) / CLOCKS_PER_SEC;
    return {double(n_seq) * runs / secs, double(n_seq) * runs / (cpu / double(threads))};
}
} // namespace

int main() {
    const std::size_t n_seq = 32, n_tok = 128, threads = 2;
    std::printf("encoder: all-MiniLM-L6-v2 shapes, random weights, %zu sequences x %zu tokens, %zu threads, one packed batch\n",
                n_seq, n_tok, threads);
    for (ggml_type t : {ggml_type::F32, ggml_type::F16}) {
        const std::string path = "/tmp/archetype_bench_minilm_" + std::to_string(::getpid()) + "_" +
                                 std::string(type_name(t)) + ".gguf";
        write_model(path, t);
        const result r = bench(path, n_seq, n_tok, threads);
        std::printf("  %-4s weights: %8.2f sequences/s (wall)   %8.2f sequences/s per %zu busy cores (CPU time)\n",
                    std::string(type_name(t)).c_str(), r.wall_sps, r.cpu_sps, threads);
        if (const char* peer = std::getenv("LLAMA_EMBEDDING"))
            std::printf("  (LLAMA_EMBEDDING=%s: the random model has no vocabulary, so llama-embedding cannot "
                        "tokenise a prompt; compare with a libllama harness fed ids, see docs/encoder.md)\n", peer);
        std::remove(path.c_str());
    }
    return 0;
}
