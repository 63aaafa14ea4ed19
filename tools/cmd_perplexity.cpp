// archetype perplexity --model FILE|DIR --file TEXT [--ctx N] [--batch N] [--chunks N]
//                      [--threads N] [--kv f32|f16] [--activations mixed|int8|exact]
// llama-perplexity's measure (runtime/perplexity.hpp): the whole text tokenized with
// the file's tokenizer and its special tokens, non-overlapping chunks of --ctx
// tokens, BOS at each chunk's start when the vocabulary adds one, the second half
// of each chunk scored. Progress "[chunk]ppl," on stderr as llama-perplexity prints
// it; "Final estimate: PPL = X +/- Y" and tokens/s on stdout. Registered decoders.
// --activations (kernels/batch_activations.hpp): mixed (the default: int8 activations
// except the FFN down projection's), int8 (llama.cpp's rounding in every product: its
// numerics, which tests/real/test_real_perplexity.sh compares within 1 %) or exact
// (float activations: the exact model's products, slower).
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>

#include "archetype/core/error.hpp"
#include "archetype/io/gguf.hpp"
#include "archetype/runtime/tokenizer/load.hpp"
#include "commands.hpp"
#include "model_file.hpp"
#include "decoder_jobs.hpp"
#include "pipeline_launch.hpp"

namespace archetype::tools {

namespace {
constexpr const char* perplexity_usage =
    "usage: archetype perplexity --model FILE|DIR --file TEXT [--ctx N] [--batch N] [--chunks N]\n"
    "                            [--threads N] [--kv f32|f16] [--activations mixed|int8|exact]\n"
    "  --ctx N      tokens per chunk (default 512); the text needs at least 2N tokens\n"
    "  --batch N    tokens per forward pass (default 512)\n"
    "  --chunks N   score only the first N chunks (default: all)\n"
    "  --activations mixed|int8|exact  how batches meet quantised weights: mixed (the\n"
    "               default) rounds activations to int8 per block except the FFN down\n"
    "               projection's input; int8 rounds every product's as llama.cpp does;\n"
    "               exact keeps float activations (the exact model's products, slower)\n";
} // namespace

int cmd_perplexity(int argc, char** argv) {
    std::string model, text_path;
    decoder_perplexity_job j;
    j.threads = std::max(1u, std::thread::hardware_concurrency());
    for (int i = 1; i < argc; ++i) {
        const std::string_view o = argv[i];
        if (o == "--help" || o == "-h") {
            if (writes_output()) std::printf("%s", perplexity_usage); // under mpirun: rank 0 alone
            return 0;
        }
        if (i + 1 >= argc) throw argument_error("option '" + std::string(o) + "' needs a value");
        const std::string_view v = argv[++i];
        if (o == "--model") model = v;
        else if (o == "--file") text_path = v;
        else if (o == "--ctx") j.n_ctx = parse_number<std::size_t>(o, v, 4, 1u << 20);
        else if (o == "--batch") j.n_batch = parse_number<std::size_t>(o, v, 1, 1u << 20);
        else if (o == "--chunks") j.n_chunks = parse_number<std::size_t>(o, v, 1, 1u << 30);
        else if (o == "--threads") j.threads = parse_number<std::size_t>(o, v, 1, 1024);
        else if (o == "--kv") {
            if (v == "f32") j.kv = kv_cache_type::f32;
            else if (v == "f16") j.kv = kv_cache_type::f16;
            else throw argument_error("--kv '" + std::string(v) + "' is not f32 or f16");
        } else if (o == "--activations") {
            if (v == "mixed") j.activations = kernels::batch_activations::mixed;
            else if (v == "int8") j.activations = kernels::batch_activations::int8;
            else if (v == "exact") j.activations = kernels::batch_activations::exact;
            else throw argument_error("--activations '" + std::string(v) + "' is not mixed, int8 or exact");
        } else throw argument_error("unknown option '" + std::string(o) + "' (try --help)");
    }
    if (model.empty()) throw argument_error("--model FILE is required");
    if (text_path.empty()) throw argument_error("--file TEXT is required");
    std::ifstream in(text_path, std::ios::binary);
    if (!in) throw argument_error("cannot read the text file '" + text_path + "'");
    std::stringstream ss;
    ss << in.rdbuf();

    auto file = open_model_file(model); // a GGUF or a checkpoint directory
    if (!is_registered_decoder(file))
        throw argument_error("architecture '" + std::string(file.architecture()) +
                             "' is not a registered decoder (archetype describe --model FILE names the known ones)");
    const auto tok = open_model_tokenizer(model, file);
    j.tokens = tok->encode(ss.str(), true);
    if (tok->adds_bos()) j.bos = tok->bos_id();
    if (j.tokens.size() < 2 * j.n_ctx)
        throw argument_error("perplexity: '" + text_path + "' tokenizes to " + std::to_string(j.tokens.size()) +
                             " tokens; a context of " + std::to_string(j.n_ctx) + " needs at least " +
                             std::to_string(2 * j.n_ctx));
    decoder_job job;
    job.what = decoder_job::kind::perplexity;
    job.perplexity = &j;
    return run_registered_decoder(std::move(file), job);
}

} // namespace archetype::tools
