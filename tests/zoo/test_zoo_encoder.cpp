// The encoder of the zoo (ModernBERT, GGUF `modern-bert`) against Hugging Face
// transformers: a tiny random-weight ModernBertModel converted with llama.cpp's
// convert_hf_to_gguf.py, and transformers' float32 eager last hidden state for a 7- and a
// 40-token prompt (tools/reference/make_zoo_encoder_fixture.py; modern-bert/versions.json).
// Its 4 layers are global, windowed (8: |q - k| <= 4), windowed, global, with RoPE bases
// 160000 (global) and 10000 (windowed) and an erf-GELU GeGLU, so each of those decides
// the answer (the fixture script checks that dropping any one moves it by > 1e-4).
// Pass: max |Δ| <= 1e-4 × max(1, max |ref|) at every position, with the two prompts
// alone and packed into one batch, on 1 and 2 threads; the registry picks the entry from
// the file; a stray tensor is refused by name; what the file and the compiled structure
// disagree on is refused by name; docs/architectures.md states this family truly.
// Arguments after `--`: tests/data/zoo, docs/architectures.md, include/.
#define BOOST_TEST_MODULE zoo_encoder
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <span>
#include <sstream>
#include <string>
#include <type_traits>

#include <nlohmann/json.hpp>

#include "archetype/io/gguf_writer.hpp"
#include "archetype/io/hf_checkpoint.hpp"
#include "archetype/models/architectures.hpp"
#include "archetype/models/encoder_model.hpp"
#include "archetype/models/presets/modern_bert.hpp"
#include "archetype/runtime/encoder_session.hpp"
#include "architectures_page.hpp"
#include "fixture_common.hpp"

using namespace archetype;
using Entry = presets::modern_bert_architecture;
using Model = encoder_model<presets::ModernBert>;

namespace {
const char* const family = "modern-bert";

using zoo_page::argument;
std::string zoo_dir() { return argument(1, "tests/data/zoo") + "/" + family + "/"; }

std::vector<std::int32_t> tokens(int n) {
    return fixture::read_raw<std::int32_t>(zoo_dir() + "tokens_" + std::to_string(n) + ".i32.bin");
}

/// Worst max |Δ| / max(1, max |ref|) over every position of `got` (rows of E) against
/// hidden_<n>.f32.bin, each position also checked against 1e-4 on the way.
double worst_of(const float* got, int n, std::size_t E, const std::string& what) {
    const auto want = fixture::read_raw<float>(zoo_dir() + "hidden_" + std::to_string(n) + ".f32.bin");
    BOOST_REQUIRE_EQUAL(want.size(), std::size_t(n) * E);
    double worst = 0;
    for (int p = 0; p < n; ++p) {
        double err = 0, ref = 0;
        for (std::size_t i = 0; i < E; ++i) {
            err = std::max(err, std::abs(double(got[p * E + i]) - double(want[p * E + i])));
            ref = std::max(ref, std::abs(double(want[p * E + i])));
        }
        worst = std::max(worst, err / std::max(1.0, ref));
        BOOST_TEST_CONTEXT(what << " n=" << n << " position " << p) { BOOST_TEST(err <= 1e-4 * std::max(1.0, ref)); }
    }
    return worst;
}

/// Worst error over both prompts, each alone and both packed in one batch, on 1 and 2 threads.
template <class M>
double worst_error(const M& m) {
    const std::size_t E = m.n_embd();
    const auto t7 = tokens(7), t40 = tokens(40);
    double worst = 0;
    for (std::size_t threads : {1, 2}) {
        auto enc = encoder_session(m, {.n_threads = threads});
        for (const auto* t : {&t7, &t40}) {
            const token_span one[] = {*t};
            std::vector<float> h(t->size() * E);
            enc.hidden(one, h);
            worst = std::max(worst, worst_of(h.data(), int(t->size()), E, "alone, threads " + std::to_string(threads)));
        }
        const token_span both[] = {t40, t7};
        std::vector<float> h((t7.size() + t40.size()) * E);
        enc.hidden(both, h);
        const std::string what = "packed, threads " + std::to_string(threads);
        worst = std::max(worst, worst_of(h.data(), 40, E, what));
        worst = std::max(worst, worst_of(h.data() + 40 * E, 7, E, what));
    }
    BOOST_TEST_MESSAGE(family << ": max |Δ| / max(1, max |ref|) = " << worst);
    return worst;
}

/// The fixture rewritten with `edit` applied to its metadata and tensors.
std::string rewritten(const std::string& tag, const std::function<void(gguf::writer&, const gguf::file&)>& edit,
                      const std::function<bool(const std::string&)>& keep_key = {},
                      const std::function<bool(const std::string&)>& keep_tensor = {}) {
    const auto f = gguf::file::open(zoo_dir() + "model.gguf");
    gguf::writer w;
    for (const auto& e : f.metadata())
        if (!keep_key || keep_key(std::string(e.key))) w.set(e.key, e.value);
    for (const auto& t : f.tensors())
        if (!keep_tensor || keep_tensor(t.name)) w.add_tensor(t.name, t.type, t.ne, t.data);
    edit(w, f);
    const auto path = (std::filesystem::temp_directory_path() / ("archetype_zoo_modern_bert_" + tag + ".gguf")).string();
    w.write(path);
    return path;
}

template <class Fn>
void expect_refusal(const std::string& path, const std::string& needle, Fn&& load) {
    try {
        load(path);
        BOOST_ERROR("loaded, expected an error naming " << needle);
    } catch (const std::exception& e) {
        BOOST_TEST(std::string(e.what()).find(needle) != std::string::npos, e.what());
    }
    std::filesystem::remove(path);
}

// The same family spelled other ways (entries of the test's own).
using Static = Encoder<RoPE, Interleave<3, SymmetricWindow<8>, Bidirectional, interleave_order::global_first>,
                       GeGLUWith<gelu_form::erf>, PreNorm<LayerNormNoBias>>;
using LocalFirst = Encoder<RoPE, Interleave<3, SymmetricWindow<8>, Bidirectional>, GeGLUWith<gelu_form::erf>,
                           PreNorm<LayerNormNoBias>>;
struct static_entry {
    static constexpr std::string_view gguf_name = "modern-bert";
    using model = Static;
    static constexpr arch::gguf_conventions conventions = Entry::conventions;
};
struct local_first_entry {
    static constexpr std::string_view gguf_name = "modern-bert";
    using model = LocalFirst;
    static constexpr arch::gguf_conventions conventions = Entry::conventions;
};
struct bidirectional_entry {
    static constexpr std::string_view gguf_name = "modern-bert";
    using model = Encoder<RoPE, Bidirectional, GeGLUWith<gelu_form::erf>, PreNorm<LayerNormNoBias>>;
    static constexpr arch::gguf_conventions conventions = Entry::conventions;
};

} // namespace

BOOST_AUTO_TEST_CASE(matches_transformers_at_every_position) {
    const auto m = load_model<Entry>(zoo_dir() + "model.gguf");
    BOOST_TEST(m.window() == 8u);
    for (std::size_t il = 0; il < 4; ++il) BOOST_TEST(m.layer_windowed(il) == (il % 3 != 0));
    BOOST_TEST(m.rope_base(0) == 160000.f);
    BOOST_TEST(m.rope_base(1) == 10000.f);
    BOOST_TEST(worst_error(m) <= 1e-4);
}

// The same structure spelled with a static pattern: Interleave<3, SymmetricWindow<8>, ...,
// global first> is what the file says; the local-first order contradicts it and is refused.
BOOST_AUTO_TEST_CASE(a_static_pattern_agrees_with_the_file_or_is_refused) {
    const auto s = load_model<static_entry>(zoo_dir() + "model.gguf");
    BOOST_TEST(worst_error(s) <= 1e-4);
    BOOST_TEST(s.layer_windowed(1));
    BOOST_TEST(!s.layer_windowed(3));
    try {
        (void)load_model<local_first_entry>(zoo_dir() + "model.gguf");
        BOOST_ERROR("a local-first pattern loaded a global-first file");
    } catch (const shape_error& e) {
        BOOST_TEST(std::string(e.what()).find("layer 0 windowed") != std::string::npos, e.what());
    }
}

BOOST_AUTO_TEST_CASE(the_registry_picks_the_entry_from_the_file) {
    const auto f = gguf::file::open(zoo_dir() + "model.gguf");
    const bool picked = with_architecture<default_architectures>(
        f, []<class E>(std::type_identity<E>) { return std::is_same_v<E, Entry>; });
    BOOST_TEST(picked);
    const bool as_encoder = with_architecture<encoder_architectures>(
        f, []<class E>(std::type_identity<E>) { return std::is_same_v<E, Entry>; });
    BOOST_TEST(as_encoder);
}

BOOST_AUTO_TEST_CASE(a_stray_tensor_is_refused_by_name) {
    const std::vector<float> extra(64, 0.5f);
    // a norm bias: LayerNormNoBias binds none, so it is left over rather than dropped
    for (const char* name : {"blk.1.attn_output.bias_stray", "blk.2.ffn_norm.bias", "token_embd_norm.bias"}) {
        const auto path = rewritten("stray", [&](gguf::writer& w, const gguf::file&) {
            w.add_tensor(name, ggml_type::F32, {64}, extra);
        });
        expect_refusal(path, "'" + std::string(name) + "'", [](const std::string& p) { (void)load_model<Entry>(p); });
    }
}

BOOST_AUTO_TEST_CASE(what_the_file_and_the_structure_disagree_on_is_refused) {
    // an activation the compiled GeGLU(erf) does not compute
    expect_refusal(rewritten("silu", [](gguf::writer& w, const gguf::file&) {
                       w.set("modern-bert.hidden_activation", std::string("silu"));
                   }, [](const std::string& k) { return k != "modern-bert.hidden_activation"; }),
                   "'modern-bert.hidden_activation' = 'silu'", [](const std::string& p) { (void)load_model<Entry>(p); });
    expect_refusal(rewritten("relu2", [](gguf::writer& w, const gguf::file&) {
                       w.set("modern-bert.hidden_activation", std::string("relu2"));
                   }, [](const std::string& k) { return k != "modern-bert.hidden_activation"; }),
                   "'relu2'", [](const std::string& p) { (void)load_model<Entry>(p); });
    // a windowed file run by an encoder that windows nothing
    expect_refusal(rewritten("copy", [](gguf::writer&, const gguf::file&) {}), "sliding_window = 8 on layer 1",
                   [](const std::string& p) { (void)load_model<bidirectional_entry>(p); });
    // the attention norm may be absent on layer 0 only
    expect_refusal(rewritten("no_norm", [](gguf::writer&, const gguf::file&) {}, {},
                             [](const std::string& t) { return t != "blk.1.attn_norm.weight"; }),
                   "'blk.1.attn_norm.weight'", [](const std::string& p) { (void)load_model<Entry>(p); });
    // an encoder of another architecture name is not taken as this one
    // (a copy: expect_refusal removes the file it is given)
    const auto bert = (std::filesystem::temp_directory_path() / "archetype_zoo_modern_bert_is_bert.gguf").string();
    std::filesystem::copy_file(argument(1, "tests/data/zoo") + "/../transformer/bert-tiny/model.gguf", bert,
                               std::filesystem::copy_options::overwrite_existing);
    expect_refusal(bert, "expected 'modern-bert'", [](const std::string& p) { (void)load_model<Entry>(p); });
}

// The Hugging Face checkpoint the GGUF was converted from (hf/: config.json +
// model.safetensors, ModernBertModel), loaded directly: the registry picks the same entry,
// every position matches transformers, and the hidden states equal the GGUF's bit for bit.
BOOST_AUTO_TEST_CASE(the_hugging_face_checkpoint_loads_directly) {
    const std::string dir = zoo_dir() + "hf";
    BOOST_REQUIRE(hf::is_checkpoint(dir));
    const bool picked = with_architecture<default_architectures>(
        hf::open_as_gguf(dir), []<class E>(std::type_identity<E>) { return std::is_same_v<E, Entry>; });
    BOOST_TEST(picked);
    const auto m = load_model<Entry>(hf::open_as_gguf(dir));
    BOOST_TEST(worst_error(m) <= 1e-4);
    const auto g = load_model<Entry>(zoo_dir() + "model.gguf");
    const auto t40 = tokens(40);
    const token_span one[] = {t40};
    std::vector<float> a(40 * m.n_embd()), b(a.size());
    encoder_session(m).hidden(one, a);
    encoder_session(g).hidden(one, b);
    BOOST_TEST(a == b);
}

// Hostile checkpoints: a bias the converter does not carry, a stray tensor, a layer kind
// that contradicts the pattern.
BOOST_AUTO_TEST_CASE(hostile_checkpoints_are_refused_by_name) {
    namespace fs = std::filesystem;
    const fs::path src = zoo_dir() + "hf";
    const fs::path dir = fs::temp_directory_path() / "archetype_zoo_modern_bert_hf";
    auto with_config = [&](const std::function<void(nlohmann::json&)>& edit) {
        fs::remove_all(dir);
        fs::create_directories(dir);
        fs::copy_file(src / "model.safetensors", dir / "model.safetensors");
        std::ifstream in(src / "config.json");
        auto j = nlohmann::json::parse(in);
        edit(j);
        std::ofstream(dir / "config.json") << j.dump();
        return dir.string();
    };
    auto refused = [&](const std::string& d, const std::string& needle) {
        try {
            (void)hf::open_as_gguf(d);
            BOOST_ERROR("loaded, expected an error naming " << needle);
        } catch (const format_error& e) {
            BOOST_TEST(std::string(e.what()).find(needle) != std::string::npos, e.what());
        }
    };
    refused(with_config([](nlohmann::json& j) { j["norm_bias"] = true; }), "norm_bias");
    refused(with_config([](nlohmann::json& j) { j["layer_types"][1] = "full_attention"; }), "'layer_types'[1]");
    refused(with_config([](nlohmann::json& j) { j["rope_parameters"]["sliding_attention"]["rope_type"] = "yarn"; }),
            "yarn");
    refused(with_config([](nlohmann::json& j) { j["architectures"] = {"ModernBertForTokenClassification"}; }),
            "'ModernBertForTokenClassification'");
    fs::remove_all(dir);
}

BOOST_AUTO_TEST_CASE(the_architectures_page_states_this_family) {
    const auto row = zoo_page::table_row(argument(2, "docs/architectures.md"), family);
    BOOST_REQUIRE_EQUAL(row.size(), 6u);
    const double bound = std::stod(row[5]);
    const auto m = load_model<Entry>(zoo_dir() + "model.gguf");
    BOOST_TEST(worst_error(m) <= bound);
    BOOST_TEST(bound <= 1e-4);
    const std::size_t lines = zoo_page::preset_lines(argument(3, "include/") + "/archetype/models/presets/modern_bert.hpp");
    BOOST_TEST(std::stoul(row[3]) == lines);
    BOOST_TEST(lines <= 15u);
}
