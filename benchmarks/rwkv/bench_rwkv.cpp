// RWKV-6 throughput on seeded random weights, written as llama.cpp `rwkv6` GGUF
// files (F16 matrices) by archetype's GGUF writer to a temporary directory:
//   small: D 768, 12 layers, head 64, vocab 65536   (~0.2B parameters)
//   large: D 2048, 24 layers, head 64, vocab 65536  (1.6B-class)
// Measures prompt processing of 512 tokens (sequence mode) and decode, tokens/s,
// with 2 threads, and the recurrent state per sequence after 16 and after 2048
// tokens. Decode also reports the weight bytes it reads per token (every matrix
// once, head included) as GB/s and as a fraction of this machine's read
// bandwidth (a 1 GiB sum with 2 threads, the probe of benchmarks/kernels and
// benchmarks/quant): F16 decode is memory-bound, so that fraction is its
// efficiency. With LLAMA_BENCH=/path/to/llama-bench it also runs llama.cpp on the
// same file (-p 512 -n 128 -t 2) and prints the ratios archetype / llama.cpp.
// Arguments: `small`, `large` (default: both). ARCHETYPE_RWKV_BENCH_DIR=dir keeps
// the GGUF files in dir (reused when present) instead of a temporary directory.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include <unistd.h>

#include "bandwidth.hpp"
#include "archetype/core/thread_pool.hpp"
#include "archetype/kernels/simd_util.hpp"
#include "archetype/runtime/rwkv_api.hpp"
#include "random_model.hpp"

using namespace archetype;
using clk = std::chrono::steady_clock;

namespace {

double seconds_since(clk::time_point t0) { return std::chrono::duration<double>(clk::now() - t0).count(); }


/// Bytes of weights one decode step reads: every matrix of every layer and the head.
std::size_t decode_weight_bytes(const rwkv_weights& W) {
    auto bytes = [](const kernels::weight_view& v) { return v.rows * v.row_bytes(); };
    std::size_t total = bytes(W.head);
    for (const auto& L : W.layers) {
        for (const auto* v : {&L.maa_w1, &L.decay_w1, &L.decay_w2, &L.wr, &L.wk, &L.wv, &L.wg, &L.wo, &L.ffn_k,
                              &L.ffn_v, &L.ffn_r})
            total += bytes(*v);
        for (const auto& v : L.maa_w2) total += bytes(v);
    }
    return total;
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

void bench(const char* label, const rwkv_test::model_spec& spec, std::size_t n_decode, double bw) {
    const char* keep = std::getenv("ARCHETYPE_RWKV_BENCH_DIR");
    const auto dir = keep ? std::filesystem::path(keep)
                          : std::filesystem::temp_directory_path() / ("archetype_bench_rwkv_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    const std::string path = (dir / (std::string(label) + ".gguf")).string();
    auto t0 = clk::now();
    const bool write = !keep || !std::filesystem::exists(path);
    if (write) rwkv_test::make_gguf(spec).write(path);
    std::printf("%s: D %zu, %zu layers, head %zu, vocab %zu, ffn %zu, F16 matrices: %s %.2f GB (%.1f s)\n", label,
                spec.C, spec.L, spec.N, spec.V, spec.F, write ? "wrote" : "reused",
                double(std::filesystem::file_size(path)) / 1e9, seconds_since(t0));

    const auto model = load_model<Rwkv6<dynamic, 64>>(path);
    auto sess = session(model, {.n_threads = 2, .max_sequences = 2, .prefill_chunk = 512});
    std::vector<std::int32_t> prompt(512);
    for (std::size_t i = 0; i < prompt.size(); ++i) prompt[i] = std::int32_t((i * 7919) % spec.V);
    std::vector<float> logits(spec.V);
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
            tok = std::int32_t((tok * 31 + 7) % spec.V);
        }
        rounds.push_back(double(n_decode) / seconds_since(t0));
    }
    std::sort(rounds.begin(), rounds.end());
    const double tg = rounds[1];
    std::printf("  archetype: prompt 512: %8.1f tokens/s   decode: %7.2f tokens/s  (2 threads, median of 3)\n", pp,
                tg);
    const double wb = double(decode_weight_bytes(model.weights));
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
    std::setvbuf(stdout, nullptr, _IOLBF, 0); // progress shows when piped (meson test --benchmark)
    bool small = true, large = true;
    if (argc > 1) {
        small = std::string(argv[1]) == "small";
        large = std::string(argv[1]) == "large";
    }
    state_vs_length();
    double bw;
    {
        thread_pool pool(2);
        bw = archetype::bench_util::read_bandwidth_gbs(pool);
    }
    if (small) bench("small", {.version = 6, .C = 768, .N = 64, .L = 12, .V = 65536, .F = 2688, .DM = 32, .DD = 64, .f16 = true}, 32, bw);
    if (large) bench("large", {.version = 6, .C = 2048, .N = 64, .L = 24, .V = 65536, .F = 7168, .DM = 32, .DD = 64, .f16 = true}, 8, bw);
    return 0;
}
