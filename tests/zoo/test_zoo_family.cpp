// One model family of the zoo against Hugging Face transformers: a tiny random-weight
// checkpoint (biases and norm weights perturbed away from 0 and 1, so a dropped tensor
// shows) converted with llama.cpp's convert_hf_to_gguf.py, and transformers' float32
// eager logits for a 7- and a 40-token prompt (tools/reference/make_zoo_fixture.py;
// <family>/versions.json).
// Pass: max |Δ| <= 1e-4 × max(1, max |ref|) at every position, in batch, sequential and
// chunked feeding; the registry picks the entry from the file alone; a stray tensor in
// the file is refused by name; docs/architectures.md states this family truly (its
// error bound holds, its preset's line count is the header's).
//
// Compiled once: the family's model is the archetype program's compiled registry entry
// (tools/arch/<entry>.cpp), driven through tools/entry_handle.hpp, so no preset is
// instantiated here (issue 37, CI lever L1). meson.build registers one test per family.
// Arguments after `--`: tests/data/zoo, docs/architectures.md, include/, the family
// (its folder under tests/data/zoo), the entry (tools/arch/<entry>.cpp), the preset
// header (under include/), then the family's extra references, each a word:
//   long_rope   the folder also holds logits_40_long.f32.bin (LongRoPE's long factors);
//   hf          the folder also holds the Hugging Face checkpoint (hf/), loaded directly;
//   hf_bf16     and its bfloat16 copy (hf-bf16/) with logits_<n>_bf16.f32.bin;
//   hf_one_ulp  the checkpoint's GGUF equals the file's but for A = -exp(A_log), which
//               llama.cpp's converter rounds through torch's float32 exp (within one ulp).
// The cases of an extra reference are registered only for the families that name it.
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <set>
#include <span>
#include <sstream>
#include <string>
#include <string_view>
#include <type_traits>

#include "archetype/io/gguf_writer.hpp"
#include "archetype/io/hf_checkpoint.hpp"
#include "archetype/models/architectures.hpp"
#include "architectures_page.hpp"
#include "entry_handle.hpp"
#include "fixture_common.hpp"

using namespace archetype;
using tools::model_handle;

// The name of every decoder entry (meson passes the program's list, X(name, compiled)),
// for the registry's pick; "" for the entries the program has no TU for (RWKV, encoders).
template <class E>
inline constexpr std::string_view entry_name = "";
#define X(name, on) template <> inline constexpr std::string_view entry_name<presets::name##_architecture> = #name;
ARCHETYPE_CLI_ENTRIES
#undef X

namespace {
using zoo_page::argument;

/// The family this run tests (the arguments after `--`, read once).
struct family_args {
    std::string zoo, name, entry, preset;
    std::set<std::string> extras;
};
const family_args& family() {
    static const family_args f = [] {
        const auto& mts = boost::unit_test::framework::master_test_suite();
        if (mts.argc < 7)
            throw std::runtime_error("usage: test_zoo_family -- ZOO_DIR ARCHITECTURES_MD INCLUDE_DIR FAMILY ENTRY "
                                     "PRESET_HEADER [long_rope] [hf] [hf_bf16] [hf_one_ulp]");
        family_args a{mts.argv[1], mts.argv[4], mts.argv[5], mts.argv[6], {}};
        for (int i = 7; i < mts.argc; ++i) {
            const std::string w = mts.argv[i];
            if (w != "long_rope" && w != "hf" && w != "hf_bf16" && w != "hf_one_ulp")
                throw std::runtime_error("test_zoo_family: unknown extra reference '" + w + "'");
            a.extras.insert(w);
        }
        if (a.extras.count("hf_one_ulp") && !a.extras.count("hf"))
            throw std::runtime_error("test_zoo_family: hf_one_ulp qualifies hf, which is not given");
        return a;
    }();
    return f;
}
bool has(const char* extra) { return family().extras.count(extra) != 0; }

std::string zoo_dir() { return family().zoo + "/" + family().name + "/"; }

std::unique_ptr<model_handle> load(gguf::file f) { return tools::open_entry(family().entry, std::move(f)); }
std::unique_ptr<model_handle> load(const std::string& path) { return load(gguf::file::open(path)); }

std::vector<float> run(const model_handle& m, const std::vector<std::int32_t>& tok, std::size_t step,
                       std::size_t n_ctx = 64, std::size_t n_threads = 2) {
    const auto s = m.session({.n_threads = n_threads, .max_sequences = 1, .n_ctx = n_ctx});
    const std::size_t n = tok.size(), V = m.n_vocab();
    std::vector<float> logits(n * V);
    for (std::size_t b = 0; b < n; b += step) {
        const std::size_t c = std::min(step, n - b);
        s->prefill(0, std::span<const std::int32_t>(tok.data() + b, c), logits.data() + b * V);
    }
    return logits;
}

/// Worst max |Δ| / max(1, max |ref|) over the positions of both prompts in the three
/// feedings; each position also checked against 1e-4 on the way. `suffix` picks the
/// reference ("" = logits_<n>.f32.bin, "_bf16" = logits_<n>_bf16.f32.bin).
double worst_error(const model_handle& m, const std::string& suffix = "") {
    const std::size_t V = m.n_vocab();
    double worst = 0;
    for (int n : {7, 40}) {
        const auto tok = fixture::read_raw<std::int32_t>(zoo_dir() + "tokens_" + std::to_string(n) + ".i32.bin");
        const auto want = fixture::read_raw<float>(zoo_dir() + "logits_" + std::to_string(n) + suffix + ".f32.bin");
        BOOST_REQUIRE_EQUAL(tok.size(), std::size_t(n));
        BOOST_REQUIRE_EQUAL(want.size(), std::size_t(n) * V);
        for (std::size_t step : {std::size_t(n), std::size_t(1), std::size_t(5)}) {
            const auto got = run(m, tok, step);
            double mode_worst = 0;
            for (int p = 0; p < n; ++p) {
                double err = 0, ref = 0;
                for (std::size_t v = 0; v < V; ++v) {
                    err = std::max(err, std::abs(double(got[p * V + v]) - double(want[p * V + v])));
                    ref = std::max(ref, std::abs(double(want[p * V + v])));
                }
                mode_worst = std::max(mode_worst, err / std::max(1.0, ref));
                BOOST_TEST_CONTEXT("n=" << n << " step=" << step << " position " << p) {
                    BOOST_TEST(err <= 1e-4 * std::max(1.0, ref));
                }
            }
            BOOST_TEST_MESSAGE(family().name << " n=" << n << " step=" << step
                                          << ": max |Δ| / max(1, max |ref|) = " << mode_worst);
            worst = std::max(worst, mode_worst);
        }
    }
    return worst;
}
} // namespace

BOOST_AUTO_TEST_CASE(matches_transformers_at_every_position) {
    const auto m = load(zoo_dir() + "model.gguf");
    BOOST_TEST(worst_error(*m) <= 1e-4);
}

BOOST_AUTO_TEST_CASE(the_architectures_page_states_this_family) {
    const auto row = zoo_page::table_row(argument(2, "docs/architectures.md"), family().name);
    BOOST_REQUIRE_EQUAL(row.size(), 6u);
    // the error bound: holds here, and is itself within the criterion
    const double bound = std::stod(row[5]);
    const auto m = load(zoo_dir() + "model.gguf");
    const double worst = worst_error(*m);
    BOOST_TEST(worst <= bound, family().name << ": measured " << worst << " above the page's bound " << bound);
    BOOST_TEST(bound <= 1e-4);
    // the preset's lines: non-blank, not a comment, not #pragma / #include
    const std::size_t lines = zoo_page::preset_lines(argument(3, "include/") + "/" + family().preset);
    BOOST_TEST(std::stoul(row[3]) == lines);
    BOOST_TEST(lines <= 15u);
}

// A family whose file carries LongRoPE factors (phi3) has a second reference: the
// 40-token prompt with the long factors (logits_40_long.f32.bin, float64 numpy with
// transformers' long frequencies), which a session whose context exceeds the training
// one (rope.scaling.original_context_length = 64) takes, as llama.cpp decides.
// Registered for the families meson marks with long_rope.
void a_long_context_takes_the_long_factors() {
    const std::string long_ref = zoo_dir() + "logits_40_long.f32.bin";
    const auto m = load(zoo_dir() + "model.gguf");
    BOOST_REQUIRE(m->hparams().rope.freq_factors_long != nullptr);
    const std::size_t V = m->n_vocab();
    const auto tok = fixture::read_raw<std::int32_t>(zoo_dir() + "tokens_40.i32.bin");
    const auto want = fixture::read_raw<float>(long_ref);
    const auto short_ref = fixture::read_raw<float>(zoo_dir() + "logits_40.f32.bin");
    BOOST_REQUIRE_EQUAL(want.size(), tok.size() * V);
    const std::size_t long_ctx = m->hparams().rope.n_ctx_orig + 1;
    for (std::size_t step : {tok.size(), std::size_t(1)}) {
        const auto got = run(*m, tok, step, long_ctx);
        for (std::size_t p = 0; p < tok.size(); ++p) {
            double err = 0, ref = 0;
            for (std::size_t v = 0; v < V; ++v) {
                err = std::max(err, std::abs(double(got[p * V + v]) - double(want[p * V + v])));
                ref = std::max(ref, std::abs(double(want[p * V + v])));
            }
            BOOST_TEST_CONTEXT("step=" << step << " position " << p) { BOOST_TEST(err <= 1e-4 * std::max(1.0, ref)); }
        }
        BOOST_TEST(fixture::max_abs_err(got, short_ref) > 0.1); // and the two sets differ
    }
}

// The logits do not depend on the thread count: kernels split a product by output rows,
// and the layers that hand whole products to the threads (a token's experts, MLA's heads)
// give each product to one thread. 1, 2 and 3 threads give the same bits, fed one token at
// a time and in one batch.
BOOST_AUTO_TEST_CASE(the_thread_count_does_not_change_the_logits) {
    const auto m = load(zoo_dir() + "model.gguf");
    const auto tok = fixture::read_raw<std::int32_t>(zoo_dir() + "tokens_40.i32.bin");
    for (std::size_t step : {std::size_t(1), tok.size()}) {
        const auto one = run(*m, tok, step, 64, 1);
        for (std::size_t threads : {std::size_t(2), std::size_t(3)})
            BOOST_TEST((run(*m, tok, step, 64, threads) == one), "step " << step << ", " << threads << " threads");
    }
}

BOOST_AUTO_TEST_CASE(the_registry_picks_the_entry_from_the_file) {
    const auto f = gguf::file::open(zoo_dir() + "model.gguf");
    const bool picked = with_architecture<default_architectures>(
        f, []<class E>(std::type_identity<E>) { return entry_name<E> == family().entry; });
    BOOST_TEST(picked);
}

// A tensor that no policy of the compiled structure binds is an error naming it,
// never silently dropped (a stray bias on a projection that has none).
BOOST_AUTO_TEST_CASE(a_stray_tensor_is_refused_by_name) {
    const auto f = gguf::file::open(zoo_dir() + "model.gguf");
    gguf::writer w;
    for (const auto& e : f.metadata()) w.set(e.key, e.value);
    for (const auto& t : f.tensors()) w.add_tensor(t.name, t.type, t.ne, t.data);
    const std::size_t E = f.tensor("token_embd.weight").ne[0];
    const std::vector<float> extra(E, 0.5f);
    w.add_tensor("blk.1.attn_output.bias_stray", ggml_type::F32, {E}, extra);
    const auto path =
        (std::filesystem::temp_directory_path() / ("archetype_zoo_" + std::string(family().name) + "_stray.gguf")).string();
    w.write(path);
    try {
        (void)load(path);
        BOOST_ERROR("a file with an unbound tensor loaded");
    } catch (const shape_error& e) {
        BOOST_TEST(std::string(e.what()).find("'blk.1.attn_output.bias_stray'") != std::string::npos);
    }
    std::filesystem::remove(path);
}

// The session's memory per sequence (KV cells, and a hybrid's recurrent state): a prompt
// fed to sequence 0 in two halves and forked into sequence 1 at the middle continues the
// same on both, and matches the one-pass logits; a removed sequence starts again from
// nothing (bitwise the one-pass logits of a fresh session).
BOOST_AUTO_TEST_CASE(forked_and_removed_sequences_keep_their_own_memory) {
    const auto m = load(zoo_dir() + "model.gguf");
    const auto tok = fixture::read_raw<std::int32_t>(zoo_dir() + "tokens_40.i32.bin");
    const std::size_t V = m->n_vocab(), h = 20;
    const auto ref = run(*m, tok, 40);
    const auto s = m->session({.n_threads = 2, .max_sequences = 2, .n_ctx = 64});
    std::vector<float> a(40 * V), b(h * V), c(40 * V);
    const std::span<const std::int32_t> all(tok), first = all.first(h), rest = all.subspan(h);
    s->prefill(0, first, a.data());
    s->copy_sequence(0, 1);
    s->prefill(0, rest, a.data() + h * V);
    s->prefill(1, rest, b.data());
    BOOST_TEST(std::equal(b.begin(), b.end(), a.begin() + std::ptrdiff_t(h * V))); // the fork continues as the original
    double err = 0, big = 1;
    for (std::size_t i = 0; i < a.size(); ++i) {
        err = std::max(err, double(std::abs(a[i] - ref[i])));
        big = std::max(big, double(std::abs(ref[i])));
    }
    BOOST_TEST(err <= 1e-4 * big); // two halves = one pass
    s->remove_sequence(1);
    s->prefill(1, all, c.data());
    BOOST_TEST(c == ref); // nothing of the removed sequence is left
}

// Sequence operations on every kind of memory: a snapshot taken at the middle of the
// prompt, restored into another sequence (a fork) and into the same one (going back),
// continues bitwise as the original did; truncation back to the middle does the same where
// the memory allows it (cells that are positions, no recurrent state) and is refused by an
// argument_error naming the snapshot way elsewhere; a snapshot holds only the prefix's
// cells; another model's snapshot, or one of another kv_type, is refused.
BOOST_AUTO_TEST_CASE(snapshots_restore_and_truncation_follows_the_memory_kind) {
    const auto m = load(zoo_dir() + "model.gguf");
    const auto tok = fixture::read_raw<std::int32_t>(zoo_dir() + "tokens_40.i32.bin");
    const std::size_t V = m->n_vocab(), h = 20;
    const std::span<const std::int32_t> all(tok), first = all.first(h), rest = all.subspan(h);
    const auto s = m->session({.n_threads = 2, .max_sequences = 2, .n_ctx = 64});
    std::vector<float> a(20 * V), b(20 * V), c(20 * V), d(20 * V);
    s->prefill(0, first, nullptr);
    const auto snap = s->save_sequence(0);
    BOOST_TEST(snap.n_past() == std::int64_t(h));
    s->prefill(0, rest, a.data());
    s->restore_sequence(1, snap); // a fork from the snapshot
    s->prefill(1, rest, b.data());
    BOOST_TEST(a == b);
    s->restore_sequence(0, snap); // back to the middle
    BOOST_TEST(s->n_past(0) == std::int64_t(h));
    s->prefill(0, rest, c.data());
    BOOST_TEST(a == c);
    // the memory kind decides truncation: rings (a windowed layer under a rolling cache)
    // and recurrent mixers cannot be cut back
    const auto& hp = m->hparams();
    const bool rings = m->rolling_cache() &&
                       std::find(hp.windowed.begin(), hp.windowed.end(), true) != hp.windowed.end();
    const bool cuttable = !rings && s->recurrent_state_bytes_per_sequence() == 0;
    BOOST_TEST(s->can_truncate() == cuttable);
    if (cuttable) {
        s->truncate_sequence(0, std::int64_t(h));
        BOOST_TEST(s->n_past(0) == std::int64_t(h));
        s->prefill(0, rest, d.data());
        BOOST_TEST(a == d);
        // a snapshot of 20 positions holds 20 cells a layer, not the session's 64
        std::size_t kv_layers = 0;
        for (std::size_t il = 0; il < hp.dims.n_layer; ++il) kv_layers += s->cache().cells(il) ? 1 : 0;
        // (K and V blocks, or K only where the values are a prefix of the keys: MLA)
        BOOST_TEST(snap.kv.bytes() ==
                   kv_layers * s->cache().layout().blocks() * hp.dims.n_head_kv * h * hp.dims.head_dim * sizeof(float));
    } else {
        BOOST_CHECK_EXCEPTION(s->truncate_sequence(0, std::int64_t(h)), argument_error, [](const argument_error& e) {
            return std::string(e.what()).find("save_sequence") != std::string::npos;
        });
        BOOST_TEST(s->n_past(0) == std::int64_t(40)); // unchanged
    }
    BOOST_CHECK_THROW(s->truncate_sequence(0, 41), argument_error);
    // another loaded model (even of the same file), or another kv_type, refuses the snapshot
    const auto other = load(zoo_dir() + "model.gguf");
    const auto s2 = other->session({.n_threads = 1, .max_sequences = 1, .n_ctx = 64});
    BOOST_CHECK_THROW(s2->restore_sequence(0, snap), argument_error);
    const auto s16 = m->session({.n_threads = 1, .max_sequences = 1, .n_ctx = 64, .kv_type = kv_cache_type::f16});
    BOOST_CHECK_THROW(s16->restore_sequence(0, snap), argument_error);
    BOOST_TEST(s16->n_past(0) == 0);
}

// The Hugging Face checkpoint the GGUF was converted from (hf/: config.json +
// model.safetensors), loaded directly: the registry picks the same entry, every
// position matches transformers as the GGUF does, and the logits equal the GGUF's bit
// for bit (the same weights, converted as llama.cpp's converter does).
void the_hugging_face_checkpoint_loads_directly() {
    const std::string dir = zoo_dir() + "hf";
    BOOST_REQUIRE(hf::is_checkpoint(dir));
    bool picked = false;
    with_architecture<default_architectures>(hf::open_as_gguf(dir), [&]<class E>(std::type_identity<E>) {
        picked = entry_name<E> == family().entry;
    });
    BOOST_TEST(picked, "the registry picks " << family().name << "'s entry for its checkpoint");
    const auto m = load(hf::open_as_gguf(dir));
    BOOST_TEST(worst_error(*m) <= 1e-4);
    const auto g = load(zoo_dir() + "model.gguf");
    const auto tok = fixture::read_raw<std::int32_t>(zoo_dir() + "tokens_40.i32.bin");
    if (!has("hf_one_ulp")) {
        BOOST_TEST(run(*m, tok, 40) == run(*g, tok, 40));
        return;
    }
    // hf_one_ulp: llama.cpp's converter computes A = −exp(A_log) with torch's float32 exp,
    // which is not correctly rounded; the library rounds it once from double. Every tensor is
    // the file's bit for bit but those, which are within one ulp, and the logits agree within
    // float32 rounding.
    const auto hf_file = hf::open_as_gguf(dir), gguf_file = gguf::file::open(zoo_dir() + "model.gguf");
    for (const auto& t : gguf_file.tensors()) {
        const auto* u = hf_file.find_tensor(t.name);
        BOOST_REQUIRE_MESSAGE(u && u->n_bytes == t.n_bytes && u->type == t.type, t.name << " differs in shape or type");
        if (std::memcmp(u->data, t.data, t.n_bytes) == 0) continue;
        BOOST_TEST_CONTEXT(t.name) {
            BOOST_TEST(t.name.ends_with(".ssm_a"));
            BOOST_REQUIRE(t.type == ggml_type::F32);
            const auto* a = reinterpret_cast<const float*>(t.data);
            const auto* b = reinterpret_cast<const float*>(u->data);
            for (std::size_t i = 0; i < t.n_bytes / 4; ++i)
                BOOST_TEST(std::abs(a[i] - b[i]) <= std::abs(a[i]) * 0x1p-23f);
        }
    }
    const auto a = run(*m, tok, 40), b = run(*g, tok, 40);
    double err = 0, big = 1;
    for (std::size_t i = 0; i < a.size(); ++i) {
        err = std::max(err, double(std::abs(a[i] - b[i])));
        big = std::max(big, double(std::abs(b[i])));
    }
    BOOST_TEST(err <= 1e-5 * big);
}

// The same checkpoint saved in bfloat16: the weights stay BF16 (no conversion to
// F32), and the logits match transformers' float32 run of those rounded weights.
void a_bf16_checkpoint_keeps_its_type() {
    const auto m = load(hf::open_as_gguf(zoo_dir() + "hf-bf16"));
    BOOST_TEST((m->file().tensor("blk.0.attn_q.weight").type == ggml_type::BF16));
    BOOST_TEST(worst_error(*m, "_bf16") <= 1e-4);
}

// The module: the cases above that BOOST_AUTO_TEST_CASE registers for every family, and
// those of the extra references this family names.
bool init_zoo_family() {
    auto& mts = boost::unit_test::framework::master_test_suite();
    mts.p_name.value = "zoo_family";
    if (has("long_rope")) mts.add(BOOST_TEST_CASE(&a_long_context_takes_the_long_factors));
    if (has("hf")) mts.add(BOOST_TEST_CASE(&the_hugging_face_checkpoint_loads_directly));
    if (has("hf_bf16")) mts.add(BOOST_TEST_CASE(&a_bf16_checkpoint_keeps_its_type));
    return true;
}

int main(int argc, char** argv) { return boost::unit_test::unit_test_main(&init_zoo_family, argc, argv); }
