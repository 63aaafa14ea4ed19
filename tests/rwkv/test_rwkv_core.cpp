// RWKV-5.2, RWKV-6 and RWKV-7 composed on the decoder core (issue 37, item 7), used
// directly as Decoders (what Rwkv5/6/7<...>::core name and rwkv_session runs): a Decoder
// whose mixer is the RWKV time mix, whose feed-forward is the channel mix (each with its
// memory per sequence) and whose block is RwkvBlock loads llama.cpp's rwkv6 / rwkv7 GGUF
// fixtures and gives
//   - the shared fixtures' logits (float64 numpy transcription of ChatRWKV) at every
//     position and the final recurrent state, 1e-5 as tests/rwkv/test_rwkv_fixtures.cpp
//     holds the RWKV stack to (fixtures/README.md §5.4), fed as one prompt (1 and 2
//     threads) and token by token; rwkv.cpp's own expected logits;
//   - bit for bit the logits and the state of RWKV's own session API (rwkv_session, the
//     same core behind RWKV's front end) in each feeding;
//   - batched decode of three sequences bitwise each alone; a saved sequence restored
//     into another sequence continues exactly.
// rwkv.cpp's .bin files (v5.2, v6 FP32 / FP16, v7) run on the core through their conversion
// to llama.cpp's layout in memory (io/rwkv_bin_gguf.hpp), held to the same.
#define BOOST_TEST_MODULE rwkv_core
#include <boost/test/unit_test.hpp>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <span>
#include <string>
#include <vector>

#include "archetype/io/gguf_writer.hpp"
#include "archetype/io/rwkv_bin_gguf.hpp"
#include "archetype/models/decoder_model.hpp"
#include "archetype/runtime/decoder_session.hpp"
#include "archetype/runtime/rwkv_api.hpp"
#include "fixture_util.hpp"

using namespace archetype;
using rwkv_test::fixtures_dir;
using rwkv_test::max_diff;
using rwkv_test::read_f32;
using rwkv_test::read_tokens;

namespace {

// the compositions under test, spelled as a user would (Rwkv6<...>::core is the same up to the
// order and the defaults it names)
using FinchCore = Decoder<NoPE, LayerNorm, NormedEmbedding<LayerNorm>, Rwkv6TimeMix, RwkvChannelMix, RwkvBlock,
                          BlockSummedLogits>;
using EagleCore = Decoder<NoPE, LayerNorm, NormedEmbedding<LayerNorm>, Rwkv5TimeMix, RwkvChannelMix, RwkvBlock,
                          BlockSummedLogits>;
using GooseCore = Decoder<NoPE, LayerNorm, NormedEmbedding<LayerNorm>, Rwkv7TimeMix, Rwkv7ChannelMix, RwkvBlock,
                          BlockSummedLogits>;

enum class feed { sequence, token_by_token };

struct run_result {
    std::vector<float> logits; // T x V
    std::vector<float> state;  // rwkv.cpp's layout: per layer ffn shift, att shift, wkv
};

template <class D>
run_result run_core(const decoder_model<D>& m, const std::vector<std::int32_t>& ids, feed how, std::size_t threads) {
    // the RWKV session's prefill chunk (128 rows) and exact float activations
    auto s = session(m, {.n_threads = threads, .max_sequences = 1, .n_ubatch = 128,
                         .batch_activations = kernels::batch_activations::exact});
    run_result r;
    const std::size_t V = s.n_vocab();
    r.logits.assign(ids.size() * V, 0.f);
    if (how == feed::sequence) s.prefill(0, ids, r.logits.data());
    else
        for (std::size_t t = 0; t < ids.size(); ++t) s.decode(0, ids[t], r.logits.data() + t * V);
    r.state = s.save_sequence(0).state;
    return r;
}

template <class Arch>
run_result run_front(const rwkv_model<Arch>& m, const std::vector<std::int32_t>& ids, feed how, std::size_t threads) {
    auto s = session(m, {.n_threads = threads, .max_sequences = 1});
    run_result r;
    const std::size_t V = s.n_vocab();
    r.logits.assign(ids.size() * V, 0.f);
    if (how == feed::sequence) s.prefill(0, ids, r.logits.data());
    else
        for (std::size_t t = 0; t < ids.size(); ++t) s.decode(0, ids[t], r.logits.data() + t * V);
    const auto st = s.state(0);
    r.state.assign(st.begin(), st.end());
    return r;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

/// A fixture file on the core: a GGUF as it is, an rwkv.cpp .bin converted (io/rwkv_bin_gguf.hpp).
template <class D>
decoder_model<D> load_core(const std::string& file, float group_norm_eps = 64e-5f) {
    const std::string path = fixtures_dir() + "/" + file;
    if (file.ends_with(".gguf")) return load_model<D>(path);
    return decoder_model<D>::load(rwkv_bin::as_gguf(rwkv_bin::file::open(path), group_norm_eps));
}

template <class D, class Arch>
void check(const std::string& file, const std::string& expected_dir, const std::vector<std::string>& prompts,
           const std::string& rwkvcpp_expected, float group_norm_eps = 64e-5f) {
    const auto core = load_core<D>(file, group_norm_eps);
    const auto front = load_model<Arch>(fixtures_dir() + "/" + file, {.group_norm_eps = group_norm_eps});
    for (const std::string& prompt : prompts) {
        const auto ids = read_tokens(prompt);
        const auto want = read_f32(expected_dir + "/" + prompt + ".logits.f32.bin");
        const auto want_state = read_f32(expected_dir + "/" + prompt + ".state.f32.bin");
        for (feed how : {feed::sequence, feed::token_by_token})
            for (std::size_t threads : {std::size_t(1), std::size_t(2)}) {
                const auto got = run_core(core, ids, how, threads);
                const auto old = run_front(front, ids, how, threads);
                BOOST_REQUIRE_EQUAL(got.logits.size(), want.size());
                BOOST_REQUIRE_EQUAL(got.state.size(), want_state.size());
                const double dl = max_diff(got.logits.data(), want.data(), want.size());
                const double ds = max_diff(got.state.data(), want_state.data(), want_state.size(), true);
                BOOST_TEST_MESSAGE(file << " " << prompt << (how == feed::sequence ? " sequence" : " token-by-token")
                                        << ", " << threads << " threads: max |logit diff| " << dl
                                        << ", max state diff (rel) " << ds);
                BOOST_TEST(dl <= 1e-5);
                BOOST_TEST(ds <= 1e-5);
                BOOST_TEST(same_bits(got.logits, old.logits), "logits bitwise rwkv_session's");
                BOOST_TEST(same_bits(got.state, old.state), "state bitwise rwkv_session's");
            }
    }
    // rwkv.cpp's own expected logits after {34, 105, 110}
    if (rwkvcpp_expected.empty()) return;
    const auto want = read_f32(fixtures_dir() + "/" + rwkvcpp_expected);
    auto s = session(core, {.n_threads = 1});
    std::vector<float> last(s.n_vocab());
    s.prefill(0, std::vector<std::int32_t>{34, 105, 110}, last.data(), logits_rows::last);
    BOOST_REQUIRE_EQUAL(want.size(), last.size());
    BOOST_TEST(max_diff(last.data(), want.data(), want.size()) <= 1e-5);
}

template <class D>
void check_sequences(const std::string& file) {
    const auto m = load_model<D>(fixtures_dir() + "/" + file);
    const std::vector<std::vector<std::int32_t>> prompts{{34, 105, 110}, {84, 104, 101, 32, 113}, {102, 111}};
    const std::vector<std::int32_t> next{32, 98, 120};
    const std::size_t V = m.n_vocab();
    std::vector<std::vector<float>> alone;
    for (std::size_t i = 0; i < prompts.size(); ++i) {
        auto s = session(m, {.n_threads = 2, .max_sequences = 1});
        s.prefill(0, prompts[i], nullptr);
        std::vector<float> lg(V);
        s.decode(0, next[i], lg.data());
        alone.push_back(lg);
    }
    auto s = session(m, {.n_threads = 2, .max_sequences = 3});
    for (std::size_t i = 0; i < prompts.size(); ++i) s.prefill(seq_id(i), prompts[i], nullptr);
    const std::vector<seq_id> seqs{0, 1, 2};
    std::vector<float> batch(3 * V);
    s.decode(seqs, next, batch.data());
    for (std::size_t i = 0; i < 3; ++i)
        BOOST_TEST(std::equal(alone[i].begin(), alone[i].end(), batch.begin() + std::ptrdiff_t(i * V)), "sequence " << i);
    // saved after the prompt, restored into another sequence, forked from there
    auto a = session(m, {.n_threads = 1, .max_sequences = 1});
    a.prefill(0, prompts[1], nullptr);
    const auto saved = a.save_sequence(0);
    BOOST_TEST(saved.state.size() * sizeof(float) == a.recurrent_state_bytes_per_sequence());
    auto b = session(m, {.n_threads = 1, .max_sequences = 2});
    std::vector<float> restored(V), forked(V);
    // a snapshot belongs to its model: b restores one of its own, taken the same way
    b.prefill(1, prompts[1], nullptr);
    const auto own = b.save_sequence(1);
    BOOST_TEST(same_bits(own.state, saved.state));
    b.remove_sequence(1);
    b.restore_sequence(1, own);
    b.copy_sequence(1, 0);
    b.decode(1, next[1], restored.data());
    b.decode(0, next[1], forked.data());
    BOOST_TEST(restored == alone[1]);
    BOOST_TEST(forked == alone[1]);
}

} // namespace

BOOST_AUTO_TEST_CASE(v6_gguf_on_the_core) {
    check<FinchCore, Rwkv6<dynamic, dynamic>>("tiny-rwkv-6v0-1m-F32.gguf", fixtures_dir() + "/expected/tiny-rwkv-6v0-1m/gn64e-5",
                                              {"prompt3", "fox88-utf16le"}, "expected-logits-6v0-1m.bin");
}

BOOST_AUTO_TEST_CASE(v7_gguf_on_the_core) {
    check<GooseCore, Rwkv7<dynamic, dynamic>>("tiny-rwkv-7v0-834K-F32.gguf",
                                              fixtures_dir() + "/expected/tiny-rwkv-7v0-834K/gn64e-5", {"prompt3"},
                                              "expected-logits-7v0-834K.bin");
}

// rwkv.cpp's .bin files (v5.2, v6 FP32 and FP16, v7), converted to llama.cpp's layout in memory
BOOST_AUTO_TEST_CASE(v6_bin_on_the_core) {
    const std::string expected = fixtures_dir() + "/expected/tiny-rwkv-6v0-1m/gn64e-5";
    check<FinchCore, Rwkv6<dynamic, dynamic>>("tiny-rwkv-6v0-1m-FP32.bin", expected, {"prompt3", "fox88-utf16le"},
                                              "expected-logits-6v0-1m.bin");
    // the FP16 weights are the FP32 ones rounded, exactly (they are bf16 values)
    check<FinchCore, Rwkv6<dynamic, dynamic>>("tiny-rwkv-6v0-1m-FP16.bin", expected, {"prompt3", "fox88-utf16le"},
                                              "expected-logits-6v0-1m.bin");
}

BOOST_AUTO_TEST_CASE(v5_bin_on_the_core) {
    check<EagleCore, Rwkv5<dynamic, dynamic>>("tiny-rwkv-5v2-730K-FP32.bin",
                                              fixtures_dir() + "/expected/tiny-rwkv-5v2-730K/gn64e-5",
                                              {"prompt3", "fox88-utf16le"}, "");
    // rwkv.cpp computes v5.2's GroupNorm with eps 1e-5: its expected logits are for that eps
    check<EagleCore, Rwkv5<dynamic, dynamic>>("tiny-rwkv-5v2-730K-FP32.bin",
                                              fixtures_dir() + "/expected/tiny-rwkv-5v2-730K/gn1e-5",
                                              {"prompt3", "fox88-utf16le"}, "expected-logits-5v2-730K.bin", 1e-5f);
}

BOOST_AUTO_TEST_CASE(v7_bin_on_the_core) {
    check<GooseCore, Rwkv7<dynamic, dynamic>>("tiny-rwkv-7v0-834K-FP32.bin",
                                              fixtures_dir() + "/expected/tiny-rwkv-7v0-834K/gn64e-5", {"prompt3"},
                                              "expected-logits-7v0-834K.bin");
}

// A .bin file with a tensor the conversion does not know is refused by name, not dropped.
BOOST_AUTO_TEST_CASE(a_bin_tensor_the_conversion_does_not_know_is_refused) {
    const auto bytes = [] {
        std::ifstream in(fixtures_dir() + "/tiny-rwkv-6v0-1m-FP32.bin", std::ios::binary);
        return std::vector<char>(std::istreambuf_iterator<char>(in), {});
    }();
    // one more record: n_dims 1, key length 5, FP32, ne [1], "stray", one float
    std::vector<char> more(bytes);
    auto put = [&](std::int32_t v) {
        const char* p = reinterpret_cast<const char*>(&v);
        more.insert(more.end(), p, p + 4);
    };
    put(1);
    put(5);
    put(0);
    put(1);
    for (char ch : std::string("stray")) more.push_back(ch);
    put(0);
    const auto f = rwkv_bin::file::from_memory(std::as_bytes(std::span<const char>(more)));
    BOOST_CHECK_EXCEPTION(rwkv_bin::as_gguf(f), format_error, [](const format_error& e) {
        return std::string(e.what()).find("'stray'") != std::string::npos;
    });
}

// {arch}.token_shift_count is the block's to read: 2 (time mix and channel mix) loads and
// gives the same logits as a file without the key; 1 (a hybrid's file) is refused naming it.
BOOST_AUTO_TEST_CASE(token_shift_count_is_read_by_the_block) {
    const auto f = gguf::file::open(fixtures_dir() + "/tiny-rwkv-6v0-1m-F32.gguf");
    auto with_count = [&](std::uint64_t count) {
        gguf::writer w;
        for (const auto& e : f.metadata()) w.set(e.key, e.value);
        w.set("rwkv6.token_shift_count", count);
        for (const auto& t : f.tensors()) w.add_tensor(t.name, t.type, t.ne, t.data);
        return gguf::file::from_owned_bytes(w.write_to_memory());
    };
    const std::vector<std::int32_t> ids{34, 105, 110};
    auto last = [&](const decoder_model<FinchCore>& m) {
        auto s = session(m, {.n_threads = 1});
        std::vector<float> lg(s.n_vocab());
        s.prefill(0, ids, lg.data(), logits_rows::last);
        return lg;
    };
    const auto plain = load_model<FinchCore>(fixtures_dir() + "/tiny-rwkv-6v0-1m-F32.gguf");
    const auto two = decoder_model<FinchCore>::load(with_count(2));
    BOOST_TEST(last(two) == last(plain));
    BOOST_CHECK_EXCEPTION(decoder_model<FinchCore>::load(with_count(1)), shape_error, [](const shape_error& e) {
        return std::string(e.what()).find("'rwkv6.token_shift_count' = 1") != std::string::npos;
    });
}

BOOST_AUTO_TEST_CASE(v6_sequences_batches_and_saved_state_on_the_core) { check_sequences<FinchCore>("tiny-rwkv-6v0-1m-F32.gguf"); }

BOOST_AUTO_TEST_CASE(v7_sequences_batches_and_saved_state_on_the_core) { check_sequences<GooseCore>("tiny-rwkv-7v0-834K-F32.gguf"); }

BOOST_AUTO_TEST_CASE(describe_names_the_rwkv_parts) {
    const auto m = load_model<FinchCore>(fixtures_dir() + "/tiny-rwkv-6v0-1m-F32.gguf");
    const std::string d = m.describe();
    BOOST_TEST_MESSAGE(d);
    BOOST_TEST(d.find("Rwkv6TimeMix") != std::string::npos);
    BOOST_TEST(d.find("RwkvChannelMix") != std::string::npos);
    BOOST_TEST(d.find("RWKV: x + mixer") != std::string::npos);
    // 12 layers x (ffn shift 64 + att shift 64 + wkv 8 heads x 8 x 8) floats
    BOOST_TEST(d.find(std::to_string(12 * (64 + 64 + 8 * 8 * 8) * 4) + " bytes per sequence") != std::string::npos);
}
