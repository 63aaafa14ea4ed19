// Qwen2 (presets::Qwen2, registry entry `qwen2`) against Hugging Face
// transformers: a tiny random-weight Qwen2ForCausalLM (q/k/v biases and norm
// weights perturbed away from 0 and 1, so a dropped tensor shows) converted with
// llama.cpp's convert_hf_to_gguf.py; transformers' float32 eager logits for a 7-
// and a 40-token prompt (tools/reference/make_zoo_fixture.py, tests/data/zoo/qwen2/
// versions.json). Pass: max |Δ| <= 1e-4 × max(1, max |ref|) at every position, in
// batch, sequential and chunked feeding.
#define BOOST_TEST_MODULE zoo_qwen2
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <span>
#include <string>

#include "archetype/io/gguf_writer.hpp"
#include "archetype/models/architectures.hpp"
#include "archetype/models/decoder_model.hpp"
#include "archetype/runtime/decoder_session.hpp"
#include "fixture_common.hpp"

using namespace archetype;

namespace {
std::string zoo_dir() {
    const auto& mts = boost::unit_test::framework::master_test_suite();
    return std::string(mts.argc > 1 ? mts.argv[1] : "tests/data/zoo") + "/qwen2/";
}

std::vector<float> run(const decoder_model<presets::Qwen2>& m, const std::vector<std::int32_t>& tok, std::size_t step) {
    auto s = session(m, {.n_threads = 2, .max_sequences = 1, .n_ctx = 64});
    const std::size_t n = tok.size(), V = m.n_vocab();
    std::vector<float> logits(n * V);
    for (std::size_t b = 0; b < n; b += step) {
        const std::size_t c = std::min(step, n - b);
        s.prefill(0, std::span<const std::int32_t>(tok.data() + b, c), logits.data() + b * V);
    }
    return logits;
}
} // namespace

BOOST_AUTO_TEST_CASE(matches_transformers_at_every_position) {
    const auto m = load_model<presets::qwen2_architecture>(zoo_dir() + "model.gguf");
    BOOST_REQUIRE_EQUAL(m.n_vocab(), 128u);
    BOOST_TEST((m.hparams().rope.pairing == kernels::rope_pairing::neox));
    BOOST_TEST(m.layer_at(0).attn.bq != nullptr); // the biases are bound, not dropped
    BOOST_TEST(m.layer_at(1).attn.bv != nullptr);
    for (int n : {7, 40}) {
        const auto tok = fixture::read_raw<std::int32_t>(zoo_dir() + "tokens_" + std::to_string(n) + ".i32.bin");
        const auto want = fixture::read_raw<float>(zoo_dir() + "logits_" + std::to_string(n) + ".f32.bin");
        BOOST_REQUIRE_EQUAL(tok.size(), std::size_t(n));
        BOOST_REQUIRE_EQUAL(want.size(), std::size_t(n) * 128);
        for (std::size_t step : {std::size_t(n), std::size_t(1), std::size_t(5)}) {
            const auto got = run(m, tok, step);
            for (int p = 0; p < n; ++p) {
                double err = 0, ref = 0;
                for (std::size_t v = 0; v < 128; ++v) {
                    err = std::max(err, std::abs(double(got[p * 128 + v]) - double(want[p * 128 + v])));
                    ref = std::max(ref, std::abs(double(want[p * 128 + v])));
                }
                BOOST_TEST_CONTEXT("n=" << n << " step=" << step << " position " << p) {
                    BOOST_TEST(err <= 1e-4 * std::max(1.0, ref));
                }
            }
        }
    }
}

BOOST_AUTO_TEST_CASE(the_registry_maps_the_file_to_qwen2) {
    const auto f = gguf::file::open(zoo_dir() + "model.gguf");
    const std::string_view picked = with_architecture<default_architectures>(
        f, []<class E>(std::type_identity<E>) { return std::string_view(E::gguf_name); });
    BOOST_TEST(picked == "qwen2");
    const bool is_qwen2 = with_architecture<default_architectures>(
        f, []<class E>(std::type_identity<E>) { return std::is_same_v<E, presets::qwen2_architecture>; });
    BOOST_TEST(is_qwen2);
}

// Without RoPE's NeoX pairing (qwen2's convention) the logits move: the fixture
// tells the two apart, so the test above checks the convention, not luck.
BOOST_AUTO_TEST_CASE(adjacent_pairing_is_wrong_for_this_file) {
    using Adjacent = Decoder<GQA<dynamic, dynamic>, RoPE::with<10000, rope_pairing_policy::adjacent>>;
    const auto m = load_model<Adjacent>(zoo_dir() + "model.gguf");
    const auto tok = fixture::read_raw<std::int32_t>(zoo_dir() + "tokens_7.i32.bin");
    const auto want = fixture::read_raw<float>(zoo_dir() + "logits_7.f32.bin");
    auto s = session(m, {.n_threads = 1, .max_sequences = 1, .n_ctx = 16});
    std::vector<float> got(7 * 128);
    s.prefill(0, tok, got.data());
    BOOST_TEST(fixture::max_abs_err(got, want) > 0.1);
}

// A tensor that no policy of the compiled structure binds is an error naming it,
// never silently dropped.
BOOST_AUTO_TEST_CASE(an_unbound_tensor_is_refused) {
    const auto f = gguf::file::open(zoo_dir() + "model.gguf");
    gguf::writer w;
    for (const auto& e : f.metadata()) w.set(e.key, e.value);
    for (const auto& t : f.tensors()) w.add_tensor(t.name, t.type, t.ne, t.data);
    const std::vector<float> extra(64, 0.5f);
    w.add_tensor("blk.0.attn_gate.weight", ggml_type::F32, {64}, extra);
    const auto path = (std::filesystem::temp_directory_path() / "archetype_qwen2_extra.gguf").string();
    w.write(path);
    try {
        (void)load_model<presets::qwen2_architecture>(path);
        BOOST_ERROR("a file with an unbound tensor loaded");
    } catch (const shape_error& e) {
        BOOST_TEST(std::string(e.what()).find("'blk.0.attn_gate.weight'") != std::string::npos);
    }
    std::filesystem::remove(path);
}
