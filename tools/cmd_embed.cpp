// archetype embed --model FILE|DIR (--tokens FILE.i32.bin | --ids 1,2,3 | --text "..." ...) --out FILE.f32.bin
//                 [--pooling none|mean|cls|last|max|rank] [--normalize -1|0|1|2|P] [--threads N]
// Embeddings of `bert` GGUF models, as llama.cpp's llama-embedding computes them:
// ids are fed as given (no CLS/SEP added); pooling defaults to the file's
// bert.pooling_type, normalisation to 2 (euclidean). Output: raw float32,
// row-major, no header (none: [total tokens x n_embd]; mean/cls/last/max:
// [n_sequences x n_embd]; rank: [n_sequences] scores).
// A directory is a sentence-transformers model (models/bert_safetensors.hpp):
// pooling defaults to its Pooling module, normalisation to 2 with a Normalize
// module and -1 without, and --text is tokenised by its WordPiece with [CLS]/[SEP]
// and truncated to sentence_bert_config.json's max_seq_length, as
// sentence-transformers does. --text on a GGUF file uses the file's tokenizer
// with its special tokens. Sequences keep the order of the flags.
#include <charconv>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "archetype/core/error.hpp"
#include "archetype/models/architectures.hpp"
#include "archetype/models/bert_safetensors.hpp"
#include "archetype/models/encoder.hpp"
#include "archetype/models/encoder_model.hpp"
#include "archetype/runtime/encoder_session.hpp"
#include "archetype/runtime/tokenizer/load.hpp"
#include "commands.hpp"
#include "model_file.hpp"

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
    "usage: archetype embed --model FILE.gguf|DIR (--tokens FILE.i32.bin | --ids 1,2,3 | --text \"...\") ... "
    "--out FILE.f32.bin\n"
    "                       [--pooling none|mean|cls|last|max|rank] [--normalize -1|0|1|2|P] [--threads N]\n"
    "  DIR: a sentence-transformers directory (model.safetensors, config.json, modules.json, tokenizer)\n";

/// One sequence from the command line: ids, or text tokenised once the model is open.
struct sequence_arg {
    std::vector<std::int32_t> ids;
    std::optional<std::string> text;
};

template <class Enc>
void run_embed(const encoder_model<Enc>& model, std::vector<sequence_arg>& seqs, const tokenizer::tokenizer* tok,
               std::size_t max_seq_length, std::optional<pooling_type> pooling, long long normalize,
               long long threads, const std::string& out_path) {
    for (auto& s : seqs) {
        if (!s.text) continue;
        if (!tok) throw argument_error("--text needs a tokenizer, and this model has none");
        s.ids = arch::sentence_transformers_encode(*tok, *s.text, max_seq_length);
    }
    encoder_session<Enc> enc(model, {.n_threads = static_cast<std::size_t>(threads)});
    std::vector<token_span> spans;
    for (const auto& s : seqs) spans.emplace_back(s.ids);
    const pooling_type p = pooling.value_or(enc.default_pooling());
    std::vector<float> out(enc.output_size(spans, p));
    enc.embed(spans, out, p, static_cast<int>(normalize));
    write_f32_file(out_path, out.data(), out.size());
}
} // namespace

int cmd_embed(int argc, char** argv) {
    std::string model_path, out_path;
    std::vector<sequence_arg> seqs;
    std::optional<pooling_type> pooling;
    std::optional<long long> normalize;
    long long threads = 1;
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
        else if (a == "--ids") seqs.push_back({parse_ids(v), std::nullopt});
        else if (a == "--tokens") seqs.push_back({read_i32_file(std::string(v)), std::nullopt});
        else if (a == "--text") seqs.push_back({{}, std::string(v)});
        else if (a == "--pooling") {
            pooling = pooling_from_name(v);
            if (!pooling)
                throw argument_error("--pooling '" + std::string(v) + "' is not none, mean, cls, last, max or rank");
        } else if (a == "--normalize") {
            normalize = parse_int(a, v);
            if (*normalize < -1 || *normalize > 1000)
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
    if (seqs.empty()) throw argument_error("give at least one sequence with --ids, --tokens or --text");
    bool any_text = false;
    for (const auto& s : seqs) any_text = any_text || s.text.has_value();

    if (std::filesystem::is_directory(model_path) && !hf::converts(model_path)) { // sentence-transformers (BERT)
        const auto st = arch::read_sentence_transformers(model_path);
        std::unique_ptr<tokenizer::tokenizer> tok;
        if (any_text) {
            if (st.tokenizer_path.empty())
                throw argument_error("--text: '" + model_path + "' has neither tokenizer.json nor vocab.txt");
            tok = tokenizer::load_wordpiece(st.tokenizer_path, st.lowercase);
        }
        const long long norm = normalize.value_or(st.normalize ? 2 : -1);
        // every dimension and the pooling from the directory; GELU form as config.json's hidden_act
        if (st.gelu == gelu_form::erf) {
            using Bert = Encoder<GeluMLPWith<gelu_form::erf>>;
            run_embed<Bert>(load_sentence_transformers<Bert>(model_path), seqs, tok.get(), st.max_seq_length,
                            pooling, norm, threads, out_path);
        } else {
            using Bert = Encoder<GeluMLP>;
            run_embed<Bert>(load_sentence_transformers<Bert>(model_path), seqs, tok.get(), st.max_seq_length,
                            pooling, norm, threads, out_path);
        }
        return 0;
    }
    // a GGUF, or a checkpoint directory converted as llama.cpp's converter would (ModernBERT):
    // the registered encoder its general.architecture names (bert, modern-bert, ...), every
    // dimension and the pooling from the file
    auto file = open_model_file(model_path);
    if (!takes_file(file, encoder_architectures{}))
        throw shape_error("general.architecture is '" + std::string(file.architecture()) +
                          "', which is not an encoder (known encoders: " + architecture_names(encoder_architectures{}) + ")");
    return with_architecture<encoder_architectures>(file, [&]<class E>(std::type_identity<E>) {
        // (with_architecture is done with `file` once it calls this visitor)
        const auto model = load_model<E>(std::move(file));
        std::unique_ptr<tokenizer::tokenizer> tok;
        if (any_text) tok = open_model_tokenizer(model_path, model.file());
        run_embed<typename E::model>(model, seqs, tok.get(), 0, pooling, normalize.value_or(2), threads, out_path);
        return 0;
    });
}

} // namespace archetype::tools
