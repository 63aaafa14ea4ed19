// Decoder throughput, 2 threads, on seeded random-weight GGUFs written by
// archetype's GGUF writer (F32) and quantised by gguf::quantize_file:
//   SmolLM2-135M shape (576 dim, 30 layers, 9/3 heads, FFN 1536, vocab 49152) in F32, F16, Q8_0;
//   TinyLlama-1.1B shape (2048 dim, 22 layers, 32/4 heads, FFN 5632, vocab 32000) in Q8_0, Q4_0:
//   prefill 512 tokens, decode 128 tokens, decode 32 tokens at depth 2048, each next to the
//   read bandwidth measured just before and the bound it sets (bytes per token / bandwidth);
//   static vs dynamic dimensions; SlidingWindow<512> + RollingCache vs FullCache at depth 512 / 4096.
// With LLAMA_BENCH set (path of llama-bench), runs it on the same files (-t 2, -p 512 -n 128,
// -n 32 -d 2048) and prints archetype / llama.cpp ratios.
// Usage: bench_decoder [--quick] [--no-tinyllama] [--keep DIR]
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
#include "bandwidth.hpp"

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

/// llama-bench's tokens/s (pp512, tg N, tg N at depth D), 0 where absent or not run.
struct llama_result {
    double prefill = 0, decode = 0, decode_depth = 0;
};
llama_result llama_bench(const std::string& bench, const std::string& file, std::size_t n_gen, std::size_t depth,
                         std::size_t n_depth_gen) {
    llama_result r;
    auto run = [&](const std::string& args) {
        const std::string cmd = bench + " -m " + file + " " + args + " -t 2 -r 3 -o json 2>/dev/null";
        std::unique_ptr<FILE, int (*)(FILE*)> p(popen(cmd.c_str(), "r"), pclose);
        std::string out;
        if (!p) return out;
        char buf[4096];
        while (std::size_t n = fread(buf, 1, sizeof buf, p.get())) out.append(buf, n);
        return out;
    };
    auto field = [](const std::string& out, std::size_t from, const char* key) -> double {
        const std::size_t k = out.find(key, from);
        if (k == std::string::npos) return -1;
        return std::strtod(out.c_str() + out.find(':', k) + 1, nullptr);
    };
    // each entry has "n_prompt": N, "n_gen": M, "n_depth": D, ..., "avg_ts": X
    auto parse = [&](const std::string& out) {
        std::size_t pos = 0;
        while ((pos = out.find("\"n_prompt\"", pos)) != std::string::npos) {
            const double n_prompt = field(out, pos, "\"n_prompt\""), n_gen_ = field(out, pos, "\"n_gen\""),
                         n_depth = field(out, pos, "\"n_depth\""), ts = field(out, pos, "\"avg_ts\"");
            if (n_prompt > 0 && n_gen_ == 0) r.prefill = ts;
            if (n_gen_ > 0 && n_prompt == 0) (n_depth > 0 ? r.decode_depth : r.decode) = ts;
            pos = out.find("\"avg_ts\"", pos);
            if (pos == std::string::npos) break;
        }
    };
    parse(run("-p 512 -n " + std::to_string(n_gen)));
    if (depth) parse(run("-p 0 -n " + std::to_string(n_depth_gen) + " -d " + std::to_string(depth)));
    return r;
}

/// Bytes a decode step reads from the weights: every matrix once, plus one
/// row of the token embedding (all of it when the output is tied to it).
double weight_bytes_per_token(const std::string& path) {
    const auto f = gguf::file::open(path);
    bool tied = true;
    for (const auto& t : f.tensors()) tied = tied && t.name != "output.weight";
    double b = 0;
    for (const auto& t : f.tensors())
        b += (t.name == "token_embd.weight" && !tied) ? double(t.n_bytes) / double(t.ne.back()) : double(t.n_bytes);
    return b;
}

using Smol = Decoder<GQA<9, 3, 64>, RoPE, Causal, FullCache, SwiGLUWith<1536>>;
using SmolDyn = Decoder<GQA<dynamic, dynamic>, RoPE>;
using SmolSwa = Decoder<GQA<9, 3, 64>, RoPE, SlidingWindow<512>, RollingCache, SwiGLUWith<1536>>;
using SmolSwaFull = Decoder<GQA<9, 3, 64>, RoPE, SlidingWindow<512>, FullCache, SwiGLUWith<1536>>;

using Tiny = Decoder<GQA<32, 4, 64>, RoPE, Causal, FullCache, SwiGLUWith<5632>>;

struct row {
    const char* type;
    std::string path;
};

/// One model file: ours (static dims) and llama.cpp's pp512 / tg / tg at depth, the
/// read bandwidth measured right before, and the fractions of the bandwidth bound.
template <class D>
void bench_file(const row& f, const random_decoder::spec& sp, std::size_t n_tg, std::size_t depth, const char* lb,
                thread_pool& bw_pool) {
    const double bw = bench_util::read_bandwidth_gbs(bw_pool, std::size_t(1) << 29, 3);
    const double wb = weight_bytes_per_token(f.path);
    const std::size_t hd = sp.n_embd / sp.n_head;
    const double kv_per_pos = double(sp.n_layer) * 2.0 * double(sp.n_head_kv * hd) * sizeof(float);
    const auto m = load_model<D>(f.path);
    const auto r = run(m, 512, n_tg, 512 + n_tg);
    const auto rd = depth ? run(m, depth, 32, depth + 32) : result{};
    const double bound = bw * 1e9 / wb, bound_d = bw * 1e9 / (wb + kv_per_pos * double(depth));
    std::printf("  %-6s ours  %9.1f %9.2f %11.2f   bw %5.1f GB/s: tg %.2f of bound %.1f t/s", f.type, r.prefill,
                r.decode, rd.decode, bw, r.decode / bound, bound);
    if (depth) std::printf(", at depth %.2f of %.1f", rd.decode / bound_d, bound_d);
    std::printf("\n");
    if (lb) {
        const auto l = llama_bench(lb, f.path, n_tg, depth, 32);
        auto ratio = [](double a, double b) { return b > 0 ? a / b : 0.0; };
        std::printf("  %-6s llama %9.1f %9.2f %11.2f   ratio pp %.2f  tg %.2f  tg@depth %.2f\n", f.type, l.prefill,
                    l.decode, l.decode_depth, ratio(r.prefill, l.prefill), ratio(r.decode, l.decode),
                    ratio(rd.decode, l.decode_depth));
    }
}

void header(std::size_t n_tg, std::size_t depth) {
    std::printf("  %-6s %-5s %9s %9s %11s\n", "type", "", "pp512 t/s", "tg t/s", depth ? "tg@depth t/s" : "");
    (void)n_tg;
}
} // namespace

int main(int argc, char** argv) {
    bool quick = false, tiny = true;
    std::string dir = std::string(std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp") + "/archetype_bench_decoder_" +
                      std::to_string(::getpid());
    bool keep = false;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--quick") quick = true;
        else if (a == "--no-tinyllama") tiny = false;
        else if (a == "--keep" && i + 1 < argc) dir = argv[++i], keep = true;
    }
    if (quick) tiny = false;
    std::system((std::string("mkdir -p ") + dir).c_str());
    thread_pool bw_pool(2);
    const char* lb = std::getenv("LLAMA_BENCH");
    const std::size_t n_tg = quick ? 32 : 128, depth = quick ? 0 : 2048;

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
    std::printf("decoder benchmark, 2 threads; files written in %.1f s under %s\n", seconds_since(t0), dir.c_str());
    std::printf("tg = decode of %zu tokens after a 512-token prompt; tg@depth = 32 tokens after %zu; bound = read bandwidth / "
                "bytes read per token (weights, + KV at depth)\n",
                n_tg, depth);

    std::printf("\nSmolLM2-135M shape (576 dim, 30 layers, 9/3 heads, FFN 1536, vocab 49152):\n");
    header(n_tg, depth);
    std::vector<row> files = {{"F32", f32}, {"Q8_0", q8}};
    if (!quick) files.push_back({"F16", f16});
    for (const auto& f : files) bench_file<Smol>(f, sp, n_tg, depth, lb, bw_pool);
    {
        const auto md = load_model<SmolDyn>(q8);
        const auto rd = run(md, 512, n_tg, 512 + n_tg);
        const auto ms = load_model<Smol>(q8);
        const auto rs = run(ms, 512, n_tg, 512 + n_tg);
        std::printf("  Q8_0 static GQA<9,3,64>: pp %.1f tg %.2f | dynamic dims (GQA<dynamic,dynamic>): pp %.1f tg %.2f\n",
                    rs.prefill, rs.decode, rd.prefill, rd.decode);
    }
    if (!quick) {
        // the window keeps attention (and the cache) at 512 cells
        const std::size_t n = 32;
        std::printf("\n  SmolLM2 shape Q8_0, decode of %zu tokens at depth 512 and 4096:\n", n);
        const auto ms = load_model<SmolSwa>(q8);
        const auto msf = load_model<SmolSwaFull>(q8);
        const auto mf = load_model<Smol>(q8);
        for (std::size_t d : {std::size_t(512), std::size_t(4096)}) {
            const auto a = run(ms, d, n, d + n), b = run(msf, d, n, d + n), c = run(mf, d, n, d + n);
            std::printf("    depth %4zu: SlidingWindow<512>+RollingCache %7.2f t/s | SlidingWindow<512>+FullCache %7.2f | "
                        "Causal+FullCache %7.2f\n",
                        d, a.decode, b.decode, c.decode);
        }
        if (lb) {
            const auto l = llama_bench(lb, q8, 32, 4096, 32);
            std::printf("    llama.cpp (full attention, F16 KV): depth 0 %.2f t/s, depth 4096 %.2f t/s\n", l.decode,
                        l.decode_depth);
        }
    }
    if (tiny) {
        random_decoder::spec tl;
        tl.n_vocab = 32000;
        tl.n_embd = 2048;
        tl.n_layer = 22;
        tl.n_head = 32;
        tl.n_head_kv = 4;
        tl.n_ff = 5632;
        tl.n_ctx = 4096;
        tl.seed = 1100;
        tl.scale = 0.02f;
        const std::string tf32 = dir + "/tiny-f32.gguf", tq8 = dir + "/tiny-q8_0.gguf", tq4 = dir + "/tiny-q4_0.gguf";
        t0 = clk::now();
        if (access(tq8.c_str(), R_OK) != 0 || access(tq4.c_str(), R_OK) != 0) {
            random_decoder::write(tl, tf32);
            gguf::quantize_file(tf32, tq8, ggml_type::Q8_0);
            gguf::quantize_file(tf32, tq4, ggml_type::Q4_0);
            std::remove(tf32.c_str());
        }
        std::printf("\nTinyLlama-1.1B shape (2048 dim, 22 layers, 32/4 heads, FFN 5632, vocab 32000; files in %.1f s):\n",
                    seconds_since(t0));
        header(n_tg, depth);
        for (const auto& f : {row{"Q8_0", tq8}, row{"Q4_0", tq4}}) bench_file<Tiny>(f, tl, n_tg, depth, lb, bw_pool);
    }
    if (!keep) std::system((std::string("rm -rf ") + dir).c_str());
    return 0;
}
