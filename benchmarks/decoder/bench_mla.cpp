// Multi-head latent attention at DeepSeek-V2-Lite's shape (issue 39 item 6): `deepseek2`,
// 27 layers of width 2048, 16 heads, q without low rank (attn_q 2048 → 16 × (128 + 64)), a
// latent of 512 plus a 64-wide RoPE key, values of 128 per head; layer 0 a dense SwiGLU of
// 10944, the others 64 SwiGLU experts of 1408 with 6 per token (softmax, not renormalised)
// and 2 shared experts (one of 2816); vocabulary 102400, untied head; YaRN factor 40 over
// 4096: 16.5 B parameters (describe), 2.4 B active. Random weights (uniform, scale 0.02), written by the
// library's GGUF writer directly in Q4_0 (every matrix quantised row by row as it streams,
// the per-head attn_k_b / attn_v_b and the experts included; the router and norms F32).
// Prefill 512 tokens and decode 128 with 2 threads (ARCHETYPE_BENCH_THREADS), and with
// LLAMA_BENCH set llama.cpp's pp512 / tg128 on the same file, alternating rounds, medians;
// the decode bound (the active parameters' bytes) / read bandwidth. The KV bytes per token
// are describe()'s (one latent row per layer). The file (8.8 GB) is written under
// $TMPDIR/archetype_bench_decoder (ARCHETYPE_BENCH_DIR) once: delete it after.
// Usage: bench_mla [--quick]
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "archetype/kernels/quant/quantize.hpp"
#include "archetype/models/presets/deepseek2.hpp"
#include "decoder_bench.hpp"
#include "level.hpp"

using namespace archetype;
using namespace decoder_bench;

namespace {
constexpr std::size_t E = 2048, L = 27, H = 16, NOPE = 128, ROPE = 64, VH = 128, RANK = 512, FF = 10944, EFF = 1408,
                      NE = 64, NU = 6, NSH = 2, V = 102400;

void write_mla(const std::string& path, ggml_type type) {
    gguf::writer w;
    const std::string a = "deepseek2.";
    w.set("general.architecture", std::string("deepseek2"));
    w.set("general.name", std::string("bench-deepseek-v2-lite-like"));
    w.set(a + "block_count", std::uint32_t(L));
    w.set(a + "context_length", std::uint32_t(163840));
    w.set(a + "embedding_length", std::uint32_t(E));
    w.set(a + "feed_forward_length", std::uint32_t(FF));
    w.set(a + "attention.head_count", std::uint32_t(H));
    w.set(a + "attention.head_count_kv", std::uint32_t(1));
    w.set(a + "rope.freq_base", 10000.f);
    w.set(a + "rope.dimension_count", std::uint32_t(ROPE));
    w.set(a + "rope.scaling.type", std::string("yarn"));
    w.set(a + "rope.scaling.factor", 40.f);
    w.set(a + "rope.scaling.original_context_length", std::uint32_t(4096));
    w.set(a + "rope.scaling.yarn_beta_fast", 32.f);
    w.set(a + "rope.scaling.yarn_beta_slow", 1.f);
    w.set(a + "rope.scaling.yarn_log_multiplier", 0.0707f);
    w.set(a + "attention.layer_norm_rms_epsilon", 1e-6f);
    w.set(a + "attention.key_length", std::uint32_t(RANK + ROPE));
    w.set(a + "attention.value_length", std::uint32_t(RANK));
    w.set(a + "attention.key_length_mla", std::uint32_t(NOPE + ROPE));
    w.set(a + "attention.value_length_mla", std::uint32_t(VH));
    w.set(a + "attention.kv_lora_rank", std::uint32_t(RANK));
    w.set(a + "leading_dense_block_count", std::uint32_t(1));
    w.set(a + "expert_count", std::uint32_t(NE));
    w.set(a + "expert_used_count", std::uint32_t(NU));
    w.set(a + "expert_gating_func", std::uint32_t(1)); // softmax
    w.set(a + "expert_feed_forward_length", std::uint32_t(EFF));
    w.set(a + "expert_shared_count", std::uint32_t(NSH));
    w.set(a + "expert_weights_scale", 1.f);
    w.set(a + "vocab_size", std::uint32_t(V));
    w.set("general.file_type", std::uint32_t(type == ggml_type::Q8_0 ? 7 : 2));
    w.set("tokenizer.ggml.model", std::string("no_vocab"));

    std::uint64_t index = 0;
    // a matrix (or a stack of them) in `type`, rows quantised as the writer streams them
    auto matrix = [&](const std::string& name, std::vector<std::uint64_t> ne) {
        const std::uint64_t id = index++;
        const std::size_t cols = ne[0];
        w.add_tensor(name, type, std::move(ne), [id, type, cols](std::byte* dst, std::size_t n_bytes) {
            const auto tr = traits_of(type);
            const std::size_t row_bytes = cols / tr.block_size * tr.type_size;
            std::vector<float> row(cols);
            for (std::size_t r = 0; r < n_bytes / row_bytes; ++r) {
                for (std::size_t i = 0; i < cols; ++i) row[i] = 0.02f * random_decoder::uniform(39, id, r * cols + i);
                quant::quantize_row(type, row.data(), dst + r * row_bytes, cols);
            }
        });
    };
    // an F32 tensor: 1 + 0.05 u for a norm, 0.02 u otherwise
    auto f32 = [&](const std::string& name, std::vector<std::uint64_t> ne, bool norm) {
        const std::uint64_t id = index++;
        w.add_tensor(name, ggml_type::F32, std::move(ne), [id, norm](std::byte* dst, std::size_t n_bytes) {
            auto* f = reinterpret_cast<float*>(dst);
            for (std::size_t i = 0; i < n_bytes / 4; ++i) {
                const float u = random_decoder::uniform(39, id, i);
                f[i] = norm ? 1.f + 0.05f * u : 0.02f * u;
            }
        });
    };
    matrix("token_embd.weight", {E, V});
    f32("output_norm.weight", {E}, true);
    matrix("output.weight", {E, V});
    for (std::size_t il = 0; il < L; ++il) {
        const std::string b = "blk." + std::to_string(il) + ".";
        f32(b + "attn_norm.weight", {E}, true);
        matrix(b + "attn_q.weight", {E, H * (NOPE + ROPE)});
        matrix(b + "attn_kv_a_mqa.weight", {E, RANK + ROPE});
        f32(b + "attn_kv_a_norm.weight", {RANK}, true);
        matrix(b + "attn_k_b.weight", {NOPE, RANK, H});
        matrix(b + "attn_v_b.weight", {RANK, VH, H});
        matrix(b + "attn_output.weight", {H * VH, E});
        f32(b + "ffn_norm.weight", {E}, true);
        if (il == 0) {
            matrix(b + "ffn_gate.weight", {E, FF});
            matrix(b + "ffn_up.weight", {E, FF});
            matrix(b + "ffn_down.weight", {FF, E});
        } else {
            f32(b + "ffn_gate_inp.weight", {E, NE}, false);
            matrix(b + "ffn_gate_exps.weight", {E, EFF, NE});
            matrix(b + "ffn_up_exps.weight", {E, EFF, NE});
            matrix(b + "ffn_down_exps.weight", {EFF, E, NE});
            matrix(b + "ffn_gate_shexp.weight", {E, NSH * EFF});
            matrix(b + "ffn_up_shexp.weight", {E, NSH * EFF});
            matrix(b + "ffn_down_shexp.weight", {NSH * EFF, E});
        }
    }
    w.write(path);
}

std::string mla_file(ggml_type type) {
    const std::string dir = bench_dir();
    std::system(("mkdir -p '" + dir + "'").c_str());
    const std::string path = dir + "/deepseek-v2-lite-like-" + std::string(type_name(type)) + ".gguf";
    if (!exists(path)) {
        write_mla(path + ".part", type);
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
    const ggml_type type = ggml_type::Q4_0;
    const std::string path = mla_file(type);
    const auto m = load_model<presets::deepseek2_architecture>(path);
    std::printf("%s", m.describe().c_str());
    warm_up(m);
    versus_llama("deepseek-v2-lite-like " + std::string(type_name(type)), m, path, 0, rounds, lb, bw_pool);
}
