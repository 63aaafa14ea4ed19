// Decoder throughput, 2 threads, on seeded random-weight GGUFs written by
// archetype's GGUF writer (F32) and quantised by gguf::quantize_file:
//   SmolLM2-135M shape (576 dim, 30 layers, 9/3 heads, FFN 1536, vocab 49152) in F32, F16, Q8_0;
//   TinyLlama-1.1B shape (2048 dim, 22 layers, 32/4 heads, FFN 5632, vocab 32000) in Q8_0, Q4_0:
//   prefill 512 tokens, decode 128 tokens, decode 32 tokens at depth 2048, each next to the
//   read bandwidth and the bound it sets (bytes per token / bandwidth), in three interleaved
//   rounds (ours, llama-bench, a bandwidth probe), medians;
//   static vs dynamic dimensions; SlidingWindow<512> + RollingCache vs FullCache at depth 512 / 4096.
// With LLAMA_BENCH set (path of llama-bench), runs it on the same files (-t 2, -p 512 -n 128,
// -n 32 -d 2048) and prints archetype / llama.cpp ratios.
//
// One preset per executable (compile time: each preset instantiates the whole model):
// this file is compiled once per ARCHETYPE_BENCH_PRESET (see meson.build):
//   1 smol          Decoder<GQA<9,3,64>, RoPE, Causal, FullCache, SwiGLUWith<1536>>   F32 / Q8_0 / F16
//   2 smol_dynamic  Decoder<GQA<dynamic,dynamic>, RoPE>                              Q8_0 (static vs dynamic; at depth 512 / 4096)
//   3 smol_swa      SlidingWindow<512> + RollingCache                                Q8_0 at depth 512 / 4096
//   4 smol_swa_full SlidingWindow<512> + FullCache                                   Q8_0 at depth 512 / 4096
//   5 smol_causal_depth  the smol preset at depth 512 / 4096 (+ llama.cpp full attention)
//   6 tiny          Decoder<GQA<32,4,64>, RoPE, Causal, FullCache, SwiGLUWith<5632>> Q8_0 / Q4_0
//   7 olmoe         presets::OLMoE at OLMoE-1B-7B's shape (64 experts, 8 per token)  Q4_0 / Q4_K_M
//                   (Q4_K_M made by llama-quantize from the Q4_0 file when present: see the run's message)
//                   (issue 39: decode reads the selected experts only; bound from the active bytes)
// Files are written once under $TMPDIR/archetype_bench_decoder (ARCHETYPE_BENCH_DIR) and shared.
// Usage: bench_decoder_<preset> [--quick]
#include "decoder_bench.hpp"
#include "level.hpp"
#if ARCHETYPE_BENCH_PRESET == 7
#include "archetype/models/presets/olmoe.hpp"
#endif

#ifndef ARCHETYPE_BENCH_PRESET
#define ARCHETYPE_BENCH_PRESET 1
#endif

using namespace archetype;
using namespace decoder_bench;

namespace {
#if ARCHETYPE_BENCH_PRESET == 1 || ARCHETYPE_BENCH_PRESET == 5
using Preset = Decoder<GQA<9, 3, 64>, RoPE, Causal, FullCache, SwiGLUWith<1536>>;
#elif ARCHETYPE_BENCH_PRESET == 2
using Preset = Decoder<GQA<dynamic, dynamic>, RoPE>;
#elif ARCHETYPE_BENCH_PRESET == 3
using Preset = Decoder<GQA<9, 3, 64>, RoPE, SlidingWindow<512>, RollingCache, SwiGLUWith<1536>>;
#elif ARCHETYPE_BENCH_PRESET == 4
using Preset = Decoder<GQA<9, 3, 64>, RoPE, SlidingWindow<512>, FullCache, SwiGLUWith<1536>>;
#elif ARCHETYPE_BENCH_PRESET == 6
using Preset = Decoder<GQA<32, 4, 64>, RoPE, Causal, FullCache, SwiGLUWith<5632>>;
#elif ARCHETYPE_BENCH_PRESET == 7
using Preset = presets::olmoe_architecture; // the registry entry: OLMoE with its conventions (NeoX RoPE)
#else
#error "ARCHETYPE_BENCH_PRESET must be 1..7"
#endif

#if ARCHETYPE_BENCH_PRESET >= 2 && ARCHETYPE_BENCH_PRESET <= 5
/// Decode of 32 tokens at depth 512 and 4096 (the sliding-window comparison).
void at_depths(const char* what, const std::string& q8) {
    const auto m = load_model<Preset>(q8);
    warm_up(m);
    for (std::size_t d : {std::size_t(512), std::size_t(4096)}) {
        const auto r = run(m, d, 32, d + 32);
        std::printf("    %s: depth %4zu decode %7.2f t/s\n", what, d, r.decode);
    }
}
#endif
} // namespace

int main(int argc, char** argv) {
    archetype::bench_util::announce_level();
    bool quick = false;
    for (int i = 1; i < argc; ++i)
        if (std::string(argv[i]) == "--quick") quick = true;
    [[maybe_unused]] thread_pool bw_pool(2);
    [[maybe_unused]] const char* lb = std::getenv("LLAMA_BENCH");
    const std::size_t n_tg = quick ? 32 : 128, depth = quick ? 0 : 2048;
    [[maybe_unused]] const int rounds = quick ? 1 : 3; // interleaved with llama-bench, medians
    std::printf("decoder benchmark, %zu threads (ARCHETYPE_BENCH_THREADS). pp512 = one 512-token prefill; tg = decode of %zu tokens from an empty "
                "cache (llama-bench's tgN); tg@depth = 32 "
                "tokens after %zu; bound = read bandwidth / bytes read per token (weights, + KV at depth)\n",
                bench_threads(), n_tg, depth);
#if ARCHETYPE_BENCH_PRESET == 1
    std::printf("\nSmolLM2-135M shape (576 dim, 30 layers, 9/3 heads, FFN 1536, vocab 49152), static dims:\n");
    header(depth);
    const auto sp = smol_spec();
    bench_file<Preset>("F32", model_file("smol", ggml_type::F32), sp, n_tg, depth, lb, bw_pool, rounds);
    bench_file<Preset>("Q8_0", model_file("smol", ggml_type::Q8_0), sp, n_tg, depth, lb, bw_pool, rounds);
    if (!quick) bench_file<Preset>("F16", model_file("smol", ggml_type::F16), sp, n_tg, depth, lb, bw_pool, rounds);
#elif ARCHETYPE_BENCH_PRESET == 2
    // compare with bench_decoder_smol's static Q8_0 row (same file, same prompt)
    const auto m = load_model<Preset>(model_file("smol", ggml_type::Q8_0));
    warm_up(m);
    const auto r = tg_and_pp(m, n_tg);
    std::printf("\nSmolLM2 shape Q8_0, dynamic dims (GQA<dynamic,dynamic>): pp512 %.1f t/s, tg %.2f t/s\n", r.prefill,
                r.decode);
    // against bench_decoder_smol_causal_depth (the same model with GQA<9,3,64>): attention at depth
    if (!quick) at_depths("dynamic dims, Causal+FullCache", model_file("smol", ggml_type::Q8_0));
#elif ARCHETYPE_BENCH_PRESET == 3
    std::printf("\nSmolLM2 shape Q8_0, decode of 32 tokens (the window keeps attention and cache at 512 cells):\n");
    at_depths("SlidingWindow<512>+RollingCache", model_file("smol", ggml_type::Q8_0));
#elif ARCHETYPE_BENCH_PRESET == 4
    std::printf("\nSmolLM2 shape Q8_0, decode of 32 tokens:\n");
    at_depths("SlidingWindow<512>+FullCache", model_file("smol", ggml_type::Q8_0));
#elif ARCHETYPE_BENCH_PRESET == 5
    std::printf("\nSmolLM2 shape Q8_0, decode of 32 tokens:\n");
    const std::string q8 = model_file("smol", ggml_type::Q8_0);
    at_depths("Causal+FullCache", q8);
    if (lb) {
        const auto l = llama_bench(lb, q8, 32, 4096, 32);
        std::printf("    llama.cpp (full attention, F16 KV): depth 0 %.2f t/s, depth 4096 %.2f t/s\n", l.decode,
                    l.decode_depth);
    }
#elif ARCHETYPE_BENCH_PRESET == 6
    std::printf("\nTinyLlama-1.1B shape (2048 dim, 22 layers, 32/4 heads, FFN 5632, vocab 32000):\n");
    header(depth);
    const auto tl = tiny_spec();
    const std::string q8 = model_file("tiny", ggml_type::Q8_0), q4 = model_file("tiny", ggml_type::Q4_0);
    bench_file<Preset>("Q8_0", q8, tl, n_tg, depth, lb, bw_pool, rounds);
    bench_file<Preset>("Q4_0", q4, tl, n_tg, depth, lb, bw_pool, rounds);
#elif ARCHETYPE_BENCH_PRESET == 7
    std::printf("\nOLMoE-1B-7B shape (2048 dim, 16 layers, 16 heads, 64 experts x 1024, 8 per token, vocab 50304);\n"
                "bound = bandwidth / the active bytes of a token (the 8 experts it selects):\n");
    header(0);
    const auto om = olmoe_spec();
    bench_file<Preset>("Q4_0", model_file("olmoe", ggml_type::Q4_0), om, n_tg, 0, lb, bw_pool, rounds);
    // archetype quantize cannot write Q4_K (a K-quant's scales need llama.cpp's search);
    // llama-quantize makes it from the Q4_0 file, outside the project
    const std::string q4k = bench_dir() + "/olmoe-Q4_K.gguf";
    if (!quick && exists(q4k)) bench_file<Preset>("Q4_K", q4k, om, n_tg, 0, lb, bw_pool, rounds);
    else if (!quick)
        std::printf("  Q4_K: not run; make it once with\n    llama-quantize --allow-requantize %s %s Q4_K_M\n",
                    model_file("olmoe", ggml_type::Q4_0).c_str(), q4k.c_str());
#endif
    return 0;
}
