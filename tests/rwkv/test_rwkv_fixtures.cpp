// RWKV v5.2 and v6 against the shared fixtures: logits at every position of
// prompt3 and fox88-utf16le (float64 numpy transcription of the ChatRWKV
// reference), rwkv.cpp's own expected logits, and the final recurrent state.
// Tolerances from fixtures/README.md §5.4: 1e-5 on logits, 1e-5 x max(1, |v|) on state.
#define BOOST_TEST_MODULE rwkv_fixtures
#include <boost/test/unit_test.hpp>

#include <cstdio>
#include <string>
#include <vector>

#include "archetype/runtime/rwkv_api.hpp"
#include "fixture_util.hpp"

using namespace archetype;
using rwkv_test::fixtures_dir;
using rwkv_test::max_diff;
using rwkv_test::read_f32;
using rwkv_test::read_tokens;

namespace {

template <class Arch>
struct run_result {
    std::vector<float> logits; // T x V
    std::vector<float> state;
};

enum class feed { sequence, token_by_token };

template <class Arch>
run_result<Arch> run(const rwkv_model<Arch>& m, const std::vector<std::int32_t>& ids, feed how, std::size_t threads = 1) {
    auto s = session(m, {.n_threads = threads, .max_sequences = 1});
    run_result<Arch> r;
    const std::size_t V = s.n_vocab();
    r.logits.assign(ids.size() * V, 0.f);
    if (how == feed::sequence) {
        s.prefill(0, ids, r.logits.data());
    } else {
        for (std::size_t t = 0; t < ids.size(); ++t) s.decode(0, ids[t], r.logits.data() + t * V);
    }
    const auto st = s.state(0);
    r.state.assign(st.begin(), st.end());
    return r;
}

template <class Arch>
void check_against(const rwkv_model<Arch>& m, const std::string& expected_dir, const std::string& label) {
    for (const std::string prompt : {"prompt3", "fox88-utf16le"}) {
        const auto ids = read_tokens(prompt);
        const auto want = read_f32(expected_dir + "/" + prompt + ".logits.f32.bin");
        const auto want_state = read_f32(expected_dir + "/" + prompt + ".state.f32.bin");
        for (feed how : {feed::sequence, feed::token_by_token}) {
            const auto got = run(m, ids, how, how == feed::sequence ? 2 : 1);
            BOOST_REQUIRE_EQUAL(got.logits.size(), want.size());
            BOOST_REQUIRE_EQUAL(got.state.size(), want_state.size());
            const double dl = max_diff(got.logits.data(), want.data(), want.size());
            const double ds = max_diff(got.state.data(), want_state.data(), want_state.size(), true);
            BOOST_TEST_MESSAGE(label << " " << prompt << (how == feed::sequence ? " sequence" : " token-by-token")
                                     << ": max |logit diff| " << dl << ", max state diff (rel) " << ds);
            BOOST_TEST(dl <= 1e-5);
            BOOST_TEST(ds <= 1e-5);
        }
    }
}

template <class Arch>
void check_rwkvcpp_expected(const rwkv_model<Arch>& m, const std::string& file, const std::string& label) {
    const auto want = read_f32(fixtures_dir() + "/" + file);
    const std::vector<std::int32_t> ids{34, 105, 110};
    auto s = session(m, {.n_threads = 1});
    std::vector<float> last(s.n_vocab());
    s.prefill(0, ids, last.data(), rwkv_logits::last);
    BOOST_REQUIRE_EQUAL(want.size(), last.size());
    const double d = max_diff(last.data(), want.data(), want.size());
    double sum = 0;
    for (std::size_t i = 0; i < want.size(); ++i) sum += double(last[i]) - want[i];
    BOOST_TEST_MESSAGE(label << " vs rwkv.cpp " << file << ": max |diff| " << d << ", sum of diffs " << sum);
    BOOST_TEST(d <= 1e-5);
}

using Finch = Rwkv6<dynamic, dynamic>;
using Eagle = Rwkv5<dynamic, dynamic>;
using Finch2048 = Rwkv6<2048, 64>;
using Finch64x16 = Rwkv6<64, 16>;

} // namespace

BOOST_AUTO_TEST_CASE(v6_fp32_bin) {
    const auto m = load_model<Finch>(fixtures_dir() + "/tiny-rwkv-6v0-1m-FP32.bin");
    check_against(m, fixtures_dir() + "/expected/tiny-rwkv-6v0-1m/gn64e-5", "6v0 FP32 .bin");
    check_rwkvcpp_expected(m, "expected-logits-6v0-1m.bin", "6v0 FP32 .bin");
}

BOOST_AUTO_TEST_CASE(v6_fp16_bin) {
    // the FP16 weights are the FP32 ones rounded, exactly (they are bf16 values)
    const auto m = load_model<Finch>(fixtures_dir() + "/tiny-rwkv-6v0-1m-FP16.bin");
    check_against(m, fixtures_dir() + "/expected/tiny-rwkv-6v0-1m/gn64e-5", "6v0 FP16 .bin");
    check_rwkvcpp_expected(m, "expected-logits-6v0-1m.bin", "6v0 FP16 .bin");
}

BOOST_AUTO_TEST_CASE(v6_f32_gguf) {
    const auto m = load_model<Rwkv6<64, 8>>(fixtures_dir() + "/tiny-rwkv-6v0-1m-F32.gguf");
    check_against(m, fixtures_dir() + "/expected/tiny-rwkv-6v0-1m/gn64e-5", "6v0 F32 GGUF");
    check_rwkvcpp_expected(m, "expected-logits-6v0-1m.bin", "6v0 F32 GGUF");
}

BOOST_AUTO_TEST_CASE(v5_fp32_bin_official_eps) {
    const auto m = load_model<Eagle>(fixtures_dir() + "/tiny-rwkv-5v2-730K-FP32.bin", {.group_norm_eps = 64e-5f});
    check_against(m, fixtures_dir() + "/expected/tiny-rwkv-5v2-730K/gn64e-5", "5v2 eps 64e-5");
}

BOOST_AUTO_TEST_CASE(v5_fp32_bin_rwkvcpp_eps) {
    const auto m = load_model<Rwkv5<64, 8>>(fixtures_dir() + "/tiny-rwkv-5v2-730K-FP32.bin", {.group_norm_eps = 1e-5f});
    check_against(m, fixtures_dir() + "/expected/tiny-rwkv-5v2-730K/gn1e-5", "5v2 eps 1e-5");
    check_rwkvcpp_expected(m, "expected-logits-5v2-730K.bin", "5v2 eps 1e-5");
}

BOOST_AUTO_TEST_CASE(static_dims_must_match_the_file) {
    BOOST_CHECK_EXCEPTION(load_model<Finch2048>(fixtures_dir() + "/tiny-rwkv-6v0-1m-FP32.bin"), shape_error,
                          [](const shape_error& e) {
                              const std::string w = e.what();
                              return w.find("2048") != std::string::npos && w.find("64") != std::string::npos;
                          });
    BOOST_CHECK_THROW(load_model<Finch64x16>(fixtures_dir() + "/tiny-rwkv-6v0-1m-F32.gguf"), shape_error);
    BOOST_CHECK_THROW(load_model<Eagle>(fixtures_dir() + "/tiny-rwkv-6v0-1m-FP32.bin"), shape_error);
    BOOST_CHECK_THROW(load_model<Finch>(fixtures_dir() + "/tiny-rwkv-5v2-730K-FP32.bin"), shape_error);
}

BOOST_AUTO_TEST_CASE(describe_loaded) {
    const auto m = load_model<Finch>(fixtures_dir() + "/tiny-rwkv-6v0-1m-F32.gguf");
    const auto d = describe(m);
    BOOST_TEST_MESSAGE(d);
    BOOST_TEST(d.find("layers:") != std::string::npos);
    BOOST_TEST(d.find("30720 bytes per sequence") != std::string::npos); // 12 x (2 + 8) x 64 x 4
}
