// xtensor at the API (archetype/xtensor.hpp): weight views over the mapped file
// hold the file's values in numpy order, and the shaped results equal the
// raw-pointer calls bit for bit. On the Qwen2 fixture (tests/data/zoo/qwen2).
#define BOOST_TEST_MODULE xtensor_api
#include <boost/test/unit_test.hpp>

#include <cstring>
#include <vector>

#include "archetype/models/architectures.hpp"
#include "archetype/models/decoder_model.hpp"
#include "archetype/runtime/decoder_session.hpp"
#include "archetype/xtensor.hpp"

using namespace archetype;

namespace {
std::string model_path() {
    const auto& mts = boost::unit_test::framework::master_test_suite();
    return std::string(mts.argc > 1 ? mts.argv[1] : "tests/data/zoo") + "/qwen2/model.gguf";
}
} // namespace

BOOST_AUTO_TEST_CASE(weight_views_are_the_file_in_numpy_order) {
    const auto f = gguf::file::open(model_path());
    const auto& t = f.tensor("blk.0.attn_k.weight"); // ne = {64, 32}: 32 rows of 64
    const auto v = tensor_view<float>(t);
    BOOST_TEST(v.dimension() == 2u);
    BOOST_TEST(v.shape()[0] == 32u);
    BOOST_TEST(v.shape()[1] == 64u);
    const auto* raw = reinterpret_cast<const float*>(t.data);
    BOOST_TEST(v.data() == raw); // no copy
    for (std::size_t r : {0u, 7u, 31u})
        for (std::size_t c : {0u, 13u, 63u}) BOOST_TEST(v(r, c) == raw[r * 64 + c]);
    const auto b = tensor_view<float>(f.tensor("blk.1.attn_q.bias"));
    BOOST_TEST(b.dimension() == 1u);
    BOOST_TEST(b.shape()[0] == 64u);
    BOOST_CHECK_THROW(tensor_view<std::uint16_t>(t), type_error); // F32 is not F16/BF16
}

BOOST_AUTO_TEST_CASE(shaped_results_equal_the_raw_calls) {
    const auto m = load_model<presets::qwen2_architecture>(model_path());
    const std::vector<std::int32_t> tok = {6, 9, 91, 104, 83};
    auto a = session(m, {.n_threads = 1, .max_sequences = 2, .n_ctx = 32});
    auto b = session(m, {.n_threads = 1, .max_sequences = 2, .n_ctx = 32});
    const auto x = prefill(a, 0, tok);
    BOOST_TEST(x.shape()[0] == tok.size());
    BOOST_TEST(x.shape()[1] == m.n_vocab());
    std::vector<float> raw(tok.size() * m.n_vocab());
    b.prefill(0, tok, raw.data());
    BOOST_TEST(std::memcmp(x.data(), raw.data(), raw.size() * sizeof(float)) == 0);

    const auto last = prefill(a, 1, tok, logits_rows::last);
    BOOST_TEST(last.shape()[0] == 1u);
    BOOST_TEST(std::memcmp(last.data(), raw.data() + (tok.size() - 1) * m.n_vocab(), m.n_vocab() * sizeof(float)) == 0);

    const std::vector<seq_id> seqs = {1, 0};
    const std::vector<std::int32_t> next = {5, 7};
    const auto d = decode(a, seqs, next);
    BOOST_TEST(d.shape()[0] == 2u);
    BOOST_TEST(d.shape()[1] == m.n_vocab());
    std::vector<float> one(m.n_vocab());
    b.decode(seq_id(0), 7, one.data()); // sequence 0 of b is where sequence 0 of a is
    BOOST_TEST(std::memcmp(d.data() + m.n_vocab(), one.data(), one.size() * sizeof(float)) == 0);
}
