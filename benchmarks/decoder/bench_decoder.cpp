// Decoder throughput on seeded random-weight GGUFs at SmolLM2-135M shape (576
// dim, 30 layers, 9/3 heads, FFN 1536, vocab 49152), written by archetype's
// GGUF writer (F32) and quantised by gguf::quantize_file (F16, Q8_0):
//   prefill 512 tokens, decode 128 tokens (tokens/s, 2 threads),
//   decode at depth 2048, and SlidingWindow<512> + RollingCache vs FullCache.
// With LLAMA_BENCH set (path of llama-bench), runs it on the same files
// (-p 512 -n 128 -t 2) and prints archetype / llama.cpp ratios.
// Usage: bench_decoder [--quick] [--keep DIR]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <span>
#include <string>
#include <vector>
#include <unistd.h>

#include "archetype/io/gguf_quantize.hpp"
#include "archetype/models/decoder_model.hpp"
#include "archetype/runtime/decoder_session.hpp"
#include "random_decoder.hpp"

using namespace archetype;
using clk = std::chrono::steady_clock;

namespace {
double seconds_since(clk::time_point t0) { return std::chrono::duration<double>(clk::now() - t0).count(); }

std::vector<std::int32_t> prompt(std::size_t n, std::size_t vocab) {
    std::vector<std::int32_t> t(n);
    for (std::size_t i = 0; i < n; ++i) t[i] = std::int32_t(random_decoder::splitmix(i) % vocab);
    return t;
}

struct result {
    double prefill = 0, decode = 0;
};

/// prefill `n_prefill` then decode `n_decode` tokens (tokens/s of each).
template <class D>
result run(const decoder_model<D>& m, std::size_t n_prefill, std::size_t n_decode, std::size_t n_ctx) {
    auto s = session(m, {.n_threads = 2, .max_sequences = 1, .n_ctx = n_ctx});
    std::vector<float> logits(m.n_vocab());
    const auto p = prompt(n_prefill, m.n_vocab());
    result r;
    auto t0 = clk::now();
    s.prefill(0, p, logits.data(), logits_rows::last);
    r.prefill = double(n_prefill) / seconds_since(t0);
    const int seq = 0;
    std::int32_t tok = 1;
    t0 = clk::now();
    for (std::size_t i = 0; i < n_decode; ++i) {
        s.decode(std::span<const int>(&seq, 1), std::span<const std::int32_t>(&tok, 1), logits.data());
        tok = std::int32_t(std::max_element(logits.begin(), logits.end()) - logits.begin());
    }
    r.decode = double(n_decode) / seconds_since(t0);
    return r;
}

/// llama-bench's tokens/s for pp512 and tg128, or {0, 0}.
result llama_bench(const std::string& bench, const std::string& file) {
    const std::string cmd = bench + " -m " + file + " -p 512 -n 128 -t 2 -o json 2>/dev/null";
    std::unique_ptr<FILE, int (*)(FILE*)> p(popen(cmd.c_str(), "r"), pclose);
    if (!p) return {};
    std::string out;
    char buf[4096];
    while (std::size_t n = fread(buf, 1, sizeof buf, p.get())) out.append(buf, n);
    result r;
    // each entry has "n_prompt": N, "n_gen": M, ..., "avg_ts": X
    std::size_t pos = 0;
    while ((pos = out.find("\"n_prompt\"", pos)) != std::string::npos) {
        const long n_prompt = std::strtol(out.c_str() + out.find(':', pos) + 1, nullptr, 10);
        const std::size_t g = out.find("\"n_gen\"", pos), a = out.find("\"avg_ts\"", pos);
        if (g == std::string::npos || a == std::string::npos) break;
        const long n_gen = std::strtol(out.c_str() + out.find(':', g) + 1, nullptr, 10);
        const double ts = std::strtod(out.c_str() + out.find(':', a) + 1, nullptr);
        if (n_prompt > 0 && n_gen == 0) r.prefill = ts;
        if (n_gen > 0 && n_prompt == 0) r.decode = ts;
        pos = a;
    }
    return r;
}

using Smol = Decoder<GQA<9, 3, 64>, RoPE, Causal, FullCache, SwiGLUWith<1536>>;
using SmolDyn = Decoder<GQA<dynamic, dynamic>, RoPE>;
using SmolSwa = Decoder<GQA<9, 3, 64>, RoPE, SlidingWindow<512>, RollingCache, SwiGLUWith<1536>>;
using SmolSwaFull = Decoder<GQA<9, 3, 64>, RoPE, SlidingWindow<512>, FullCache, SwiGLUWith<1536>>;
} // namespace

int main(int argc, char** argv) {
    bool quick = false;
    std::string dir = std::string(std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp") + "/archetype_bench_decoder_" +
                      std::to_string(::getpid());
    bool keep = false;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--quick") quick = true;
        else if (a == "--keep" && i + 1 < argc) dir = argv[++i], keep = true;
    }
    std::system((std::string("mkdir -p ") + dir).c_str());
    random_decoder::spec sp;
    sp.n_vocab = 49152;
    sp.n_embd = 576;
    sp.n_layer = 30;
    sp.n_head = 9;
    sp.n_head_kv = 3;
    sp.n_ff = 1536;
    sp.n_ctx = 8192;
    sp.seed = 135;
    sp.scale = 0.05f;
    const std::string f32 = dir + "/smol-f32.gguf", q8 = dir + "/smol-q8_0.gguf", f16 = dir + "/smol-f16.gguf";
    auto t0 = clk::now();
    if (access(f32.c_str(), R_OK) != 0) random_decoder::write(sp, f32);
    if (access(q8.c_str(), R_OK) != 0) gguf::quantize_file(f32, q8, ggml_type::Q8_0);
    if (!quick && access(f16.c_str(), R_OK) != 0) gguf::quantize_file(f32, f16, ggml_type::F16);
    std::printf("decoder benchmark: SmolLM2-135M shape (576 dim, 30 layers, 9/3 heads, FFN 1536, vocab 49152), 2 threads\n");
    std::printf("  files written in %.1f s under %s\n", seconds_since(t0), dir.c_str());
    const char* lb = std::getenv("LLAMA_BENCH");
    const std::size_t n_pp = 512, n_tg = quick ? 32 : 128;

    struct file_case { const char* name; std::string path; };
    std::vector<file_case> files = {{"F32", f32}, {"Q8_0", q8}};
    if (!quick) files.push_back({"F16", f16});
    std::printf("\n  %-6s %-22s %12s %12s", "type", "structure", "prefill t/s", "decode t/s");
    if (lb) std::printf(" %12s %12s %8s %8s", "llama pp", "llama tg", "pp ratio", "tg ratio");
    std::printf("\n");
    for (const auto& f : files) {
        const auto m = load_model<Smol>(f.path);
        const auto r = run(m, n_pp, n_tg, n_pp + n_tg);
        std::printf("  %-6s %-22s %12.1f %12.2f", f.name, "static GQA<9,3,64>", r.prefill, r.decode);
        if (lb) {
            const auto l = llama_bench(lb, f.path);
            std::printf(" %12.1f %12.2f %8.2f %8.2f", l.prefill, l.decode, l.prefill > 0 ? r.prefill / l.prefill : 0.0,
                        l.decode > 0 ? r.decode / l.decode : 0.0);
        }
        std::printf("\n");
        if (std::string(f.name) == "Q8_0") {
            const auto md = load_model<SmolDyn>(f.path);
            const auto rd = run(md, n_pp, n_tg, n_pp + n_tg);
            std::printf("  %-6s %-22s %12.1f %12.2f\n", f.name, "dynamic dims", rd.prefill, rd.decode);
        }
    }
    if (!quick) {
        // decode at depth: the window keeps attention (and the cache) at 512 cells
        const std::size_t depth = 2048, n = 32;
        std::printf("\n  decode at depth %zu (Q8_0, %zu tokens):\n", depth, n);
        const auto mf = load_model<Smol>(q8);
        const auto rf = run(mf, depth, n, depth + n);
        std::printf("    %-34s prefill %8.1f t/s   decode %8.2f t/s\n", "Causal + FullCache", rf.prefill, rf.decode);
        const auto ms = load_model<SmolSwa>(q8);
        const auto rs = run(ms, depth, n, depth + n);
        std::printf("    %-34s prefill %8.1f t/s   decode %8.2f t/s\n", "SlidingWindow<512> + RollingCache", rs.prefill,
                    rs.decode);
        const auto msf = load_model<SmolSwaFull>(q8);
        const auto rsf = run(msf, depth, n, depth + n);
        std::printf("    %-34s prefill %8.1f t/s   decode %8.2f t/s\n", "SlidingWindow<512> + FullCache", rsf.prefill,
                    rsf.decode);
        const auto r512 = run(ms, 512, n, 512 + n);
        std::printf("    %-34s decode at depth 512: %8.2f t/s (flat: %.2f of it at depth %zu)\n",
                    "SlidingWindow<512> + RollingCache", r512.decode, rs.decode / r512.decode, depth);
    }
    if (!keep) std::system((std::string("rm -rf ") + dir).c_str());
    return 0;
}
