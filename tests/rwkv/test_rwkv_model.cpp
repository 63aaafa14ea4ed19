// RWKV-5/6 on seeded random weights: the WKV kernel against its scalar twin,
// sequence mode against token by token, forks, saved states, batched decode,
// the .bin and GGUF loaders against each other, argument checks and hostile
// rwkv.cpp files.
#define BOOST_TEST_MODULE rwkv_model
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "archetype/kernels/reference/wkv.hpp"
#include "archetype/kernels/wkv.hpp"
#include "archetype/runtime/rwkv_api.hpp"
#include "fixture_util.hpp"
#include "random_model.hpp"

using namespace archetype;
using rwkv_test::max_diff;
using rwkv_test::model_spec;

namespace {

using Finch = Rwkv6<dynamic, dynamic>;
using Eagle = Rwkv5<dynamic, dynamic>;
using Finch64 = Rwkv6<64, 8>;
using Finch128x32 = Rwkv6<128, 32>;

std::vector<std::int32_t> random_tokens(std::size_t n, std::size_t V, unsigned seed) {
    std::mt19937 g(seed);
    std::vector<std::int32_t> t(n);
    for (auto& x : t) x = std::int32_t(g() % V);
    return t;
}

template <class Arch>
std::vector<float> logits_token_by_token(const rwkv_model<Arch>& m, const std::vector<std::int32_t>& ids) {
    auto s = session(m, {.n_threads = 1});
    std::vector<float> out(ids.size() * s.n_vocab());
    for (std::size_t t = 0; t < ids.size(); ++t) s.decode(0, ids[t], out.data() + t * s.n_vocab());
    return out;
}

template <class Arch>
void check_sequence_mode(const model_spec& spec) {
    const auto bytes = rwkv_test::make_bin(spec);
    const auto m = load_model_from_memory<Arch>(bytes);
    const auto ids = random_tokens(45, spec.V, 7);
    const auto ref = logits_token_by_token(m, ids);
    for (std::size_t chunk : {std::size_t(1), std::size_t(16), std::size_t(128)}) {
        auto s = session(m, {.n_threads = 2, .max_sequences = 1, .prefill_chunk = chunk});
        std::vector<float> got(ref.size());
        s.prefill(0, ids, got.data());
        const double d = max_diff(got.data(), ref.data(), ref.size());
        BOOST_TEST_MESSAGE("v" << spec.version << (spec.f16 ? " F16" : " F32") << " chunk " << chunk
                               << ": sequence vs token by token max diff " << d);
        BOOST_TEST(d <= 1e-5);
        // last-row-only logits equal the last row of all
        auto s2 = session(m, {.n_threads = 1, .max_sequences = 1, .prefill_chunk = chunk});
        std::vector<float> last(s2.n_vocab());
        s2.prefill(0, ids, last.data(), rwkv_logits::last);
        BOOST_TEST(max_diff(last.data(), got.data() + (ids.size() - 1) * s2.n_vocab(), last.size()) <= 1e-5);
    }
}

} // namespace

BOOST_AUTO_TEST_CASE(wkv_kernel_matches_scalar_twin) {
    std::mt19937 g(3);
    std::uniform_real_distribution<float> U(-1.f, 1.f), W(0.3f, 0.999f);
    for (std::size_t N : {4u, 8u, 16u, 24u, 64u, 128u}) {
        const std::size_t H = 3, C = H * N, T = 7;
        for (std::size_t ldw : {std::size_t(0), C}) {
            std::vector<float> r(T * C), k(T * C), v(T * C), w(T * C), u(C), S(H * N * N);
            for (auto* b : {&r, &k, &v, &u, &S})
                for (auto& x : *b) x = U(g);
            for (auto& x : w) x = W(g);
            auto S2 = S;
            std::vector<float> o1(T * C), o2(T * C);
            thread_pool pool(2);
            kernels::wkv(T, H, N, r.data(), k.data(), v.data(), w.data(), C, ldw, u.data(), S.data(), o1.data(), C, &pool);
            kernels::reference::wkv(T, H, N, r.data(), k.data(), v.data(), w.data(), C, ldw, u.data(), S2.data(),
                                    o2.data(), C);
            // the kernel sums more exactly than the plain float twin: compare at float-sum accuracy
            BOOST_TEST(max_diff(o1.data(), o2.data(), o1.size(), true) <= 1e-5, "N " << N << " ldw " << ldw);
            BOOST_TEST(max_diff(S.data(), S2.data(), S.size(), true) <= 1e-6, "N " << N << " ldw " << ldw);
        }
    }
}

BOOST_AUTO_TEST_CASE(sequence_equals_token_by_token) {
    check_sequence_mode<Finch>({.version = 6});
    check_sequence_mode<Finch>({.version = 6, .C = 128, .N = 64, .f16 = true, .seed = 2});
    check_sequence_mode<Eagle>({.version = 5});
    check_sequence_mode<Eagle>({.version = 5, .C = 96, .N = 32, .f16 = true, .seed = 3});
}

BOOST_AUTO_TEST_CASE(bin_and_gguf_load_the_same_model) {
    for (bool f16 : {false, true}) {
        const model_spec spec{.version = 6, .C = 128, .N = 32, .f16 = f16, .seed = 9};
        const auto bin = rwkv_test::make_bin(spec);
        const auto gguf = rwkv_test::make_gguf(spec).write_to_memory();
        const auto a = load_model_from_memory<Finch>(bin);
        const auto b = load_model_from_memory<Finch128x32>(gguf);
        const auto ids = random_tokens(20, spec.V, 1);
        const auto la = logits_token_by_token(a, ids);
        const auto lb = logits_token_by_token(b, ids);
        // same values; only the kernels' paths may differ with the data's alignment
        BOOST_TEST(max_diff(la.data(), lb.data(), la.size()) <= 1e-5);
    }
}

BOOST_AUTO_TEST_CASE(fork_save_restore_and_batch) {
    const model_spec spec{.version = 6, .C = 128, .N = 64, .seed = 5};
    const auto bytes = rwkv_test::make_bin(spec);
    const auto m = load_model_from_memory<Finch>(bytes);
    const std::size_t V = spec.V;
    auto s = session(m, {.n_threads = 2, .max_sequences = 4});
    const auto prompt = random_tokens(30, V, 2), cont = random_tokens(10, V, 3);
    s.prefill(0, prompt);
    // fork: 1 continues exactly as 0
    s.copy_sequence(0, 1);
    const auto saved = s.save_state(0);
    std::vector<float> a(V), b(V), c(V);
    std::vector<float> seq0, seq1, seq2;
    for (auto t : cont) {
        s.decode(0, t, a.data());
        s.decode(1, t, b.data());
        seq0.insert(seq0.end(), a.begin(), a.end());
        seq1.insert(seq1.end(), b.begin(), b.end());
    }
    BOOST_TEST(max_diff(seq0.data(), seq1.data(), seq0.size()) == 0.0);
    // save -> restore into another slot -> continue == uninterrupted
    s.restore_state(2, saved);
    for (auto t : cont) {
        s.decode(2, t, c.data());
        seq2.insert(seq2.end(), c.begin(), c.end());
    }
    BOOST_TEST(max_diff(seq0.data(), seq2.data(), seq0.size()) == 0.0);
    const auto st0 = s.state(0), st2 = s.state(2);
    BOOST_TEST(std::memcmp(st0.data(), st2.data(), st0.size() * 4) == 0);
    // two sequences in one decode batch == each alone
    s.reset(0);
    s.reset(3);
    s.prefill(3, random_tokens(12, V, 4));
    auto solo = session(m, {.n_threads = 2, .max_sequences = 2});
    solo.prefill(1, random_tokens(12, V, 4));
    const auto t0 = random_tokens(6, V, 5), t3 = random_tokens(6, V, 6);
    for (std::size_t i = 0; i < t0.size(); ++i) {
        const std::int32_t seqs[2] = {0, 3};
        const std::int32_t toks[2] = {t0[i], t3[i]};
        std::vector<float> batch(2 * V), alone0(V), alone3(V);
        s.decode(seqs, toks, batch.data());
        solo.decode(0, t0[i], alone0.data());
        solo.decode(1, t3[i], alone3.data());
        BOOST_TEST(max_diff(batch.data(), alone0.data(), V) <= 1e-5);
        BOOST_TEST(max_diff(batch.data() + V, alone3.data(), V) <= 1e-5);
    }
    // memory per sequence is the state, whatever the length
    BOOST_TEST(s.state_bytes() == spec.L * (2 + spec.N) * spec.C * sizeof(float));
}

BOOST_AUTO_TEST_CASE(bad_arguments_leave_state_unchanged) {
    const model_spec spec{.version = 6};
    const auto bytes = rwkv_test::make_bin(spec);
    const auto m = load_model_from_memory<Finch>(bytes);
    auto s = session(m, {.n_threads = 1, .max_sequences = 2});
    s.prefill(0, random_tokens(5, spec.V, 1));
    const auto before = std::vector<float>(s.state(0).begin(), s.state(0).end());
    const std::vector<std::int32_t> bad{1, 2, std::int32_t(spec.V)};
    BOOST_CHECK_THROW(s.prefill(0, bad), argument_error);
    const std::vector<std::int32_t> neg{-1};
    BOOST_CHECK_THROW(s.prefill(0, neg), argument_error);
    BOOST_CHECK_THROW(s.prefill(2, random_tokens(2, spec.V, 1)), argument_error);
    const std::int32_t seqs[2] = {0, 0}, toks[2] = {1, 2};
    BOOST_CHECK_THROW(s.decode(seqs, toks, nullptr), argument_error);
    auto saved = s.save_state(0);
    saved.pop_back();
    BOOST_CHECK_THROW(s.restore_state(0, saved), argument_error);
    const auto after = std::vector<float>(s.state(0).begin(), s.state(0).end());
    BOOST_TEST(before == after);
}

BOOST_AUTO_TEST_CASE(describe_static_finch) {
    const auto d = describe<Rwkv6<2048, 64>>();
    BOOST_TEST_MESSAGE(d);
    BOOST_TEST(d.find("Rwkv6<2048, 64>") != std::string::npos);
    BOOST_TEST(d.find("32 heads") != std::string::npos);
    BOOST_TEST(d.find(std::to_string((2 + 64) * 2048 * 4) + " bytes per layer") != std::string::npos);
    static_assert(Rwkv6<2048, 64>::n_head == 32);
    static_assert(Rwkv6<2048, 64>::state_floats_per_layer == 66 * 2048);
}

// ---- hostile rwkv.cpp files
namespace {
std::vector<std::byte> small_bin() { return rwkv_test::make_bin({.version = 6, .C = 32, .N = 8, .L = 1, .V = 16, .F = 32, .DM = 4, .DD = 4}); }
void set_i32(std::vector<std::byte>& b, std::size_t off, std::int32_t v) { std::memcpy(b.data() + off, &v, 4); }
std::size_t find_record(const std::vector<std::byte>& b, const std::string& name) {
    const std::string_view all(reinterpret_cast<const char*>(b.data()), b.size());
    const auto k = all.find(name);
    BOOST_REQUIRE(k != std::string_view::npos);
    return k; // the key starts here; the record header is before it
}
template <class E = format_error>
void expect_error(const std::vector<std::byte>& b, const std::string& needle) {
    try {
        (void)load_model_from_memory<Finch>(b);
        BOOST_ERROR("no error for a file that should fail with '" << needle << "'");
    } catch (const E& e) {
        BOOST_TEST_MESSAGE("  refused: " << e.what());
        BOOST_TEST(std::string(e.what()).find(needle) != std::string::npos, e.what());
    }
}
} // namespace

BOOST_AUTO_TEST_CASE(hostile_bin_files) {
    const auto good = small_bin();
    BOOST_REQUIRE_NO_THROW((void)load_model_from_memory<Finch>(good));
    auto b = good;
    set_i32(b, 0, 0x12345678);
    expect_error(b, "unknown magic");
    b = good;
    set_i32(b, 4, 102);
    expect_error(b, "version 102");
    b = good;
    set_i32(b, 20, 9);
    expect_error(b, "Q8_0");
    // a tensor of a quantised type
    b = good;
    {
        const std::string name = "blocks.0.att.key.weight";
        const std::size_t key = find_record(b, name);
        set_i32(b, key - 4 * 2 - 4, 2); // n_dims, key_len, type, ne0, ne1 | key
        expect_error(b, "Q4_0");
    }
    // wrong shape for its name (same element count)
    b = good;
    {
        const std::size_t key = find_record(b, "blocks.0.ffn.key.weight");
        set_i32(b, key - 8, 32);  // ne0 = F
        set_i32(b, key - 4, 32);  // ne1 = C  (both 32 here: same bytes, so change the count instead)
        set_i32(b, key - 8, 16);
        set_i32(b, key - 4, 64);
        expect_error(b, "ffn.key.weight' has shape [16, 64]");
    }
    // tensor larger than the file
    b = good;
    {
        const std::size_t key = find_record(b, "head.weight");
        set_i32(b, key - 4, 1 << 30);
        expect_error(b, "larger than");
    }
    // n_dims out of range, negative dims, huge key length
    b = good;
    set_i32(b, 24, 7);
    expect_error(b, "n_dims 7");
    b = good;
    set_i32(b, 28, 1 << 30);
    expect_error(b, "key length");
    // static dimension disagreeing with the file
    BOOST_CHECK_EXCEPTION((void)load_model_from_memory<Finch64>(good), shape_error, [](const shape_error& e) {
        return std::string(e.what()).find("D = 64") != std::string::npos &&
               std::string(e.what()).find("n_embd = 32") != std::string::npos;
    });
    // truncation anywhere: an error, never a crash
    std::size_t errors = 0;
    for (std::size_t n = 0; n < good.size(); n += (n < 200 ? 1 : 97)) {
        std::vector<std::byte> t(good.begin(), good.begin() + std::ptrdiff_t(n));
        try {
            (void)load_model_from_memory<Finch>(t);
        } catch (const archetype::error&) {
            ++errors;
            continue;
        }
        BOOST_ERROR("truncated file of " << n << " bytes loaded");
    }
    BOOST_TEST(errors > 0u);
    // random byte flips: an error or a model, never a crash or hang
    std::mt19937 g(11);
    for (int i = 0; i < 300; ++i) {
        auto f = good;
        for (int k = 0; k < 4; ++k) f[g() % std::min<std::size_t>(f.size(), 600)] = std::byte(g());
        try {
            const auto m = load_model_from_memory<Finch>(f);
            auto s = session(m, {.n_threads = 1});
            s.decode(0, 1, nullptr);
        } catch (const archetype::error&) {
        }
    }
}
