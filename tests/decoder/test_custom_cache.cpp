// A cache policy written outside the library (this file is its only file):
// AuditedCache<Inner> keeps keys and values as Inner does and records how many
// key rows each attention call covers. Checks: the logits are Inner's bit for
// bit (the hooks are all a session uses), and the key counts are what the mask
// defines — a decoded token at position p under SlidingWindow<W> on a full cache
// attends exactly min(p + 1, W) keys; a ring of W cells (RollingCache) offers W
// cells once full, of which the rule keeps the same min(p + 1, W).
#define BOOST_TEST_MODULE custom_cache
#include <boost/test/unit_test.hpp>

#include <cstring>
#include <vector>

#include "archetype/models/decoder_model.hpp"
#include "archetype/runtime/decoder_session.hpp"
#include "decoder_test_util.hpp"

using namespace archetype;

/// The user's policy: a tag on the cache axis, with the figures describe() reads.
template <class Inner>
struct AuditedCache {
    using axis = archetype::axis::cache;
    static constexpr std::string_view name = "AuditedCache";
    static constexpr bool rolling = Inner::rolling;
    static constexpr dim_t sink = Inner::sink;
    static std::string describe() { return "AuditedCache<" + Inner::describe() + ">"; }
};

/// Per attention call: rows offered (n_kv) and rows the query sees (single-row calls).
struct audit_log {
    std::vector<std::size_t> offered, visible;
};
inline audit_log* g_log = nullptr;

/// Its behaviour: Inner's, with every call to attention recorded.
template <class Inner>
struct archetype::cache_impl<AuditedCache<Inner>> {
    using inner = cache_impl<Inner>;
    using scratch = typename inner::scratch;
    static std::size_t chunk_limit(const runtime::cache_geometry& g) { return inner::chunk_limit(g); }
    static runtime::kv_layout layout(const runtime::cache_geometry& g) { return inner::layout(g); }
    static void init(const runtime::cache_geometry& g, scratch& s) { inner::init(g, s); }
    static std::size_t attention_keys(const runtime::cache_geometry& g) { return inner::attention_keys(g); }
    template <class Run>
    static void attend(runtime::kv_cache& c, scratch& s, runtime::attend_step& st, Run&& run) {
        inner::attend(c, s, st, [&](const kernels::attention_params& p, auto&& visible, auto&& range, auto&& key_pos) {
            if (g_log && p.n_q == 1) {
                g_log->offered.push_back(p.n_kv);
                std::size_t n = 0;
                for (std::size_t j = 0; j < p.n_kv; ++j) n += visible(0, j) ? 1 : 0;
                g_log->visible.push_back(n);
            }
            run(p, visible, range, key_pos);
        });
    }
    static void commit(runtime::kv_cache& c, std::size_t s, std::size_t n) { inner::commit(c, s, n); }
};

namespace {
constexpr std::size_t W = 16, n_layer = 2;

template <class D>
std::vector<float> decode_all(const decoder_model<D>& m, const std::vector<std::int32_t>& t, audit_log* log) {
    g_log = log;
    auto s = session(m, {.n_threads = 1, .max_sequences = 1, .n_ctx = 256});
    std::vector<float> out(t.size() * m.n_vocab());
    for (std::size_t i = 0; i < t.size(); ++i) s.decode(0, t[i], out.data() + i * m.n_vocab());
    g_log = nullptr;
    return out;
}
} // namespace

BOOST_AUTO_TEST_CASE(user_cache_runs_as_its_inner_cache_and_sees_what_the_mask_defines) {
    decoder_test::temp_model f(decoder_test::small_llama(5), "custom_cache");
    using Plain = Decoder<GQA<4, 2>, RoPE, SlidingWindow<W>, FullCache>;
    using Audited = Decoder<GQA<4, 2>, RoPE, SlidingWindow<W>, AuditedCache<FullCache>>;
    using RingAudited = Decoder<GQA<4, 2>, RoPE, SlidingWindow<W>, AuditedCache<RollingCache>>;
    const auto mp = load_model<Plain>(f.path);
    const auto ma = load_model<Audited>(f.path);
    const auto mr = load_model<RingAudited>(f.path);
    const auto t = decoder_test::tokens(40, 3, mp.n_vocab());

    audit_log full, ring;
    const auto ref = decode_all(mp, t, nullptr);
    const auto a = decode_all(ma, t, &full);
    const auto r = decode_all(mr, t, &ring);
    BOOST_TEST(std::memcmp(ref.data(), a.data(), ref.size() * sizeof(float)) == 0); // the same arithmetic
    // the ring orders keys differently (cells, not positions): equal to rounding
    double d = 0;
    for (std::size_t i = 0; i < ref.size(); ++i) d = std::max(d, double(std::abs(ref[i] - r[i])));
    BOOST_TEST(d <= 1e-5);

    BOOST_REQUIRE_EQUAL(full.visible.size(), t.size() * n_layer);
    BOOST_REQUIRE_EQUAL(ring.visible.size(), t.size() * n_layer);
    for (std::size_t p = 0; p < t.size(); ++p)
        for (std::size_t il = 0; il < n_layer; ++il) {
            const std::size_t k = p * n_layer + il, want = std::min(p + 1, W);
            BOOST_TEST(full.offered[k] == want);  // the full cache offers just the window
            BOOST_TEST(full.visible[k] == want);
            BOOST_TEST(ring.offered[k] == W);     // the ring: all W cells, empty ones invisible
            BOOST_TEST(ring.visible[k] == want);
        }
    // describe() names the user's policy
    BOOST_TEST(Audited::describe().find("AuditedCache<FullCache>") != std::string::npos);
}
