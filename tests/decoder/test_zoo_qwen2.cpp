// Qwen2 (presets::Qwen2, registry entry `qwen2`) on the transformers fixture
// tests/data/zoo/qwen2 (tools/reference/make_zoo_fixture.py): what is particular to
// the family — the q/k/v biases are bound, RoPE pairs halves and adjacent pairs would
// be wrong. The logits at every position against transformers: tests/zoo.
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

} // namespace

// The comparison with transformers at every position, the registry's pick and the
// stray-tensor refusal are tests/zoo (zoo_qwen2); here what is particular to Qwen2.
BOOST_AUTO_TEST_CASE(the_biases_are_bound_and_rope_pairs_halves) {
    const auto m = load_model<presets::qwen2_architecture>(zoo_dir() + "model.gguf");
    BOOST_REQUIRE_EQUAL(m.n_vocab(), 128u);
    BOOST_TEST((m.hparams().rope.pairing == kernels::rope_pairing::neox));
    BOOST_TEST(m.layer_at(0).attn.bq != nullptr); // the biases are bound, not dropped
    BOOST_TEST(m.layer_at(1).attn.bv != nullptr);
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
