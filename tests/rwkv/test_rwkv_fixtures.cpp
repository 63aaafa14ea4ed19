// RWKV v5.2, v6 and v7 against the shared fixtures: logits at every position of
// prompt3 and fox88-utf16le (v7: prompt3) (float64 numpy transcription of the
// ChatRWKV reference), rwkv.cpp's own expected logits, and the final recurrent state;
// for v7 also batched decode of several sequences and a saved and restored state.
// Tolerances from fixtures/README.md §5.4: 1e-5 on logits, 1e-5 x max(1, |v|) on state.
#define BOOST_TEST_MODULE rwkv_fixtures
#include <boost/test/unit_test.hpp>

#include <cstdio>
#include <string>
#include <vector>

#include <filesystem>

#include "archetype/io/gguf_writer.hpp"
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
void check_against(const rwkv_model<Arch>& m, const std::string& expected_dir, const std::string& label,
                   const std::vector<std::string>& prompts = {"prompt3", "fox88-utf16le"}) {
    for (const std::string& prompt : prompts) {
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
using Goose = Rwkv7<dynamic, dynamic>;
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

BOOST_AUTO_TEST_CASE(v7_fp32_bin) {
    const auto m = load_model<Goose>(fixtures_dir() + "/tiny-rwkv-7v0-834K-FP32.bin");
    check_against(m, fixtures_dir() + "/expected/tiny-rwkv-7v0-834K/gn64e-5", "7v0 FP32 .bin", {"prompt3"});
    check_rwkvcpp_expected(m, "expected-logits-7v0-834K.bin", "7v0 FP32 .bin");
}

BOOST_AUTO_TEST_CASE(v7_f32_gguf) {
    const auto m = load_model<Rwkv7<64, 64>>(fixtures_dir() + "/tiny-rwkv-7v0-834K-F32.gguf");
    check_against(m, fixtures_dir() + "/expected/tiny-rwkv-7v0-834K/gn64e-5", "7v0 F32 GGUF", {"prompt3"});
    check_rwkvcpp_expected(m, "expected-logits-7v0-834K.bin", "7v0 F32 GGUF");
}

// Per-sequence state as for v6: three sequences decoded in one batch give, bit for
// bit, what each gives alone; a state saved after a prompt and restored into another
// session (and another sequence) continues exactly; copy_sequence forks it.
BOOST_AUTO_TEST_CASE(v7_sequences_batches_and_saved_state) {
    const auto m = load_model<Goose>(fixtures_dir() + "/tiny-rwkv-7v0-834K-F32.gguf");
    const std::vector<std::vector<std::int32_t>> prompts{{34, 105, 110}, {84, 104, 101, 32, 113}, {102, 111}};
    const std::vector<std::int32_t> next{32, 98, 120};
    const std::size_t V = m.hparams().n_vocab;
    // alone: prompt, then one more token
    std::vector<std::vector<float>> alone;
    for (std::size_t i = 0; i < prompts.size(); ++i) {
        auto s = session(m, {.n_threads = 2, .max_sequences = 1});
        s.prefill(0, prompts[i]);
        std::vector<float> lg(V);
        s.decode(0, next[i], lg.data());
        alone.push_back(lg);
    }
    // together: three sequences, the last tokens in one batched decode
    auto s = session(m, {.n_threads = 2, .max_sequences = 3});
    for (std::size_t i = 0; i < prompts.size(); ++i) s.prefill(seq_id(i), prompts[i]);
    const std::vector<seq_id> seqs{0, 1, 2};
    std::vector<float> batch(3 * V);
    s.decode(seqs, next, batch.data());
    for (std::size_t i = 0; i < 3; ++i)
        BOOST_TEST(std::equal(alone[i].begin(), alone[i].end(), batch.begin() + i * V), "sequence " << i);
    // saved after the prompt, restored elsewhere
    auto a = session(m, {.n_threads = 1, .max_sequences = 1});
    a.prefill(0, prompts[1]);
    const auto saved = a.save_state(0);
    auto b = session(m, {.n_threads = 1, .max_sequences = 2});
    b.restore_state(1, saved);
    std::vector<float> restored(V), forked(V);
    b.copy_sequence(1, 0);
    b.decode(1, next[1], restored.data());
    b.decode(0, next[1], forked.data());
    BOOST_TEST(restored == alone[1]);
    BOOST_TEST(forked == alone[1]);
}

BOOST_AUTO_TEST_CASE(v7_files_are_refused_by_other_versions_and_stages) {
    BOOST_CHECK_EXCEPTION(load_model<Finch>(fixtures_dir() + "/tiny-rwkv-7v0-834K-F32.gguf"), shape_error,
                          [](const shape_error& e) { return std::string(e.what()).find("Rwkv7") != std::string::npos; });
    BOOST_CHECK_EXCEPTION(load_model<Finch>(fixtures_dir() + "/tiny-rwkv-7v0-834K-FP32.bin"), shape_error,
                          [](const shape_error& e) { return std::string(e.what()).find("Rwkv7") != std::string::npos; });
    BOOST_CHECK_EXCEPTION(load_model<Eagle>(fixtures_dir() + "/tiny-rwkv-7v0-834K-FP32.bin"), shape_error,
                          [](const shape_error& e) { return std::string(e.what()).find("v7") != std::string::npos; });
    BOOST_CHECK_EXCEPTION(load_model<Goose>(fixtures_dir() + "/tiny-rwkv-6v0-1m-F32.gguf"), shape_error,
                          [](const shape_error& e) { return std::string(e.what()).find("Rwkv6") != std::string::npos; });
    BOOST_CHECK_EXCEPTION(load_model<Goose>(fixtures_dir() + "/tiny-rwkv-6v0-1m-FP32.bin"), shape_error,
                          [](const shape_error& e) { return std::string(e.what()).find("Rwkv6") != std::string::npos; });
    // a pipeline stage after layer 0 would need layer 0's values
    BOOST_CHECK_EXCEPTION(load_model<Goose>(fixtures_dir() + "/tiny-rwkv-7v0-834K-F32.gguf", {.layers = {4, 8}}),
                          shape_error,
                          [](const shape_error& e) { return std::string(e.what()).find("v_first") != std::string::npos; });
    // the first stage loads
    const auto first = load_model<Goose>(fixtures_dir() + "/tiny-rwkv-7v0-834K-F32.gguf", {.layers = {0, 4}});
    BOOST_TEST(!first.has_head());
}

// No silent drop: a tensor no RWKV loader reads is refused by name (v6 and v7 GGUF).
BOOST_AUTO_TEST_CASE(a_stray_tensor_is_refused_by_name) {
    for (const std::string file : {"tiny-rwkv-7v0-834K-F32.gguf", "tiny-rwkv-6v0-1m-F32.gguf"}) {
        const auto f = gguf::file::open(fixtures_dir() + "/" + file);
        gguf::writer w;
        for (const auto& e : f.metadata()) w.set(e.key, e.value);
        for (const auto& t : f.tensors()) w.add_tensor(t.name, t.type, t.ne, t.data);
        const std::vector<float> extra(64, 0.5f);
        w.add_tensor("blk.3.time_mix_stray.bias", ggml_type::F32, {64}, extra);
        const auto path = (std::filesystem::temp_directory_path() / ("archetype_stray_" + file)).string();
        w.write(path);
        // the core's tensor ledger refuses it (a shape_error, as for every decoder: decoder_model)
        auto has_name = [](const shape_error& e) {
            return std::string(e.what()).find("'blk.3.time_mix_stray.bias'") != std::string::npos;
        };
        if (file.find("7v0") != std::string::npos)
            BOOST_CHECK_EXCEPTION(load_model<Goose>(path), shape_error, has_name);
        else
            BOOST_CHECK_EXCEPTION(load_model<Finch>(path), shape_error, has_name);
        std::filesystem::remove(path);
    }
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

BOOST_AUTO_TEST_CASE(describe_loaded_v7) {
    const auto m = load_model<Goose>(fixtures_dir() + "/tiny-rwkv-7v0-834K-FP32.bin");
    const auto d = describe(m);
    BOOST_TEST_MESSAGE(d);
    BOOST_TEST(d.find("RWKV-7 Goose") != std::string::npos);
    BOOST_TEST(d.find("decay 32, in-context rate 32, value residual 32, gate 32") != std::string::npos);
    BOOST_TEST(d.find("202752 bytes per sequence") != std::string::npos); // 12 x (2 + 64) x 64 x 4
}

BOOST_AUTO_TEST_CASE(describe_loaded) {
    const auto m = load_model<Finch>(fixtures_dir() + "/tiny-rwkv-6v0-1m-F32.gguf");
    const auto d = describe(m);
    BOOST_TEST_MESSAGE(d);
    BOOST_TEST(d.find("layers:") != std::string::npos);
    BOOST_TEST(d.find("30720 bytes per sequence") != std::string::npos); // 12 x (2 + 8) x 64 x 4
}
