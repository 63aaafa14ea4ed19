// Prefill of a 512-token prompt (one prefill, ARCHETYPE_BENCH_THREADS or 2 threads) on the TinyLlama-1.1B-shape
// random files of bench_decoder_tiny (Q8_0 / Q4_0, written there or here if absent), in
// one batch numerics mode (kernels/batch_activations.hpp): `mixed` (the default: int8
// except the FFN down projection's float activations), `int8` (llama.cpp's activations on
// the int8 kernels: the GEMM tiles of quant/avx512/tile.hpp, quant/avx2/tile.hpp) or
// `exact` (float activations on the dequantised panels); or `tg128`, decode of 128 tokens
// after one prompt token (llama-bench's `-n 128`: one token per step, the int8 kernels
// whatever the mode), for the decode side of the same file. Prints the level and
// the tokens/s of each timed run after one untimed prefill: one process per mode and
// file, so that `farm-bench --vs` can alternate two builds or two modes.
// Usage: bench_prefill_modes Q8_0|Q4_0|FILE.gguf mixed|int8|exact|tg128 [runs (default 3)]
// (FILE.gguf: another TinyLlama-shape file, e.g. one llama-quantize made from tiny-F32.gguf)
#include <cstdio>
#include <cstdlib>
#include <string>

#include "decoder_bench.hpp"
#include "level.hpp"

using namespace archetype;
using namespace decoder_bench;

int main(int argc, char** argv) {
    if (argc < 3) {
        std::fprintf(stderr, "usage: %s Q8_0|Q4_0|FILE.gguf mixed|int8|exact|tg128 [runs]\n", argv[0]);
        return 2;
    }
    const std::string type = argv[1], mode = argv[2];
    const int runs = argc > 3 ? std::atoi(argv[3]) : 3;
    const bool path = type.size() > 5 && type.substr(type.size() - 5) == ".gguf";
    if ((type != "Q8_0" && type != "Q4_0" && !path) || (mode != "mixed" && mode != "exact" && mode != "int8" && mode != "tg128") || runs < 1) {
        std::fprintf(stderr, "bench_prefill_modes: expected Q8_0|Q4_0|FILE.gguf mixed|int8|exact|tg128 [runs >= 1], got '%s' '%s' '%s'\n",
                     argv[1], argv[2], argc > 3 ? argv[3] : "");
        return 2;
    }
    bench_util::announce_level();
    using Preset = Decoder<GQA<32, 4, 64>, RoPE, Causal, FullCache, SwiGLUWith<5632>>;
    const auto m = load_model<Preset>(path ? type : model_file("tiny", type == "Q8_0" ? ggml_type::Q8_0 : ggml_type::Q4_0));
    const auto acts = mode == "int8"    ? kernels::batch_activations::int8
                      : mode == "mixed" ? kernels::batch_activations::mixed
                                        : kernels::batch_activations::exact;
    if (mode == "tg128") {
        for (int i = 0; i <= runs; ++i) {
            const double tps = run(m, 1, 128, 129).decode;
            if (i > 0) std::printf("tg128 %s: %.2f tok/s\n", type.c_str(), tps);
        }
        return 0;
    }
    const std::vector<std::int32_t> p = prompt(512, m.n_vocab());
    std::vector<float> logits(m.n_vocab());
    for (int i = 0; i <= runs; ++i) {
        auto s = session(m, {.n_threads = bench_threads(), .max_sequences = 1, .n_ctx = 512, .batch_activations = acts});
        const auto t0 = clk::now();
        s.prefill(0, p, logits.data(), logits_rows::last);
        const double tps = 512.0 / seconds_since(t0);
        if (i > 0) std::printf("pp512 %s %s: %.2f tok/s\n", type.c_str(), mode.c_str(), tps);
    }
    return 0;
}
