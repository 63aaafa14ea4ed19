// A Granite-4.0-H-micro-like hybrid (issue 38 item 5): `granitehybrid`, 40 layers of width
// 2048, attention (32 heads, 8 KV heads of 64, NoPE) on every tenth layer (5, 15, 25, 35)
// and Mamba-2 on the others (64 heads of 64: inner 4096, state 128, 1 group, conv 4), a
// dense SwiGLU FFN of 8192 in every layer, vocabulary 100352, tied head, Granite's
// multipliers: 3.2 B parameters. The shape is the published model's as far as its
// config states it (hidden 2048, 40 layers at a 9:1 Mamba-2 : attention ratio, 32 / 8
// heads, Mamba-2 64 × 64 with state 128); the attention layers' places are ours.
// Random weights initialised as the model is (A = −exp(U(log 1, log 16)) < 0; dt bias
// so that softplus(dt) ∈ [1e-3, 0.1]; matrices uniform, scale 0.02), written by the
// library's GGUF writer directly in Q8_0 and Q4_0 (every matrix, the embedding
// included, quantised row by row as it streams: the F32 model would be 12.8 GB; the conv,
// A, D, dt bias and norms stay F32, as llama-quantize keeps them). For each file: prefill
// 512 tokens and decode 128 with 2 threads (ARCHETYPE_BENCH_THREADS), and with LLAMA_BENCH
// set llama.cpp's pp512 / tg128 on the same file, alternating rounds, medians; the decode
// bound (weight bytes + 2 × state bytes per token) / read bandwidth.
// Files under $TMPDIR/archetype_bench_decoder (ARCHETYPE_BENCH_DIR), written once.
// Usage: bench_hybrid [--quick]
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "archetype/kernels/quant/quantize.hpp"
#include "archetype/models/presets/granitehybrid.hpp"
#include "decoder_bench.hpp"
#include "level.hpp"

using namespace archetype;
using namespace decoder_bench;

namespace {
constexpr std::size_t E = 2048, L = 40, HQ = 32, HKV = 8, HD = 64, FF = 8192, DI = 4096, SH = 64, N = 128, G = 1, K = 4,
                      V = 100352;
bool attention_layer(std::size_t il) { return il % 10 == 5; }

void write_hybrid(const std::string& path, ggml_type type) {
    gguf::writer w;
    const std::string a = "granitehybrid.";
    w.set("general.architecture", std::string("granitehybrid"));
    w.set("general.name", std::string("bench-granite-4.0-h-micro-like"));
    w.set(a + "block_count", std::uint32_t(L));
    w.set(a + "context_length", std::uint32_t(1) << 17);
    w.set(a + "embedding_length", std::uint32_t(E));
    w.set(a + "feed_forward_length", std::uint32_t(FF));
    w.set(a + "attention.head_count", std::uint32_t(HQ));
    std::vector<std::uint32_t> kv(L);
    for (std::size_t il = 0; il < L; ++il) kv[il] = attention_layer(il) ? std::uint32_t(HKV) : 0u;
    w.set(a + "attention.head_count_kv", kv);
    w.set(a + "rope.freq_base", 10000.f);
    w.set(a + "rope.dimension_count", std::uint32_t(HD));
    w.set(a + "rope.scaling.finetuned", false); // NoPE, as Granite-4.0-H
    w.set(a + "attention.layer_norm_rms_epsilon", 1e-5f);
    w.set(a + "expert_count", std::uint32_t(0));
    w.set(a + "expert_used_count", std::uint32_t(0));
    w.set(a + "expert_shared_feed_forward_length", std::uint32_t(FF));
    w.set(a + "vocab_size", std::uint32_t(V));
    w.set(a + "attention.scale", 1.f / 128.f);
    w.set(a + "embedding_scale", 12.f);
    w.set(a + "residual_scale", 0.22f);
    w.set(a + "logit_scale", 8.f);
    w.set(a + "ssm.conv_kernel", std::uint32_t(K));
    w.set(a + "ssm.state_size", std::uint32_t(N));
    w.set(a + "ssm.group_count", std::uint32_t(G));
    w.set(a + "ssm.inner_size", std::uint32_t(DI));
    w.set(a + "ssm.time_step_rank", std::uint32_t(SH));
    w.set("general.file_type", std::uint32_t(type == ggml_type::Q8_0 ? 7 : 2));
    w.set("tokenizer.ggml.model", std::string("no_vocab"));

    std::uint64_t index = 0;
    // a matrix in `type`, rows quantised as the writer streams them (uniform, scale 0.02)
    auto matrix = [&](const std::string& name, std::size_t cols, std::size_t rows) {
        const std::uint64_t id = index++;
        w.add_tensor(name, type, {cols, rows}, [id, type, cols](std::byte* dst, std::size_t n_bytes) {
            const auto tr = traits_of(type);
            const std::size_t row_bytes = cols / tr.block_size * tr.type_size;
            std::vector<float> row(cols);
            for (std::size_t r = 0; r < n_bytes / row_bytes; ++r) {
                for (std::size_t i = 0; i < cols; ++i) row[i] = 0.02f * random_decoder::uniform(38, id, r * cols + i);
                quant::quantize_row(type, row.data(), dst + r * row_bytes, cols);
            }
        });
    };
    // an F32 tensor whose element i is value(u_i), u_i uniform in [-1, 1)
    auto f32 = [&](const std::string& name, std::vector<std::uint64_t> ne, float (*value)(float)) {
        const std::uint64_t id = index++;
        w.add_tensor(name, ggml_type::F32, std::move(ne), [id, value](std::byte* dst, std::size_t n_bytes) {
            auto* f = reinterpret_cast<float*>(dst);
            for (std::size_t i = 0; i < n_bytes / 4; ++i) f[i] = value(random_decoder::uniform(38, id, i));
        });
    };
    const auto norm = [](float u) { return 1.f + 0.05f * u; };
    const std::size_t cd = DI + 2 * G * N, in_w = 2 * DI + 2 * G * N + SH;
    matrix("token_embd.weight", E, V);
    f32("output_norm.weight", {E}, norm);
    for (std::size_t il = 0; il < L; ++il) {
        const std::string b = "blk." + std::to_string(il) + ".";
        f32(b + "attn_norm.weight", {E}, norm);
        if (attention_layer(il)) {
            matrix(b + "attn_q.weight", E, HQ * HD);
            matrix(b + "attn_k.weight", E, HKV * HD);
            matrix(b + "attn_v.weight", E, HKV * HD);
            matrix(b + "attn_output.weight", HQ * HD, E);
        } else {
            matrix(b + "ssm_in.weight", E, in_w);
            f32(b + "ssm_conv1d.weight", {K, cd}, [](float u) { return 0.5f * u; });
            f32(b + "ssm_conv1d.bias", {cd}, [](float u) { return 0.05f * u; });
            f32(b + "ssm_dt.bias", {SH}, [](float u) {
                // dt = exp(U(log 1e-3, log 0.1)); bias = inverse softplus of dt
                const double dt = std::exp(std::log(1e-3) + 0.5 * (u + 1) * (std::log(0.1) - std::log(1e-3)));
                return float(dt + std::log(-std::expm1(-dt)));
            });
            f32(b + "ssm_a", {1, SH}, [](float u) { return -std::exp(0.5f * (u + 1) * std::log(16.f)); });
            f32(b + "ssm_d", {1, SH}, [](float u) { return 1.f + 0.05f * u; });
            f32(b + "ssm_norm.weight", {DI / G, G}, norm);
            matrix(b + "ssm_out.weight", DI, E);
        }
        f32(b + "ffn_norm.weight", {E}, norm);
        matrix(b + "ffn_gate.weight", E, FF);
        matrix(b + "ffn_up.weight", E, FF);
        matrix(b + "ffn_down.weight", FF, E);
    }
    w.write(path);
}

std::string hybrid_file(ggml_type type) {
    const std::string dir = bench_dir();
    std::system(("mkdir -p '" + dir + "'").c_str());
    const std::string path = dir + "/granite-h-micro-like-" + std::string(type_name(type)) + ".gguf";
    if (!exists(path)) {
        write_hybrid(path + ".part", type);
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
        const std::string path = hybrid_file(type);
        const auto m = load_model<presets::granitehybrid_architecture>(path);
        warm_up(m);
        auto s = session(m, {.n_threads = 2, .max_sequences = 1, .n_ctx = 1024});
        versus_llama("granite-h-micro-like " + std::string(type_name(type)), m, path,
                     double(s.recurrent_state_bytes_per_sequence()), rounds, lb, bw_pool);
    }
}
