// Mamba-2 at the 130M shape (d_model 768, 24 layers, inner 1536 = 24 heads of 64, state 128,
// 1 group, conv 4, vocab 50288, tied), random weights initialised as the model is (A =
// −exp(U(log 1, log 16)) < 0; dt bias so that softplus(dt) ∈ [1e-3, 0.1]; projections
// N(0, 0.02²)), written by the library's GGUF writer in F32 and quantised to Q8_0 and Q4_0
// (gguf::quantize_file, llama.cpp's rules: the conv, A, D, norms stay F32). For each file:
// prefill 512 tokens and decode 128 with 2 threads, and with LLAMA_BENCH set (path of
// llama-bench) llama.cpp's pp512 / tg128 on the same file (-t 2), in alternating rounds,
// medians; the decode bound (weight bytes + 2 × state bytes per token) / read bandwidth.
// Files under $TMPDIR/archetype_bench_decoder (ARCHETYPE_BENCH_DIR), written once.
// Usage: bench_ssm [--quick]
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "archetype/models/presets/mamba2.hpp"
#include "decoder_bench.hpp"
#include "level.hpp"

using namespace archetype;
using namespace decoder_bench;

namespace {
constexpr std::size_t E = 768, L = 24, DI = 1536, H = 24, N = 128, G = 1, K = 4, V = 50288;

void write_mamba2(const std::string& path) {
    std::mt19937 rng(130);
    std::normal_distribution<float> nd(0.f, 1.f);
    std::uniform_real_distribution<float> ud(0.f, 1.f);
    gguf::writer w;
    const std::string a = "mamba2.";
    w.set("general.architecture", std::string("mamba2"));
    w.set("general.name", std::string("bench-mamba2-130m"));
    w.set(a + "context_length", std::uint32_t(1) << 20);
    w.set(a + "embedding_length", std::uint32_t(E));
    w.set(a + "feed_forward_length", std::uint32_t(0));
    w.set(a + "attention.head_count", std::uint32_t(0));
    w.set(a + "block_count", std::uint32_t(L));
    w.set(a + "ssm.conv_kernel", std::uint32_t(K));
    w.set(a + "ssm.inner_size", std::uint32_t(DI));
    w.set(a + "ssm.state_size", std::uint32_t(N));
    w.set(a + "ssm.time_step_rank", std::uint32_t(H));
    w.set(a + "ssm.group_count", std::uint32_t(G));
    w.set(a + "attention.layer_norm_rms_epsilon", 1e-5f);
    w.set(a + "vocab_size", std::uint32_t(V)); // llama.cpp sizes the head from it without a vocabulary
    w.set("tokenizer.ggml.model", std::string("no_vocab"));
    std::vector<std::vector<float>> keep; // the writer holds views until write()
    auto add = [&](const std::string& name, std::vector<std::uint64_t> ne, auto&& value) {
        std::size_t n = 1;
        for (auto d : ne) n *= d;
        auto& v = keep.emplace_back(n);
        for (std::size_t i = 0; i < n; ++i) v[i] = value(i);
        w.add_tensor(name, ggml_type::F32, std::move(ne), v);
    };
    const std::size_t cd = DI + 2 * G * N, in_w = 2 * DI + 2 * G * N + H;
    add("token_embd.weight", {E, V}, [&](std::size_t) { return 0.02f * nd(rng); });
    add("output_norm.weight", {E}, [](std::size_t) { return 1.f; });
    for (std::size_t l = 0; l < L; ++l) {
        const std::string b = "blk." + std::to_string(l) + ".";
        add(b + "attn_norm.weight", {E}, [](std::size_t) { return 1.f; });
        add(b + "ssm_in.weight", {E, in_w}, [&](std::size_t) { return 0.02f * nd(rng); });
        add(b + "ssm_conv1d.weight", {K, cd}, [&](std::size_t) { return (ud(rng) - 0.5f); });
        add(b + "ssm_conv1d.bias", {cd}, [&](std::size_t) { return 0.1f * (ud(rng) - 0.5f); });
        add(b + "ssm_dt.bias", {H}, [&](std::size_t) {
            // dt = exp(U(log 1e-3, log 0.1)); bias = inverse softplus of dt
            const double dt = std::exp(std::log(1e-3) + ud(rng) * (std::log(0.1) - std::log(1e-3)));
            return float(dt + std::log(-std::expm1(-dt)));
        });
        add(b + "ssm_a", {1, H}, [&](std::size_t) { return -std::exp(ud(rng) * std::log(16.f)); });
        add(b + "ssm_d", {1, H}, [](std::size_t) { return 1.f; });
        add(b + "ssm_norm.weight", {DI / G, G}, [](std::size_t) { return 1.f; });
        add(b + "ssm_out.weight", {DI, E}, [&](std::size_t) { return 0.02f * nd(rng) / std::sqrt(2.f * L); });
    }
    w.write(path);
}

std::string mamba2_file(ggml_type type) {
    const std::string dir = bench_dir();
    std::system(("mkdir -p '" + dir + "'").c_str());
    const std::string f32 = dir + "/mamba2-130m-F32.gguf";
    const std::string path = dir + "/mamba2-130m-" + std::string(type_name(type)) + ".gguf";
    if (exists(path)) return path;
    if (!exists(f32)) {
        write_mamba2(f32 + ".part");
        publish(f32 + ".part", f32);
    }
    if (type != ggml_type::F32) {
        gguf::quantize_file(f32, path + ".part", type);
        publish(path + ".part", path);
    }
    return path;
}
} // namespace

int main(int argc, char** argv) {
    archetype::bench_util::announce_level();
    const bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
    const char* lb = std::getenv("LLAMA_BENCH");
    const int rounds = quick ? 1 : 3;
    thread_pool bw_pool(2);
    for (ggml_type type : {ggml_type::Q8_0, ggml_type::Q4_0}) {
        const std::string path = mamba2_file(type);
        const auto m = load_model<presets::mamba2_architecture>(path);
        warm_up(m);
        auto s = session(m, {.n_threads = 2, .max_sequences = 1, .n_ctx = 1024});
        versus_llama("mamba2-130m " + std::string(type_name(type)), m, path,
                     double(s.recurrent_state_bytes_per_sequence()), rounds, lb, bw_pool);
    }
}
