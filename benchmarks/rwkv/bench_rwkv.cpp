// RWKV-6 and RWKV-7 throughput on seeded random weights, written as llama.cpp `rwkv6`
// / `rwkv7` GGUF files (F16 matrices) by archetype's GGUF writer to a temporary directory:
//   small: D 768, 12 layers, head 64, vocab 65536   (~0.2B parameters)
//   large: D 2048, 24 layers, head 64, vocab 65536  (1.6B-class)
//   v7-small: RWKV-7 "Goose" 0.1B shape (D 768, 12 layers, head 64, LoRA ranks 64/64/32/128)
//   v7-large: RWKV-7 1.5B shape (D 2048, 24 layers, head 64, LoRA ranks 96/96/64/256)
// Measures prompt processing of 512 tokens (sequence mode) and decode, tokens/s,
// with 2 threads, and the recurrent state per sequence after 16 and after 2048
// tokens. Decode also reports the weight bytes it reads per token (every matrix
// once, head included) as GB/s and as a fraction of this machine's read
// bandwidth (a 1 GiB sum with 2 threads, the probe of benchmarks/kernels and
// benchmarks/quant): F16 decode is memory-bound, so that fraction is its
// efficiency. With LLAMA_BENCH=/path/to/llama-bench it also runs llama.cpp on the
// same file (-p 512 -n 128 -t 2) and prints the ratios archetype / llama.cpp.
// Arguments: `small`, `large`, `v7-small`, `v7-large` (default: all). ARCHETYPE_RWKV_BENCH_DIR=dir keeps
// the GGUF files in dir (reused when present) instead of a temporary directory.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include <unistd.h>

#include "bandwidth.hpp"
#include "archetype/core/thread_pool.hpp"
#include "archetype/kernels/simd_util.hpp"
#include "archetype/runtime/rwkv_api.hpp"
#include "random_model.hpp"
#include "level.hpp"

using namespace archetype;
using clk = std::chrono::steady_clock;

namespace {

double seconds_since(clk::time_point t0) { return std::chrono::duration<double>(clk::now() - t0).count(); }


/// Bytes of weights one decode step reads: every tensor the core bound but the token
/// embedding (one row per token).
template <class Model>
std::size_t decode_weight_bytes(const Model& m) {
    const auto& e = m.core.token_embd();
    return m.core.weight_bytes() - e.rows * e.row_bytes();
}

/// llama-bench's JSON: the "avg_ts" of the pp and tg rows (0 when absent).
void llama_bench(const std::string& bin, const std::string& model, double& pp, double& tg) {
    pp = tg = 0;
    const std::string out = model + ".llama.json";
    const std::string cmd = "'" + bin + "' -m '" + model + "' -p 512 -n 128 -t 2 -o json > '" + out + "' 2>/dev/null";
    if (std::system(cmd.c_str()) != 0) {
        std::printf("  llama-bench failed (%s)\n", cmd.c_str());
        return;
    }
    FILE* f = std::fopen(out.c_str(), "r");
    if (!f) return;
    std::string s;
    char buf[4096];
    for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, f)) > 0;) s.append(buf, n);
    std::fclose(f);
    // rows in order: pp then tg; each has "n_prompt", "n_gen" and "avg_ts"
    std::size_t pos = 0;
    for (int row = 0; row < 2; ++row) {
        const auto np = s.find("\"n_prompt\"", pos), ng = s.find("\"n_gen\"", pos), ts = s.find("\"avg_ts\"", pos);
        if (np == std::string::npos || ng == std::string::npos || ts == std::string::npos) break;
        const int n_prompt = std::atoi(s.c_str() + s.find(':', np) + 1);
        const double v = std::atof(s.c_str() + s.find(':', ts) + 1);
        (n_prompt > 0 ? pp : tg) = v;
        (void)ng;
        pos = ts + 8;
    }
}

/// A seeded random RWKV-7 model as llama.cpp's `rwkv7` GGUF: F16 square and channel-mix
/// matrices, embedding and head; F32 vectors and LoRA matrices. Values are hashes of
/// (tensor, element) in ranges that keep the recurrence finite (lerps in [0, 1], LoRA
/// entries ±0.1, projections ±1/sqrt(D)); only the speed is measured.
struct v7_spec {
    std::size_t C, L, F, V, DW, DA, DV, DG, N = 64;
};
archetype::gguf::writer make_rwkv7_gguf(const v7_spec& s) {
    archetype::gguf::writer w;
    const std::string a = "rwkv7.";
    w.set("general.architecture", std::string("rwkv7"));
    w.set("general.name", std::string("random rwkv7"));
    w.set(a + "context_length", std::uint32_t(1048576));
    w.set(a + "embedding_length", std::uint32_t(s.C));
    w.set(a + "block_count", std::uint32_t(s.L));
    w.set(a + "feed_forward_length", std::uint32_t(s.F));
    w.set(a + "attention.layer_norm_epsilon", 1e-5f);
    w.set(a + "wkv.head_size", std::uint32_t(s.N));
    w.set(a + "attention.head_count", std::uint32_t(0));
    w.set(a + "attention.decay_lora_rank", std::uint32_t(s.DW));
    w.set(a + "attention.iclr_lora_rank", std::uint32_t(s.DA));
    w.set(a + "attention.value_residual_mix_lora_rank", std::uint32_t(s.DV));
    w.set(a + "attention.gate_lora_rank", std::uint32_t(s.DG));
    w.set(a + "token_shift_count", std::uint32_t(2));
    w.set(a + "rescale_every_n_layers", std::uint32_t(0));
    w.set("general.file_type", std::uint32_t(1));
    w.set("tokenizer.ggml.model", std::string("rwkv"));
    std::vector<std::string> toks;
    std::vector<std::int32_t> types;
    for (std::size_t i = 0; i < s.V; ++i) {
        toks.push_back("t" + std::to_string(i));
        types.push_back(1);
    }
    w.set("tokenizer.ggml.tokens", toks);
    w.set("tokenizer.ggml.token_type", types);
    std::uint64_t id = 0;
    auto add = [&](const std::string& name, std::vector<std::uint64_t> ne, float lo, float hi, bool half) {
        std::size_t n = 1;
        for (auto d : ne) n *= std::size_t(d);
        w.add_tensor(name, half ? ggml_type::F16 : ggml_type::F32, std::move(ne),
                     [tid = ++id, n, lo, hi, half](std::byte* dst, std::size_t) {
                         for (std::size_t i = 0; i < n; ++i) {
                             const float v = lo + (hi - lo) * 0.5f * (rwkv_test::uniform(7, tid, i) + 1.f); // uniform: [-1, 1)
                             if (half) {
                                 const std::uint16_t h = fp32_to_fp16(v);
                                 std::memcpy(dst + 2 * i, &h, 2);
                             } else {
                                 std::memcpy(dst + 4 * i, &v, 4);
                             }
                         }
                     });
    };
    const float m = 1.f / std::sqrt(float(s.C)), mf = 1.f / std::sqrt(float(s.F));
    add("token_embd.weight", {s.C, s.V}, -1.f, 1.f, true);
    add("token_embd_norm.weight", {s.C}, 0.9f, 1.1f, false);
    add("token_embd_norm.bias", {s.C}, -0.1f, 0.1f, false);
    for (std::size_t l = 0; l < s.L; ++l) {
        const std::string p = "blk." + std::to_string(l) + ".";
        for (const char* n : {"attn_norm", "attn_norm_2", "time_mix_ln"}) {
            add(p + n + ".weight", {s.C}, 0.9f, 1.1f, false);
            add(p + n + ".bias", {s.C}, -0.1f, 0.1f, false);
        }
        add(p + "time_mix_lerp_fused.weight", {s.C, 1, 1, 6}, 0.f, 1.f, false);
        add(p + "time_mix_w0.weight", {s.C}, -1.f, 1.f, false);
        add(p + "time_mix_w1.weight", {s.C, s.DW}, -0.1f, 0.1f, false);
        add(p + "time_mix_w2.weight", {s.DW, s.C}, -0.1f, 0.1f, false);
        add(p + "time_mix_a0.weight", {s.C}, -0.5f, 0.5f, false);
        add(p + "time_mix_a1.weight", {s.C, s.DA}, -0.1f, 0.1f, false);
        add(p + "time_mix_a2.weight", {s.DA, s.C}, -0.1f, 0.1f, false);
        add(p + "time_mix_v0.weight", {s.C}, -0.5f, 0.5f, false);
        add(p + "time_mix_v1.weight", {s.C, l == 0 ? s.DA : s.DV}, -0.1f, 0.1f, false); // layer 0's: unused copies
        add(p + "time_mix_v2.weight", {l == 0 ? s.DA : s.DV, s.C}, -0.1f, 0.1f, false);
        add(p + "time_mix_g1.weight", {s.C, s.DG}, -0.1f, 0.1f, false);
        add(p + "time_mix_g2.weight", {s.DG, s.C}, -0.1f, 0.1f, false);
        add(p + "time_mix_k_k.weight", {s.C}, -0.5f, 0.5f, false);
        add(p + "time_mix_k_a.weight", {s.C}, -0.5f, 0.5f, false);
        add(p + "time_mix_r_k.weight", {s.C}, -0.5f, 0.5f, false);
        for (const char* n : {"time_mix_key", "time_mix_value", "time_mix_receptance", "time_mix_output"})
            add(p + n + ".weight", {s.C, s.C}, -m, m, true);
        add(p + "channel_mix_lerp_k.weight", {s.C, 1, 1}, 0.f, 1.f, false);
        add(p + "channel_mix_key.weight", {s.C, s.F}, -m, m, true);
        add(p + "channel_mix_value.weight", {s.F, s.C}, -mf, mf, true);
    }
    add("output_norm.weight", {s.C}, 0.9f, 1.1f, false);
    add("output_norm.bias", {s.C}, -0.1f, 0.1f, false);
    add("output.weight", {s.C, s.V}, -m, m, true);
    return w;
}

template <class Model, class Write>
void bench(const char* label, const char* shape, std::size_t V, const Write& write_file, std::size_t n_decode, double bw) {
    const char* keep = std::getenv("ARCHETYPE_RWKV_BENCH_DIR");
    const auto dir = keep ? std::filesystem::path(keep)
                          : std::filesystem::temp_directory_path() / ("archetype_bench_rwkv_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    const std::string path = (dir / (std::string(label) + ".gguf")).string();
    auto t0 = clk::now();
    const bool write = !keep || !std::filesystem::exists(path);
    if (write) write_file(path);
    std::printf("%s: %s, F16 matrices: %s %.2f GB (%.1f s)\n", label, shape, write ? "wrote" : "reused",
                double(std::filesystem::file_size(path)) / 1e9, seconds_since(t0));

    const auto model = load_model<Model>(path);
    const std::size_t spec_V = V;
    auto sess = session(model, {.n_threads = 2, .max_sequences = 2, .prefill_chunk = 512});
    std::vector<std::int32_t> prompt(512);
    for (std::size_t i = 0; i < prompt.size(); ++i) prompt[i] = std::int32_t((i * 7919) % spec_V);
    std::vector<float> logits(spec_V);
    // prompt: 512 tokens in sequence mode, logits of the last position
    sess.prefill(0, std::span(prompt).first(8), logits.data(), rwkv_logits::last); // warm the page cache
    sess.reset(0);
    t0 = clk::now();
    sess.prefill(0, prompt, logits.data(), rwkv_logits::last);
    const double pp = 512 / seconds_since(t0);
    // decode: median of 3 rounds of n_decode tokens
    std::int32_t tok = 1;
    std::vector<double> rounds;
    for (int round = 0; round < 3; ++round) {
        t0 = clk::now();
        for (std::size_t i = 0; i < n_decode; ++i) {
            sess.decode(0, tok, logits.data());
            tok = std::int32_t((tok * 31 + 7) % spec_V);
        }
        rounds.push_back(double(n_decode) / seconds_since(t0));
    }
    std::sort(rounds.begin(), rounds.end());
    const double tg = rounds[1];
    std::printf("  archetype: prompt 512: %8.1f tokens/s   decode: %7.2f tokens/s  (2 threads, median of 3)\n", pp,
                tg);
    const double wb = double(decode_weight_bytes(model));
    std::printf("  decode reads %.1f MB of weights per token: %.1f GB/s = %.2f of read bandwidth (%.1f GB/s)\n",
                wb * 1e-6, wb * tg * 1e-9, wb * tg * 1e-9 / bw, bw);
    std::printf("  state per sequence: %zu bytes (%.2f MiB), the same after 16 or 2048 tokens\n", sess.state_bytes(),
                double(sess.state_bytes()) / 1048576.0);
    if (const char* lb = std::getenv("LLAMA_BENCH")) {
        double lpp, ltg;
        llama_bench(lb, path, lpp, ltg);
        if (lpp > 0 && ltg > 0)
            std::printf("  llama.cpp: prompt 512: %8.1f tokens/s   decode: %7.2f tokens/s\n"
                        "  ratio archetype / llama.cpp: prompt %.2fx, decode %.2fx\n",
                        lpp, ltg, pp / lpp, tg / ltg);
    }
    if (!keep) std::filesystem::remove_all(dir);
}

/// Resident memory of this process in bytes (/proc/self/statm; 0 where absent).
std::size_t resident_bytes() {
    FILE* f = std::fopen("/proc/self/statm", "r");
    if (!f) return 0;
    unsigned long size = 0, resident = 0;
    const int got = std::fscanf(f, "%lu %lu", &size, &resident);
    std::fclose(f);
    return got == 2 ? std::size_t(resident) * std::size_t(::sysconf(_SC_PAGESIZE)) : 0;
}

/// Memory per sequence does not grow with its length: the saved state and the
/// process's resident memory after 17, 2305 and 11521 tokens (prefills, then
/// one-token decode steps), once a warm-up has touched the session's buffers.
void state_vs_length() {
    const rwkv_test::model_spec spec{.version = 6, .C = 256, .N = 64, .L = 4, .V = 1024, .F = 896, .DM = 32, .DD = 64};
    const auto bytes = rwkv_test::make_bin(spec);
    const auto model = load_model_from_memory<Rwkv6<256, 64>>(bytes);
    auto sess = session(model, {.n_threads = 2, .max_sequences = 2});
    std::vector<std::int32_t> p(2048);
    for (std::size_t i = 0; i < p.size(); ++i) p[i] = std::int32_t(i % spec.V);
    std::vector<float> logits(spec.V);
    // warm-up on sequence 1: first touch of the workspace and the GEMM scratch buffers
    sess.prefill(1, p, logits.data(), rwkv_logits::last);
    sess.decode(1, 1, logits.data());
    sess.prefill(0, std::span(p).first(16), logits.data(), rwkv_logits::last);
    sess.decode(0, 1, logits.data());
    const auto s16 = sess.save_state(0).size();
    const std::size_t rss16 = resident_bytes();
    sess.prefill(0, std::span(p).subspan(16), logits.data(), rwkv_logits::last);
    for (std::int32_t i = 0; i < 256; ++i) sess.decode(0, i % std::int32_t(spec.V), logits.data());
    const auto s2k = sess.save_state(0).size();
    const std::size_t rss2k = resident_bytes();
    for (int rep = 0; rep < 4; ++rep) {
        sess.prefill(0, p, logits.data(), rwkv_logits::last);
        for (std::int32_t i = 0; i < 256; ++i) sess.decode(0, i % std::int32_t(spec.V), logits.data());
    }
    const auto s11k = sess.save_state(0).size();
    const std::size_t rss11k = resident_bytes();
    std::printf("state_vs_length (D 256, 4 layers): saved state after 17 / 2305 / 11521 tokens: %zu / %zu / %zu bytes; "
                "process resident memory %.2f / %.2f / %.2f MB\n",
                s16, s2k, s11k, double(rss16) / 1e6, double(rss2k) / 1e6, double(rss11k) / 1e6);
}

} // namespace

int main(int argc, char** argv) {
    archetype::bench_util::announce_level();
    std::setvbuf(stdout, nullptr, _IOLBF, 0); // progress shows when piped (meson test --benchmark)
    const std::string only = argc > 1 ? argv[1] : "";
    auto want = [&](const char* name) { return only.empty() || only == name; };
    state_vs_length();
    double bw;
    {
        thread_pool pool(2);
        bw = archetype::bench_util::read_bandwidth_gbs(pool);
    }
    auto v6 = [&](const char* label, const rwkv_test::model_spec& spec, std::size_t n_decode) {
        char shape[160];
        std::snprintf(shape, sizeof shape, "RWKV-6, D %zu, %zu layers, head %zu, vocab %zu, ffn %zu", spec.C, spec.L,
                      spec.N, spec.V, spec.F);
        bench<Rwkv6<dynamic, 64>>(label, shape, spec.V, [&](const std::string& p) { rwkv_test::make_gguf(spec).write(p); },
                                  n_decode, bw);
    };
    auto v7 = [&](const char* label, const v7_spec& spec, std::size_t n_decode) {
        char shape[200];
        std::snprintf(shape, sizeof shape, "RWKV-7, D %zu, %zu layers, head %zu, vocab %zu, ffn %zu, LoRA %zu/%zu/%zu/%zu",
                      spec.C, spec.L, spec.N, spec.V, spec.F, spec.DW, spec.DA, spec.DV, spec.DG);
        bench<Rwkv7<dynamic, 64>>(label, shape, spec.V, [&](const std::string& p) { make_rwkv7_gguf(spec).write(p); },
                                  n_decode, bw);
    };
    if (want("small")) v6("small", {.version = 6, .C = 768, .N = 64, .L = 12, .V = 65536, .F = 2688, .DM = 32, .DD = 64, .f16 = true}, 32);
    if (want("large")) v6("large", {.version = 6, .C = 2048, .N = 64, .L = 24, .V = 65536, .F = 7168, .DM = 32, .DD = 64, .f16 = true}, 8);
    if (want("v7-small")) v7("v7-small", {.C = 768, .L = 12, .F = 3072, .V = 65536, .DW = 64, .DA = 64, .DV = 32, .DG = 128}, 32);
    if (want("v7-large")) v7("v7-large", {.C = 2048, .L = 24, .F = 8192, .V = 65536, .DW = 96, .DA = 96, .DV = 64, .DG = 256}, 8);
    return 0;
}
