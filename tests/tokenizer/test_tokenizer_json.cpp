// Hugging Face tokenizer.json files (tokenizer_json.hpp) against Hugging Face
// `tokenizers` itself: tests/data/tokenizer/hf/<name>/ holds a small BPE tokenizer.json
// trained by tokenizers 0.23.3 with a family's pipeline (GPT-2 byte-level, Llama 3's split
// pattern + ignore_merges + BOS template, Qwen 2's pattern + NFC, SmolLM's digits,
// SentencePiece-style BPE with byte fallback as Llama 2's and Mistral's files write it) and
// cases.json, the ids tokenizers gives each of 451 strings with and without special
// tokens (tools/reference/make_hf_tokenizer_fixtures.py). Also NFC against fixed
// expectations from Unicode's definition, and the refusals.
#define BOOST_TEST_MODULE tokenizer_json
#include <boost/test/unit_test.hpp>

#include <cstdlib>
#include <unistd.h>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "archetype/runtime/tokenizer/tokenizer_json.hpp"
#include "archetype/runtime/unicode_nfc.hpp"

using namespace archetype;
namespace fs = std::filesystem;

static fs::path data_dir() {
    const char* v = std::getenv("ARCHETYPE_TOKENIZER_DATA");
    if (!v || !*v) BOOST_FAIL("ARCHETYPE_TOKENIZER_DATA is not set");
    return fs::path(v) / "hf";
}

static std::string show(const std::vector<std::int32_t>& v) {
    std::string s = "[";
    for (std::size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
    return s + "]";
}

static void check_family(const std::string& name, const std::string& kind, bool adds_bos) {
    const auto dir = data_dir() / name;
    const auto t = tokenizer::load_tokenizer_json((dir / "tokenizer.json").string());
    BOOST_TEST(t->kind() == kind);
    std::ifstream in(dir / "cases.json");
    BOOST_REQUIRE_MESSAGE(in, "cannot open " << (dir / "cases.json"));
    const auto fx = nlohmann::json::parse(in);
    std::size_t n = 0, ok = 0, ok_special = 0;
    for (const auto& c : fx.at("cases")) {
        const auto text = c.at("text").get<std::string>();
        const auto want = c.at("ids").get<std::vector<std::int32_t>>();
        const auto want_special = c.contains("ids_special") ? c["ids_special"].get<std::vector<std::int32_t>>() : want;
        const auto got = t->encode(text, false);
        const auto got_special = t->encode(text, true);
        ++n;
        if (got == want) ++ok;
        else BOOST_ERROR(name << ": '" << text.substr(0, 50) << "' want " << show(want) << " got " << show(got));
        if (got_special == want_special) ++ok_special;
        else BOOST_ERROR(name << " (special): '" << text.substr(0, 50) << "' want " << show(want_special) << " got "
                              << show(got_special));
    }
    BOOST_TEST(n >= 400u);
    BOOST_TEST(t->adds_bos() == adds_bos);
    BOOST_TEST_MESSAGE(name << ": " << ok << "/" << n << " exact, " << ok_special << "/" << n << " with specials");
}

BOOST_AUTO_TEST_CASE(gpt2_byte_level) { check_family("gpt2", "bpe", false); }
BOOST_AUTO_TEST_CASE(llama3_split_pattern_ignore_merges_and_bos) { check_family("llama3", "bpe", true); }
BOOST_AUTO_TEST_CASE(qwen2_split_pattern_and_nfc) { check_family("qwen2", "bpe", false); }
BOOST_AUTO_TEST_CASE(smollm_digits) { check_family("smollm", "bpe", false); }

BOOST_AUTO_TEST_CASE(sentencepiece_style_bpe_with_byte_fallback) { check_family("spm_bpe", "spm-bpe", true); }
BOOST_AUTO_TEST_CASE(metaspace_prefix_on_the_first_text_only) { check_family("spm_metaspace", "spm-bpe", true); }

// Unigram (Viterbi over piece scores): unknown characters fused into one <unk>, or, with
// byte_fallback, spelled as <0xXX> tokens; T5's "$A </s>" template adds an EOS only.
BOOST_AUTO_TEST_CASE(unigram_with_unknown_pieces) { check_family("unigram", "unigram", false); }
BOOST_AUTO_TEST_CASE(unigram_with_byte_fallback) { check_family("unigram_bytes", "unigram", true); }

BOOST_AUTO_TEST_CASE(unigram_decodes_back) {
    const auto t = tokenizer::load_tokenizer_json((data_dir() / "unigram_bytes" / "tokenizer.json").string());
    for (const std::string s : {"Hello world", "tab\there", "llama \xF0\x9F\xA6\x99 and \xE9\xBE\x98", "end."})
        BOOST_TEST(t->decode(t->encode(s, false)) == s);
}

BOOST_AUTO_TEST_CASE(sentencepiece_style_decodes_back) {
    const auto t = tokenizer::load_tokenizer_json((data_dir() / "spm_bpe" / "tokenizer.json").string());
    // Characters outside the vocabulary's alphabet come back from their byte tokens.
    for (const std::string s : {"Hello world", "tab\there", "llama \xF0\x9F\xA6\x99 and \xE9\xBE\x98", "  two spaces"})
        BOOST_TEST(t->decode(t->encode(s, false)) == s);
}

BOOST_AUTO_TEST_CASE(nfc_composes_and_orders) {
    using unicode::nfc;
    BOOST_TEST(nfc("e\xCC\x81") == "\xC3\xA9");                          // e + U+0301 -> é
    BOOST_TEST(nfc("\xE2\x84\xAB") == "\xC3\x85");                       // U+212B ANGSTROM -> Å (singleton)
    BOOST_TEST(nfc("a\xCC\xA3\xCC\x82") == "\xE1\xBA\xAD");              // a + dot below + circumflex -> ậ
    BOOST_TEST(nfc("a\xCC\x82\xCC\xA3") == "\xE1\xBA\xAD");              // marks in the other order: same
    BOOST_TEST(nfc("\xE1\x84\x80\xE1\x85\xA1\xE1\x86\xA8") == "\xEA\xB0\x81"); // jamo G A G -> 각
    BOOST_TEST(nfc("\xE0\xA5\x98") == "\xE0\xA4\x95\xE0\xA4\xBC");       // U+0958 is excluded: stays decomposed
    BOOST_TEST(nfc("plain ascii") == "plain ascii");
    BOOST_TEST(nfc("\xFF" "e\xCC\x81\xFE") == "\xFF\xC3\xA9\xFE");        // invalid bytes pass through
}

BOOST_AUTO_TEST_CASE(hostile_files_are_format_errors) {
    const auto dir = fs::temp_directory_path() / ("archetype_tj_" + std::to_string(::getpid()));
    fs::create_directories(dir);
    const auto file = dir / "tokenizer.json";
    auto refused = [&](const std::string& body, const std::string& part) {
        std::ofstream(file) << body;
        try {
            tokenizer::load_tokenizer_json(file.string());
        } catch (const format_error& e) {
            const bool ok = std::string(e.what()).find(part) != std::string::npos;
            if (!ok) BOOST_TEST_MESSAGE("message: " << e.what());
            return ok;
        }
        return false;
    };
    const std::string bl = R"("pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false, "use_regex": true})";
    BOOST_TEST(refused("{", "not valid JSON"));
    BOOST_TEST(refused(R"({"model": {"type": "Unigram", "vocab": []}})", "not a non-empty array"));
    BOOST_TEST(refused(R"({"model": {"type": "WordPieceish", "vocab": []}})", "'WordPieceish'"));
    const std::string ms = R"("pre_tokenizer": {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "always", "split": true})";
    BOOST_TEST(refused(R"({"model": {"type": "Unigram", "vocab": [["<unk>", 0], ["a", -1]]}, )" + ms + "}", "without unk_id"));
    BOOST_TEST(refused(R"({"model": {"type": "Unigram", "unk_id": 5, "vocab": [["<unk>", 0], ["a", -1]]}, )" + ms + "}",
                       "unknown token id 5"));
    BOOST_TEST(refused(R"({"model": {"type": "Unigram", "unk_id": 0, "vocab": [["<unk>", 0], ["a"]]}, )" + ms + "}",
                       "is not [piece, score]"));
    BOOST_TEST(refused(R"({"model": {"type": "Unigram", "unk_id": 0, "vocab": [["<unk>", 0], ["a", -1]]}, "normalizer": {"type": "Precompiled", "precompiled_charsmap": ""}, )" + ms + "}",
                       "'Precompiled'"));
    BOOST_TEST(refused(R"({"model": {"type": "Unigram", "unk_id": 0, "vocab": [["<unk>", 0], ["a", -1]]}, "pre_tokenizer": {"type": "WhitespaceSplit"}})",
                       "'WhitespaceSplit'"));
    BOOST_TEST(refused(R"({"model": {"type": "Unigram", "unk_id": 0, "vocab": [["<unk>", 0], ["a", -1]]}, "added_tokens": [{"id": 1, "content": "b"}], )" + ms + "}",
                       "which is 'a'"));
    BOOST_TEST(refused(R"({"model": {"type": "BPE", "vocab": {"a": 0, "b": 5}, "merges": []}, )" + bl + "}", "id 5"));
    BOOST_TEST(refused(R"({"model": {"type": "BPE", "vocab": {"a": 0, "b": 0}, "merges": []}, )" + bl + "}", "id 0 is both"));
    BOOST_TEST(refused(R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": [7]}, )" + bl + "}", "merge 7"));
    BOOST_TEST(refused(R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": []}, "pre_tokenizer": {"type": "BertPreTokenizer"}})",
                       "'BertPreTokenizer'"));
    BOOST_TEST(refused(R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": []}, "normalizer": {"type": "NFKC"}, )" + bl + "}",
                       "'NFKC'"));
    BOOST_TEST(refused(R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": []}, "pre_tokenizer": {"type": "Split", "pattern": {"Regex": "\\p{Lu}"}, "behavior": "Isolated"}})",
                       "ByteLevel"));
    BOOST_TEST(refused(R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": []}, "pre_tokenizer": {"type": "Sequence", "pretokenizers": [{"type": "Split", "pattern": {"Regex": "\\p{Lu}"}, "behavior": "Isolated"}, {"type": "ByteLevel", "use_regex": false}]}})",
                       "\\p{Lu}"));
    BOOST_TEST(refused(R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": []}, "pre_tokenizer": {"type": "Split", "pattern": {"Regex": "a"}, "behavior": "MergedWithPrevious"}})",
                       "MergedWithPrevious"));
    BOOST_TEST(refused(R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": []}, "post_processor": {"type": "TemplateProcessing", "single": [{"SpecialToken": {"id": "<s>"}}, {"Sequence": {"id": "A"}}]}, )" + bl + "}",
                       "'<s>'"));
    BOOST_TEST(refused(R"({"model": {"type": "BPE", "vocab": ["a"], "merges": []}})", "is not an integer"));
    // found by fuzz_tokenizer_json: a float id converted to an integer was undefined behaviour
    BOOST_TEST(refused(R"({"model": {"type": "BPE", "vocab": {"a": 7e76}, "merges": []}, )" + bl + "}", "'a' = 7e+76 is not an integer"));
    BOOST_TEST(refused(R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": []}, "added_tokens": [{"id": 1.5, "content": "x"}], )" + bl + "}",
                       "added token id = 1.5"));
    BOOST_TEST(refused(R"({"model": {"type": "WordPiece", "vocab": {"a": 0}, "max_input_chars_per_word": 1e300}})",
                       "max_input_chars_per_word"));
    BOOST_TEST(refused(R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": []}, "pre_tokenizer": {"type": "Metaspace", "replacement": "_", "prepend_scheme": "first", "split": false}})",
                       "replacement"));
    BOOST_TEST(refused(R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": []}, "pre_tokenizer": {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "first", "split": true}})",
                       "split=true"));
    BOOST_TEST(refused(R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": []}, "normalizer": {"type": "Sequence", "normalizers": [{"type": "Prepend", "prepend": "\u2581"}, {"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"}, {"type": "Lowercase"}]}})",
                       "'Lowercase'"));
    fs::remove_all(dir);
}
