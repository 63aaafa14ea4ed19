// bert-tiny (llama.cpp golden outputs, ../shared/fixtures/transformer/bert-tiny):
// per-token and pooled embeddings through the API within the README's
// tolerances (2e-3 raw with an exact tanh GELU vs llama.cpp's fp16 table, 1e-3
// L2-normalised). The folder comes from ARCHETYPE_FIXTURES, or from argv
// (`-- DIR`, the copy in tests/data) when given.
#define BOOST_TEST_MODULE encoder_fixture
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "archetype/models/encoder.hpp"
#include "archetype/models/encoder_model.hpp"
#include "archetype/runtime/encoder_session.hpp"

namespace {
using namespace archetype;

std::string folder() {
    auto& mts = boost::unit_test::framework::master_test_suite();
    if (mts.argc > 1) return mts.argv[1];
    const char* e = std::getenv("ARCHETYPE_FIXTURES");
    BOOST_REQUIRE_MESSAGE(e, "ARCHETYPE_FIXTURES is not set");
    return std::string(e) + "/transformer/bert-tiny";
}

template <class T>
std::vector<T> read_bin(const std::string& path) {
    std::ifstream f(path, std::ios::binary | std::ios::ate);
    BOOST_REQUIRE_MESSAGE(f, "cannot open " << path);
    const auto n = static_cast<std::size_t>(f.tellg());
    std::vector<T> v(n / sizeof(T));
    f.seekg(0);
    f.read(reinterpret_cast<char*>(v.data()), static_cast<std::streamsize>(n));
    return v;
}

float max_diff(const std::vector<float>& a, const std::vector<float>& b) {
    BOOST_REQUIRE_EQUAL(a.size(), b.size());
    float m = 0;
    for (std::size_t i = 0; i < a.size(); ++i) m = std::max(m, std::fabs(a[i] - b[i]));
    return m;
}

using BertTiny = Encoder<MHA<4>, LearnedPositions<64>, LayerNorm, GeluMLP>;

struct fixture {
    encoder_model<BertTiny> model = load_model<BertTiny>(folder() + "/model.gguf");
    std::vector<std::int32_t> tokens = read_bin<std::int32_t>(folder() + "/tokens_7.i32.bin");

    std::vector<float> run(pooling_type p, int norm, std::size_t threads = 1) {
        encoder_session<BertTiny> enc(model, {.n_threads = threads});
        const token_span seqs[] = {tokens};
        std::vector<float> out(enc.output_size(seqs, p));
        enc.embed(seqs, out, p, norm);
        return out;
    }
};

void check(fixture& f, pooling_type p, int norm, const std::string& file, float tol) {
    const auto want = read_bin<float>(folder() + "/" + file);
    for (std::size_t threads : {1, 2}) {
        const auto got = f.run(p, norm, threads);
        const float d = max_diff(got, want);
        BOOST_TEST_MESSAGE(file << " (" << threads << " threads): max |diff| = " << d);
        BOOST_TEST(d <= tol, file << ": max |diff| " << d << " > " << tol);
    }
}
} // namespace

BOOST_FIXTURE_TEST_SUITE(bert_tiny, fixture)

BOOST_AUTO_TEST_CASE(file_pooling_is_mean) {
    encoder_session<BertTiny> enc(model);
    BOOST_TEST((enc.default_pooling() == pooling_type::mean));
    BOOST_TEST(model.hp.n_embd == 64u);
    BOOST_TEST(model.max_sequence() == 64u);
}
BOOST_AUTO_TEST_CASE(per_token) { check(*this, pooling_type::none, -1, "embd_none_7.f32.bin", 2e-3f); }
BOOST_AUTO_TEST_CASE(per_token_l2) { check(*this, pooling_type::none, 2, "embd_none_l2_7.f32.bin", 1e-3f); }
BOOST_AUTO_TEST_CASE(mean) { check(*this, pooling_type::mean, -1, "pooled_mean_7.f32.bin", 2e-3f); }
BOOST_AUTO_TEST_CASE(mean_l2) { check(*this, pooling_type::mean, 2, "pooled_mean_l2_7.f32.bin", 1e-3f); }
BOOST_AUTO_TEST_CASE(cls) { check(*this, pooling_type::cls, -1, "pooled_cls_7.f32.bin", 2e-3f); }
BOOST_AUTO_TEST_CASE(cls_l2) { check(*this, pooling_type::cls, 2, "pooled_cls_l2_7.f32.bin", 1e-3f); }
BOOST_AUTO_TEST_CASE(last) { check(*this, pooling_type::last, -1, "pooled_last_7.f32.bin", 2e-3f); }
BOOST_AUTO_TEST_CASE(last_l2) { check(*this, pooling_type::last, 2, "pooled_last_l2_7.f32.bin", 1e-3f); }

BOOST_AUTO_TEST_CASE(compile_time_policies) {
    // MeanPooling + L2Normalize chosen by type equals the L2 mean golden file.
    using Mini = Encoder<MHA<4>, LearnedPositions<64>, MeanPooling, L2Normalize>;
    auto m = load_model<Mini>(folder() + "/model.gguf");
    auto enc = encoder_session(m, {.n_threads = 2});
    const token_span seqs[] = {tokens};
    const auto got = enc.embed(seqs);
    BOOST_TEST(max_diff(got, read_bin<float>(folder() + "/pooled_mean_l2_7.f32.bin")) <= 1e-3f);
}

BOOST_AUTO_TEST_SUITE_END()
