// archetype embed --model FILE (--tokens FILE.i32.bin | --ids 1,2,3 [--ids 4,5 ...]) --out FILE.f32.bin
//                 [--pooling none|mean|cls|last|max|rank] [--normalize -1|0|1|2|P] [--threads N]
// Embeddings of `bert` GGUF models, as llama.cpp's llama-embedding computes them:
// ids are fed as given (no CLS/SEP added); pooling defaults to the file's
// bert.pooling_type, normalisation to 2 (euclidean). Output: raw float32,
// row-major, no header (none: [total tokens x n_embd]; mean/cls/last/max:
// [n_sequences x n_embd]; rank: [n_sequences] scores).
#include <charconv>
#include <cstdio>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "archetype/core/error.hpp"
#include "archetype/models/encoder.hpp"
#include "archetype/models/encoder_model.hpp"
#include "archetype/runtime/encoder_session.hpp"
#include "commands.hpp"

namespace archetype::tools {

namespace {
long long parse_int(std::string_view flag, std::string_view s) {
    long long v = 0;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (s.empty() || ec != std::errc{} || p != s.data() + s.size())
        throw argument_error("bad value '" + std::string(s) + "' for " + std::string(flag));
    return v;
}
constexpr const char* embed_usage =
    "usage: archetype embed --model FILE (--tokens FILE.i32.bin | --ids 1,2,3 [--ids 4,5 ...]) --out FILE.f32.bin\n"
    "                       [--pooling none|mean|cls|last|max|rank] [--normalize -1|0|1|2|P] [--threads N]\n";
} // namespace

int cmd_embed(int argc, char** argv) {
    std::string model_path, out_path;
    std::vector<std::vector<std::int32_t>> seqs;
    std::optional<pooling_type> pooling;
    long long normalize = 2, threads = 1;
    for (int i = 1; i < argc; ++i) {
        const std::string_view a = argv[i];
        if (a == "--help" || a == "-h") {
            std::printf("%s", embed_usage);
            return 0;
        }
        if (i + 1 >= argc) throw argument_error("option '" + std::string(a) + "' needs a value");
        const std::string_view v = argv[++i];
        if (a == "--model") model_path = v;
        else if (a == "--out") out_path = v;
        else if (a == "--ids") seqs.push_back(parse_ids(v));
        else if (a == "--tokens") seqs.push_back(read_i32_file(std::string(v)));
        else if (a == "--pooling") {
            pooling = pooling_from_name(v);
            if (!pooling)
                throw argument_error("--pooling '" + std::string(v) + "' is not none, mean, cls, last, max or rank");
        } else if (a == "--normalize") {
            normalize = parse_int(a, v);
            if (normalize < -1 || normalize > 1000)
                throw argument_error("--normalize " + std::string(v) + " is not -1, 0, 1, 2 or a p-norm P <= 1000");
        } else if (a == "--threads") {
            threads = parse_int(a, v);
            if (threads < 1 || threads > 256) throw argument_error("--threads " + std::string(v) + " is not in 1..256");
        } else {
            throw argument_error("unknown option '" + std::string(a) + "'");
        }
    }
    if (model_path.empty()) throw argument_error("--model FILE is required");
    if (out_path.empty()) throw argument_error("--out FILE is required");
    if (seqs.empty()) throw argument_error("give at least one sequence with --ids or --tokens");

    using AnyBert = Encoder<>; // every dimension and the pooling from the file
    const auto model = load_model<AnyBert>(model_path);
    encoder_session<AnyBert> enc(model, {.n_threads = static_cast<std::size_t>(threads)});
    std::vector<token_span> spans(seqs.begin(), seqs.end());
    const pooling_type p = pooling.value_or(enc.default_pooling());
    std::vector<float> out(enc.output_size(spans, p));
    enc.embed(spans, out, p, static_cast<int>(normalize));
    write_f32_file(out_path, out.data(), out.size());
    return 0;
}

} // namespace archetype::tools
