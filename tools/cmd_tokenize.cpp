// archetype tokenize --model FILE|DIR (--text T | --file F) [--add-special] [--ids-only]
// The model's tokenizer on a text, as llama.cpp's llama-tokenize prints it: one line
// per token, `<id> -> '<piece>'` (the piece as the text it decodes to); with --ids-only
// one line `[id, id, ...]` (its --ids).
// FILE: a GGUF (tokenizer.ggml.*: SentencePiece, byte-level BPE with the pre-tokenizers
// docs/tokenizers.md lists, WordPiece). DIR: a directory with a Hugging Face tokenizer.json
// (byte-level BPE or WordPiece), or a sentence-transformers / BERT one with vocab.txt. --add-special adds what the vocabulary
// adds (BOS, or [CLS] ... [SEP]); without it the text is tokenised alone.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "archetype/core/error.hpp"
#include "archetype/io/gguf.hpp"
#include "archetype/models/bert_safetensors.hpp"
#include "archetype/runtime/tokenizer/load.hpp"
#include "archetype/runtime/tokenizer/tokenizer_json.hpp"
#include "commands.hpp"

namespace archetype::tools {

namespace {
constexpr const char* tokenize_usage =
    "usage: archetype tokenize --model FILE.gguf|DIR (--text \"...\" | --file TEXT_FILE) [--add-special] [--ids-only]\n";

std::unique_ptr<tokenizer::tokenizer> open_tokenizer(const std::string& path) {
    if (std::filesystem::is_directory(path)) {
        if (std::filesystem::exists(std::filesystem::path(path) / "tokenizer.json"))
            return tokenizer::load_tokenizer_json((std::filesystem::path(path) / "tokenizer.json").string());
        const auto st = arch::read_sentence_transformers(path);
        if (st.tokenizer_path.empty())
            throw format_error("'" + path + "' has no tokenizer.json or vocab.txt");
        return tokenizer::load_wordpiece(st.tokenizer_path, st.lowercase);
    }
    return tokenizer::load_tokenizer(gguf::file::open(path));
}
} // namespace

int cmd_tokenize(int argc, char** argv) {
    std::string model, text, file;
    bool have_text = false, add_special = false, ids_only = false;
    for (int i = 1; i < argc; ++i) {
        const std::string_view o = argv[i];
        if (o == "-h" || o == "--help") {
            std::fputs(tokenize_usage, stdout);
            return 0;
        }
        if (o == "--add-special") { add_special = true; continue; }
        if (o == "--ids-only") { ids_only = true; continue; }
        if (i + 1 >= argc) throw argument_error("option '" + std::string(o) + "' needs a value");
        if (o == "--model") model = argv[++i];
        else if (o == "--text") { text = argv[++i]; have_text = true; }
        else if (o == "--file") { file = argv[++i]; have_text = true; }
        else throw argument_error("unknown option '" + std::string(o) + "'");
    }
    if (model.empty()) throw argument_error("--model FILE is required");
    if (!have_text) throw argument_error("give the text with --text or --file");
    if (!file.empty()) {
        std::ifstream in(file, std::ios::binary);
        if (!in) throw argument_error("cannot open --file '" + file + "'");
        text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    }
    const auto tok = open_tokenizer(model);
    const auto ids = tok->encode(text, add_special);
    if (ids_only) {
        std::string line = "[";
        for (std::size_t i = 0; i < ids.size(); ++i) line += (i ? ", " : "") + std::to_string(ids[i]);
        std::printf("%s]\n", line.c_str());
    } else {
        for (const auto id : ids) std::printf("%6d -> '%s'\n", int(id), tok->token_to_piece(id).c_str());
    }
    return 0;
}

} // namespace archetype::tools
