// Encoder throughput at all-MiniLM-L6-v2 shapes (384 dim, 6 layers, 12 heads,
// FFN 1536, vocab 30522, 512 positions) with random weights written as a `bert`
// GGUF (F32 and F16 matrices): 32 sequences x 128 tokens in one packed batch,
// 2 threads; prints sequences/s. Random weights cost the same as trained ones.
//
// Optional peer: when LLAMA_EMBD_BENCH names the libllama harness `embd_bench`
// (/work/peers/README.txt: it feeds raw ids, the same std::mt19937(7) ids as
// here, and tries 1, 8 and 32 sequences per llama_decode), it is run on the
// same GGUF file and its best rate and the ratio are printed, by wall clock and
// by CPU time (set LD_LIBRARY_PATH / OMP_WAIT_POLICY for it in the environment).
// The F16 file keeps token_types and position_embd in F32, as llama.cpp's
// converter does: its CPU backend cannot add an F16 table to F32 activations.
#include <algorithm>
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
#include "level.hpp"

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
    w.add_tensor("token_types.weight", ggml_type::F32, {E, 2}, rnd(ggml_type::F32, E, 2, 0.05f, 0.f));
    w.add_tensor("position_embd.weight", ggml_type::F32, {E, P}, rnd(ggml_type::F32, E, P, 0.05f, 0.f));
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
/// The peer harness on the same file: its best sequences/s over the batch sizes
/// it tries (wall, CPU); {0, 0} when it fails.
result run_peer(const char* exe, const std::string& path, std::size_t threads) {
    const std::string cmd = std::string(exe) + " -m " + path + " -t " + std::to_string(threads) + " -b 1,8 2>/dev/null";
    result best{0, 0};
    if (FILE* f = ::popen(cmd.c_str(), "r")) {
        char line[512];
        while (std::fgets(line, sizeof line, f)) {
            unsigned b = 0;
            double wall = 0, cpu = 0;
            // "  per_decode   1:     35.30 seq/s wall,     36.10 seq/s per cpu-second x threads ..."
            if (std::sscanf(line, " per_decode %u: %lf seq/s wall, %lf", &b, &wall, &cpu) == 3) {
                std::printf("    llama.cpp %u sequence(s) per decode: %8.2f sequences/s (wall) %8.2f (CPU time)\n", b,
                            wall, cpu);
                best.wall_sps = std::max(best.wall_sps, wall);
                best.cpu_sps = std::max(best.cpu_sps, cpu);
            }
        }
        ::pclose(f);
    }
    return best;
}
} // namespace

int main() {
    archetype::bench_util::announce_level();
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
        if (const char* peer = std::getenv("LLAMA_EMBD_BENCH")) {
            const result p = run_peer(peer, path, threads);
            if (p.wall_sps > 0)
                std::printf("  %-4s llama.cpp best: %8.2f sequences/s (wall)   %8.2f (CPU time);  ratio %.2fx wall, "
                            "%.2fx CPU time\n",
                            std::string(type_name(t)).c_str(), p.wall_sps, p.cpu_sps, r.wall_sps / p.wall_sps,
                            r.cpu_sps / p.cpu_sps);
            else
                std::printf("  (LLAMA_EMBD_BENCH=%s did not report a rate on %s)\n", peer, path.c_str());
        }
        std::remove(path.c_str());
    }
    return 0;
}
