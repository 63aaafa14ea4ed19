#pragma once
// Shared parts of the decoder benchmarks (one preset per executable, see
// bench_decoder.cpp): the model files, our prefill/decode timing, llama-bench's
// numbers on the same file, the bandwidth bound.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>
#include <unistd.h>

#include "archetype/io/gguf_quantize.hpp"
#include "archetype/models/decoder_model.hpp"
#include "archetype/runtime/decoder_session.hpp"
#include "random_decoder.hpp"
#include "bandwidth.hpp"

namespace decoder_bench {
using namespace archetype;
using clk = std::chrono::steady_clock;

inline double seconds_since(clk::time_point t0) { return std::chrono::duration<double>(clk::now() - t0).count(); }

inline std::vector<std::int32_t> prompt(std::size_t n, std::size_t vocab) {
    std::vector<std::int32_t> t(n);
    for (std::size_t i = 0; i < n; ++i) t[i] = std::int32_t(random_decoder::splitmix(i) % vocab);
    return t;
}

struct result {
    double prefill = 0, decode = 0;
};

/// Compute threads of every run, ours and llama-bench's: ARCHETYPE_BENCH_THREADS (a
/// thread-scaling table, docs/performance.md), else 2 (the figures of the docs).
inline std::size_t bench_threads() {
    const char* e = std::getenv("ARCHETYPE_BENCH_THREADS");
    const long n = e ? std::strtol(e, nullptr, 10) : 2;
    return n >= 1 && n <= 1024 ? std::size_t(n) : 2;
}

/// prefill `n_prefill` then decode `n_decode` tokens (tokens/s of each).
template <class D>
result run(const decoder_model<D>& m, std::size_t n_prefill, std::size_t n_decode, std::size_t n_ctx,
           kv_cache_type kv = kv_cache_type::f32) {
    auto s = session(m, {.n_threads = bench_threads(), .max_sequences = 1, .n_ctx = n_ctx, .kv_type = kv});
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

/// pp512 (a 512-token prompt in one prefill) and tg n_tg (n_tg tokens decoded from
/// an empty cache after one prompt token): the workloads of llama-bench's
/// `-p 512 -n N` (its tgN starts at depth 0; decode at depth is measured apart).
template <class D>
result tg_and_pp(const decoder_model<D>& m, std::size_t n_tg) {
    return {run(m, 512, 0, 512).prefill, run(m, 1, n_tg, 1 + n_tg).decode};
}

/// A short prefill and decode on a throwaway session before timing: the first pass
/// over a freshly mapped file page-faults every weight page (0.1-0.4 s for the
/// 600 MB F32 file, half of a 512-token prefill); llama-bench warms up too.
template <class D>
void warm_up(const decoder_model<D>& m) {
    (void)run(m, 8, 1, 16);
}

/// llama-bench's tokens/s (pp512, tg N, tg N at depth D), 0 where absent or not run.
struct llama_result {
    double prefill = 0, decode = 0, decode_depth = 0;
};
/// One llama-bench run on `file` with `args` (its -p / -n / -d), -t bench_threads(), `reps` repetitions.
inline llama_result llama_bench_run(const std::string& bench, const std::string& file, const std::string& args,
                                    int reps = 3) {
    llama_result r;
    const std::string cmd = bench + " -m " + file + " " + args + " -t " + std::to_string(bench_threads()) + " -r " + std::to_string(reps) + " -o json 2>/dev/null";
    std::string out;
    {
        std::unique_ptr<FILE, int (*)(FILE*)> p(popen(cmd.c_str(), "r"), pclose);
        if (!p) return r;
        char buf[4096];
        while (std::size_t n = fread(buf, 1, sizeof buf, p.get())) out.append(buf, n);
    }
    auto field = [&](std::size_t from, const char* key) -> double {
        const std::size_t k = out.find(key, from);
        if (k == std::string::npos) return -1;
        return std::strtod(out.c_str() + out.find(':', k) + 1, nullptr);
    };
    // each entry has "n_prompt": N, "n_gen": M, "n_depth": D, ..., "avg_ts": X
    std::size_t pos = 0;
    while ((pos = out.find("\"n_prompt\"", pos)) != std::string::npos) {
        const double n_prompt = field(pos, "\"n_prompt\""), n_gen_ = field(pos, "\"n_gen\""),
                     n_depth = field(pos, "\"n_depth\""), ts = field(pos, "\"avg_ts\"");
        if (n_prompt > 0 && n_gen_ == 0) r.prefill = ts;
        if (n_gen_ > 0 && n_prompt == 0) (n_depth > 0 ? r.decode_depth : r.decode) = ts;
        pos = out.find("\"avg_ts\"", pos);
        if (pos == std::string::npos) break;
    }
    return r;
}
/// pp512 + tg n_gen, and tg n_depth_gen at depth (when depth > 0).
inline llama_result llama_bench(const std::string& bench, const std::string& file, std::size_t n_gen, std::size_t depth,
                                std::size_t n_depth_gen, int reps = 3) {
    llama_result r = llama_bench_run(bench, file, "-p 512 -n " + std::to_string(n_gen), reps);
    if (depth)
        r.decode_depth = llama_bench_run(bench, file, "-p 0 -n " + std::to_string(n_depth_gen) + " -d " + std::to_string(depth),
                                         reps).decode_depth;
    return r;
}

inline double median(std::vector<double> v) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

/// Bytes a decode step reads from the weights: every matrix once, plus one
/// row of the token embedding (all of it when the output is tied to it); of a
/// mixture of experts' tensors (`*_exps`) the expert_used_count of expert_count
/// experts a token selects (the active parameters).
inline double weight_bytes_per_token(const std::string& path) {
    const auto f = gguf::file::open(path);
    const std::string arch = f.get<std::string>("general.architecture");
    const double E = f.get_or<std::uint32_t>(arch + ".expert_count", 1),
                 K = f.get_or<std::uint32_t>(arch + ".expert_used_count", 1);
    bool tied = true;
    for (const auto& t : f.tensors()) tied = tied && t.name != "output.weight";
    double b = 0;
    for (const auto& t : f.tensors()) {
        const bool experts = t.name.find("_exps.") != std::string::npos;
        b += (t.name == "token_embd.weight" && !tied) ? double(t.n_bytes) / double(t.ne.back())
             : experts                                ? double(t.n_bytes) * K / E
                                                      : double(t.n_bytes);
    }
    return b;
}


/// `rounds` interleaved rounds of ours (pp512 and tg128 on `m`), llama-bench's on `path` when
/// `lb` names it, and a read-bandwidth probe; prints one line `label: ...` with the medians, the
/// decode bound (bandwidth over the weight bytes a token reads plus twice `state_bytes`, a
/// recurrent state read and written per token) and the ratios to llama.cpp.
template <class D>
void versus_llama(const std::string& label, const decoder_model<D>& m, const std::string& path, double state_bytes,
                  int rounds, const char* lb, thread_pool& bw_pool) {
    const double wb = weight_bytes_per_token(path);
    std::vector<double> pp, tg, lpp, ltg, bw;
    for (int r = 0; r < rounds; ++r) {
        const auto ours = tg_and_pp(m, 128);
        pp.push_back(ours.prefill);
        tg.push_back(ours.decode);
        if (lb) {
            const auto l = llama_bench_run(lb, path, "-p 512 -n 128", 1);
            lpp.push_back(l.prefill);
            ltg.push_back(l.decode);
        }
        bw.push_back(archetype::bench_util::read_bandwidth_gbs(bw_pool));
    }
    const double bound = median(bw) * 1e9 / (wb + 2 * state_bytes);
    std::printf("%s: pp512 %8.1f t/s, tg128 %7.1f t/s (bound %.1f t/s at %.1f GB/s: %.2f of it)", label.c_str(),
                median(pp), median(tg), bound, median(bw), median(tg) / bound);
    if (lb)
        std::printf(" | llama.cpp pp512 %8.1f, tg128 %7.1f | ratio pp %.2f, tg %.2f", median(lpp), median(ltg),
                    median(pp) / median(lpp), median(tg) / median(ltg));
    std::printf("\n");
    std::fflush(stdout);
}

/// The benchmark files, written once (seeded: same bytes every time) under
/// $TMPDIR/archetype_bench_decoder (or ARCHETYPE_BENCH_DIR) and reused by every
/// preset's executable; written under a temporary name and renamed, so an
/// interrupted run never leaves a truncated file behind.
inline std::string bench_dir() {
    if (const char* d = std::getenv("ARCHETYPE_BENCH_DIR")) return d;
    return std::string(std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp") + "/archetype_bench_decoder";
}
inline bool exists(const std::string& p) { return access(p.c_str(), R_OK) == 0; }
inline void publish(const std::string& tmp, const std::string& path) {
    if (std::rename(tmp.c_str(), path.c_str()) != 0) throw std::runtime_error("cannot rename " + tmp + " to " + path);
}

/// A llama-layout model shape (the other spec fields keep their defaults).
inline random_decoder::spec shape(std::size_t vocab, std::size_t embd, std::size_t layers, std::size_t heads,
                                  std::size_t heads_kv, std::size_t ff, std::size_t ctx, std::uint64_t seed, float scale) {
    random_decoder::spec s;
    s.n_vocab = vocab;
    s.n_embd = embd;
    s.n_layer = layers;
    s.n_head = heads;
    s.n_head_kv = heads_kv;
    s.n_ff = ff;
    s.n_ctx = ctx;
    s.seed = seed;
    s.scale = scale;
    return s;
}
inline random_decoder::spec smol_spec() { return shape(49152, 576, 30, 9, 3, 1536, 8192, 135, 0.05f); }   // SmolLM2-135M
inline random_decoder::spec tiny_spec() { return shape(32000, 2048, 22, 32, 4, 5632, 4096, 1100, 0.02f); } // TinyLlama-1.1B
/// OLMoE-1B-7B (allenai/OLMoE-1B-7B-0924): 2048 dim, 16 layers, 16 heads (MHA), 64 experts
/// of width 1024, 8 per token, vocab 50304: 6.9 B parameters, 1.3 B active.
inline random_decoder::spec olmoe_spec() {
    auto s = shape(50304, 2048, 16, 16, 16, 1024, 4096, 7, 0.02f);
    s.arch = "olmoe";
    s.n_expert = 64;
    s.n_expert_used = 8;
    s.qk_norm = true;
    return s;
}

/// Path of the `name` model ("smol" / "tiny" / "olmoe") in `type` (F32, F16, Q8_0, Q4_0), made if absent.
inline std::string model_file(const std::string& name, ggml_type type) {
    const std::string dir = bench_dir();
    std::system(("mkdir -p '" + dir + "'").c_str());
    const std::string f32 = dir + "/" + name + "-F32.gguf";
    const std::string path = dir + "/" + name + "-" + std::string(type_name(type)) + ".gguf";
    if (exists(path)) return path;
    const auto t0 = clk::now();
    if (name == "olmoe") { // written in its type directly (28 GB as F32)
        auto sp = olmoe_spec();
        sp.matrix_type = type;
        random_decoder::write(sp, path + ".part");
        publish(path + ".part", path);
        std::printf("(wrote %s in %.1f s)\n", path.c_str(), seconds_since(t0));
        return path;
    }
    if (!exists(f32)) {
        random_decoder::write(name == "tiny" ? tiny_spec() : smol_spec(), f32 + ".part");
        publish(f32 + ".part", f32);
    }
    if (type != ggml_type::F32) {
        gguf::quantize_file(f32, path + ".part", type);
        publish(path + ".part", path);
    }
    std::printf("(wrote %s in %.1f s)\n", path.c_str(), seconds_since(t0));
    return path;
}

/// One model file with preset D: ours (pp512 / tg / tg at depth with F32 and F16 KV)
/// and, when `lb` (LLAMA_BENCH) is set, llama-bench's numbers on the same file, in
/// `rounds` interleaved rounds (ours, llama.cpp's one repetition, a bandwidth probe),
/// each figure the median over the rounds: the machine's bandwidth swings minute to
/// minute (20-57 GB/s), so two numbers taken minutes apart compare the minutes.
template <class D>
void bench_file(const char* type, const std::string& path, const random_decoder::spec& sp, std::size_t n_tg,
                std::size_t depth, const char* lb, thread_pool& bw_pool, int rounds = 3) {
    const double wb = weight_bytes_per_token(path);
    const std::size_t hd = sp.n_embd / sp.n_head;
    const double kv_per_pos = double(sp.n_layer) * 2.0 * double(sp.n_head_kv * hd) * sizeof(float);
    const auto m = load_model<D>(path);
    warm_up(m);
    std::vector<double> probes, pp, tg, dp, dh, lpp, ltg, ldp;
    auto probe = [&] { probes.push_back(bench_util::read_bandwidth_gbs(bw_pool, std::size_t(1) << 29, 3)); };
    for (int k = 0; k < rounds; ++k) {
        probe();
        const auto r = tg_and_pp(m, n_tg);
        pp.push_back(r.prefill);
        tg.push_back(r.decode);
        if (lb) {
            const auto l = llama_bench_run(lb, path, "-p 512 -n " + std::to_string(n_tg), 1);
            lpp.push_back(l.prefill);
            ltg.push_back(l.decode);
        }
        if (!depth) continue;
        probe();
        dp.push_back(run(m, depth, 32, depth + 32).decode);
        dh.push_back(run(m, depth, 32, depth + 32, kv_cache_type::f16).decode);
        if (lb) ldp.push_back(llama_bench_run(lb, path, "-p 0 -n 32 -d " + std::to_string(depth), 1).decode_depth);
    }
    probe();
    const double bw = median(probes), bound = bw * 1e9 / wb, bound_d = bw * 1e9 / (wb + kv_per_pos * double(depth)),
                 bound_h = bw * 1e9 / (wb + kv_per_pos / 2 * double(depth));
    const double o_pp = median(pp), o_tg = median(tg), o_d = median(dp), o_h = median(dh);
    std::printf("  %-6s ours  %9.1f %9.2f %11.2f   bw %5.1f GB/s (%.1f-%.1f): tg %.2f of bound %.1f t/s", type, o_pp,
                o_tg, o_d, bw, *std::min_element(probes.begin(), probes.end()),
                *std::max_element(probes.begin(), probes.end()), o_tg / bound, bound);
    if (depth) std::printf(", at depth %.2f of %.1f", o_d / bound_d, bound_d);
    std::printf("\n");
    if (depth)
        std::printf("  %-6s ours, F16 KV cache: tg@depth %.2f t/s, %.2f of bound %.1f t/s\n", type, o_h, o_h / bound_h,
                    bound_h);
    if (lb) {
        const double l_pp = median(lpp), l_tg = median(ltg), l_d = median(ldp);
        auto ratio = [](double a, double b) { return b > 0 ? a / b : 0.0; };
        // llama-bench's KV cache is F16 by default: the like-for-like depth ratio is ours with F16 KV
        std::printf("  %-6s llama %9.1f %9.2f %11.2f   ratio pp %.2f  tg %.2f", type, l_pp, l_tg, l_d, ratio(o_pp, l_pp),
                    ratio(o_tg, l_tg));
        if (depth) std::printf("  tg@depth %.2f (F32 KV) %.2f (F16 KV, as llama)", ratio(o_d, l_d), ratio(o_h, l_d));
        std::printf("\n");
        // The same comparison paired by round (each round's two runs minutes apart at
        // most, so a bandwidth swing between rounds cancels): median of per-round ratios.
        auto paired = [&](const std::vector<double>& a, const std::vector<double>& b) {
            std::vector<double> r;
            for (std::size_t i = 0; i < std::min(a.size(), b.size()); ++i) r.push_back(ratio(a[i], b[i]));
            return r.empty() ? 0.0 : median(r);
        };
        std::printf("  %-6s paired by round (median of per-round ratios): pp %.2f  tg %.2f", type, paired(pp, lpp),
                    paired(tg, ltg));
        if (depth) std::printf("  tg@depth %.2f (F32 KV) %.2f (F16 KV)", paired(dp, ldp), paired(dh, ldp));
        std::printf("\n");
    }
    std::printf("  %-6s (medians of %d interleaved rounds; ours tg:", type, rounds);
    for (double v : tg) std::printf(" %.1f", v);
    if (lb) {
        std::printf("; llama tg:");
        for (double v : ltg) std::printf(" %.1f", v);
    }
    std::printf(")\n");
    std::fflush(stdout);
}

inline void header(std::size_t depth) {
    std::printf("  %-6s %-5s %9s %9s %11s\n", "type", "", "pp512 t/s", "tg t/s", depth ? "tg@depth t/s" : "");
}

} // namespace decoder_bench
