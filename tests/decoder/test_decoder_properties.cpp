// Properties of the decoder run time on seeded random-weight GGUF models made
// with archetype's GGUF writer: feeding modes agree, RollingCache == FullCache
// under the same window, batched decode == decoding alone, the rolling cache
// holds exactly W cells, MoE against a direct computation, errors leave the
// state unchanged, tied output; the same properties with a half (F16) KV cache.
#define BOOST_TEST_MODULE decoder_properties
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <span>
#include <unistd.h>

#include "archetype/io/gguf_quantize.hpp"
#include "archetype/models/decoder_model.hpp"
#include "archetype/runtime/decoder_session.hpp"
#include "decoder_test_util.hpp"
#include "random_decoder.hpp"

using namespace archetype;

using decoder_test::feed;
using decoder_test::temp_model;
using decoder_test::tokens;

namespace {
double max_abs(const std::vector<float>& a, const std::vector<float>& b) {
    BOOST_REQUIRE_EQUAL(a.size(), b.size());
    double m = 0;
    for (std::size_t i = 0; i < a.size(); ++i) m = std::max(m, double(std::abs(a[i] - b[i])));
    return m;
}
random_decoder::spec llama_spec() { return decoder_test::small_llama(11); }
} // namespace

BOOST_AUTO_TEST_CASE(feeding_modes_agree) {
    temp_model f(llama_spec(), "modes");
    const auto m = load_model<Decoder<GQA<4, 2>, RoPE>>(f.path);
    const auto t = tokens(61, 1, m.n_vocab());
    const auto batch = feed(m, t, 0), seq = feed(m, t, 1), chunk = feed(m, t, 5), chunk7 = feed(m, t, 7, 512, 1);
    BOOST_TEST(max_abs(batch, seq) <= 1e-5);
    BOOST_TEST(max_abs(batch, chunk) <= 1e-5);
    BOOST_TEST(max_abs(batch, chunk7) <= 1e-5);
}

BOOST_AUTO_TEST_CASE(rolling_cache_equals_full_cache_over_300_tokens) {
    temp_model f(llama_spec(), "rolling");
    using Full = Decoder<GQA<4, 2>, RoPE, SlidingWindow<16>, FullCache>;
    using Roll = Decoder<GQA<4, 2>, RoPE, SlidingWindow<16>, RollingCache>;
    const auto mf = load_model<Full>(f.path);
    const auto mr = load_model<Roll>(f.path);
    const auto t = tokens(300, 2, mf.n_vocab());
    const auto full = feed(mf, t, 0);
    BOOST_TEST(max_abs(full, feed(mr, t, 0)) <= 1e-5);   // chunks of W internally
    BOOST_TEST(max_abs(full, feed(mr, t, 1)) <= 1e-5);   // decode through the ring
    BOOST_TEST(max_abs(full, feed(mr, t, 37)) <= 1e-5);  // calls longer than W, split inside
    BOOST_TEST(max_abs(full, feed(mr, t, 5)) <= 1e-5);
    // the window matters: plain causal attention differs after W tokens
    const auto causal = feed(load_model<Decoder<GQA<4, 2>, RoPE>>(f.path), t, 0);
    BOOST_TEST(max_abs(full, causal) > 1e-3);
}

BOOST_AUTO_TEST_CASE(rolling_cache_holds_exactly_w_cells) {
    temp_model f(llama_spec(), "cells");
    using Roll = Decoder<GQA<4, 2, 16>, RoPE, SlidingWindow<16>, RollingCache>;
    const auto m = load_model<Roll>(f.path);
    auto s = session(m, {.n_threads = 1, .max_sequences = 3, .n_ctx = 4096});
    const std::size_t per_seq = 2 /*layers*/ * 2 /*K,V*/ * 2 /*kv heads*/ * 16 /*cells*/ * 16 /*head dim*/ * sizeof(float);
    for (std::size_t il = 0; il < 2; ++il) BOOST_TEST(s.cache().cells(il) == 16u);
    BOOST_TEST(s.cache().bytes_per_sequence() == per_seq);
    BOOST_TEST(s.cache().allocated_bytes() == 0u);
    const auto t = tokens(1000, 3, m.n_vocab());
    s.prefill(0, t, nullptr);
    BOOST_TEST(s.cache().allocated_bytes() == per_seq);      // constant in the sequence length
    for (int i = 0; i < 50; ++i) {
        const int seq = 0;
        const std::int32_t tok = 5;
        s.decode(std::span<const int>(&seq, 1), std::span<const std::int32_t>(&tok, 1), nullptr);
    }
    BOOST_TEST(s.cache().allocated_bytes() == per_seq);
    BOOST_TEST(s.n_past(0) == 1050);
    // a full cache grows with the context instead
    const auto mf = load_model<Decoder<GQA<4, 2, 16>, RoPE, SlidingWindow<16>, FullCache>>(f.path);
    auto sf = session(mf, {.n_threads = 1, .max_sequences = 1, .n_ctx = 4096});
    BOOST_TEST(sf.cache().bytes_per_sequence() == per_seq / 16 * 4096);
    // SinkCache<S> keeps S more cells
    const auto ms = load_model<Decoder<GQA<4, 2, 16>, RoPE, SlidingWindow<16>, SinkCache<4>>>(f.path);
    auto ss = session(ms, {.n_threads = 1, .max_sequences = 1, .n_ctx = 4096});
    BOOST_TEST(ss.cache().cells(0) == 20u);
}

BOOST_AUTO_TEST_CASE(sink_cache_sees_sink_and_window) {
    // SinkCache<S> with window W: position p sees 0..S-1 and p-W+1..p. Equal to a
    // full-cache model in which every key is visible while p < W + S ... and
    // different from the plain window once p >= W + S.
    temp_model f(llama_spec(), "sink");
    const auto ms = load_model<Decoder<GQA<4, 2>, RoPE, SlidingWindow<16>, SinkCache<4>>>(f.path);
    const auto mw = load_model<Decoder<GQA<4, 2>, RoPE, SlidingWindow<16>, RollingCache>>(f.path);
    const auto mc = load_model<Decoder<GQA<4, 2>, RoPE>>(f.path);
    const auto t = tokens(60, 4, ms.n_vocab());
    const auto sink_b = feed(ms, t, 0), sink_s = feed(ms, t, 1), win = feed(mw, t, 0), causal = feed(mc, t, 0);
    BOOST_TEST(max_abs(sink_b, sink_s) <= 1e-5);
    const std::size_t V = ms.n_vocab();
    auto rows = [&](const std::vector<float>& v, std::size_t r0, std::size_t r1) {
        return std::vector<float>(v.begin() + std::ptrdiff_t(r0 * V), v.begin() + std::ptrdiff_t(r1 * V));
    };
    // p < W: everything visible in all three
    BOOST_TEST(max_abs(rows(sink_b, 0, 16), rows(causal, 0, 16)) <= 1e-5);
    // W <= p < W + S: the sink covers exactly the keys the window dropped
    BOOST_TEST(max_abs(rows(sink_b, 16, 20), rows(causal, 16, 20)) <= 1e-5);
    // later: neither plain window nor causal
    BOOST_TEST(max_abs(rows(sink_b, 21, 60), rows(win, 21, 60)) > 1e-4);
    BOOST_TEST(max_abs(rows(sink_b, 21, 60), rows(causal, 21, 60)) > 1e-4);
}

BOOST_AUTO_TEST_CASE(batched_decode_equals_alone) {
    temp_model f(llama_spec(), "batch");
    using D = Decoder<GQA<4, 2>, RoPE, SlidingWindow<16>, RollingCache>;
    const auto m = load_model<D>(f.path);
    const std::size_t V = m.n_vocab();
    const auto p0 = tokens(23, 5, V), p1 = tokens(40, 6, V), p2 = tokens(3, 7, V);
    const auto n0 = tokens(20, 8, V), n1 = tokens(20, 9, V), n2 = tokens(20, 10, V);
    auto together = session(m, {.n_threads = 2, .max_sequences = 3, .n_ctx = 512});
    together.prefill(0, p0, nullptr);
    together.prefill(2, p1, nullptr);
    together.prefill(1, p2, nullptr);
    std::vector<float> got(3 * V), want(V);
    for (std::size_t step = 0; step < 20; ++step) {
        const int seqs[] = {2, 0, 1};
        const std::int32_t toks[] = {n1[step], n0[step], n2[step]};
        together.decode(seqs, toks, got.data());
        // reference: each sequence alone
        const std::vector<std::int32_t>* pre[] = {&p1, &p0, &p2};
        const std::vector<std::int32_t>* nxt[] = {&n1, &n0, &n2};
        if (step % 6 == 5 || step == 0)
            for (int k = 0; k < 3; ++k) {
                auto alone = session(m, {.n_threads = 1, .max_sequences = 1, .n_ctx = 512});
                alone.prefill(0, *pre[k], nullptr);
                for (std::size_t j = 0; j <= step; ++j) {
                    const int s0 = 0;
                    const std::int32_t tk = (*nxt[k])[j];
                    alone.decode(std::span<const int>(&s0, 1), std::span<const std::int32_t>(&tk, 1), want.data());
                }
                std::vector<float> g(got.begin() + std::ptrdiff_t(k * V), got.begin() + std::ptrdiff_t((k + 1) * V));
                BOOST_TEST(max_abs(g, want) <= 1e-5);
            }
    }
}

// n_ctx = 0 means min(default_n_ctx, the file's context_length): a file that trains on
// 131072 positions gets 4096 (its KV cache would otherwise be sized for all of them),
// one that trains on 1024 gets 1024; more than 4096 is there when asked for.
BOOST_AUTO_TEST_CASE(context_defaults_to_at_most_4096) {
    using D = Decoder<GQA<4, 2>, RoPE, Causal, FullCache>;
    auto spec = llama_spec();
    spec.n_ctx = 131072;
    temp_model big(spec, "ctx_big");
    const auto m = load_model<D>(big.path);
    BOOST_TEST(session(m, {.n_threads = 1}).options().n_ctx == 4096u);
    BOOST_TEST(session(m, {.n_threads = 1, .n_ctx = 8192}).options().n_ctx == 8192u);
    spec.n_ctx = 1024;
    temp_model small(spec, "ctx_small");
    BOOST_TEST(session(load_model<D>(small.path), {.n_threads = 1}).options().n_ctx == 1024u);
}

BOOST_AUTO_TEST_CASE(copy_and_remove_sequence) {
    temp_model f(llama_spec(), "copy");
    const auto m = load_model<Decoder<GQA<4, 2>, RoPE, SlidingWindow<16>, RollingCache>>(f.path);
    const std::size_t V = m.n_vocab();
    const auto p = tokens(30, 11, V);
    auto s = session(m, {.n_threads = 2, .max_sequences = 2, .n_ctx = 512});
    s.prefill(0, p, nullptr);
    s.copy_sequence(0, 1);
    BOOST_TEST(s.n_past(1) == 30);
    std::vector<float> both(2 * V);
    const int seqs[] = {0, 1};
    const std::int32_t toks[] = {4, 4};
    s.decode(seqs, toks, both.data());
    BOOST_TEST(max_abs(std::vector<float>(both.begin(), both.begin() + std::ptrdiff_t(V)),
                       std::vector<float>(both.begin() + std::ptrdiff_t(V), both.end())) == 0.0);
    s.remove_sequence(1);
    BOOST_TEST(s.n_past(1) == 0);
    // a removed sequence starts afresh
    std::vector<float> a(p.size() * V), b(p.size() * V);
    s.prefill(1, p, a.data());
    auto fresh = session(m, {.n_threads = 1, .max_sequences = 1, .n_ctx = 512});
    fresh.prefill(0, p, b.data());
    BOOST_TEST(max_abs(a, b) <= 1e-6);
}

namespace {
double silu(double x) { return x / (1 + std::exp(-x)); }
}

BOOST_AUTO_TEST_CASE(moe_top2_of_4_against_direct_computation) {
    const std::size_t E = 64, F = 48, X = 4, n = 9;
    std::vector<float> router(X * E), x(n * E), y(n * E);
    std::vector<std::vector<float>> gate(X, std::vector<float>(F * E)), up = gate, down(X, std::vector<float>(E * F));
    std::uint64_t id = 0;
    auto fill = [&](std::vector<float>& v, float sc) {
        ++id;
        for (std::size_t i = 0; i < v.size(); ++i) v[i] = sc * random_decoder::uniform(99, id, i);
    };
    fill(router, 1.f);
    fill(x, 1.f);
    for (std::size_t e = 0; e < X; ++e) {
        fill(gate[e], 0.2f);
        fill(up[e], 0.2f);
        fill(down[e], 0.2f);
    }
    auto view = [](const std::vector<float>& v, std::size_t rows, std::size_t cols) {
        kernels::weight_view w;
        w.type = ggml_type::F32;
        w.data = v.data();
        w.rows = rows;
        w.cols = cols;
        return w;
    };
    layers::moe_weights w;
    w.router = view(router, X, E);
    w.n_used = 2;
    for (std::size_t e = 0; e < X; ++e) {
        layers::ffn_weights f;
        f.gate = view(gate[e], F, E);
        f.up = view(up[e], F, E);
        f.down = view(down[e], E, F);
        w.experts.push_back(f);
    }
    layers::ffn_workspace ws;
    thread_pool pool(2);
    layers::feed_forward<MoE<4, 2, SwiGLU>>(w, x.data(), E, n, y.data(), E, ws, &pool);
    for (std::size_t t = 0; t < n; ++t) {
        const float* xt = x.data() + t * E;
        double logit[X];
        for (std::size_t e = 0; e < X; ++e) {
            logit[e] = 0;
            for (std::size_t i = 0; i < E; ++i) logit[e] += double(router[e * E + i]) * xt[i];
        }
        std::size_t a = 0;
        for (std::size_t e = 1; e < X; ++e) if (logit[e] > logit[a]) a = e;
        std::size_t b = a == 0 ? 1 : 0;
        for (std::size_t e = 0; e < X; ++e) if (e != a && logit[e] > logit[b]) b = e;
        // renormalised softmax over the two selected = softmax of their two logits
        const double wa = 1 / (1 + std::exp(logit[b] - logit[a])), wb = 1 - wa;
        std::vector<double> out(E, 0.0);
        for (auto [e, we] : {std::pair{a, wa}, std::pair{b, wb}}) {
            std::vector<double> h(F);
            for (std::size_t j = 0; j < F; ++j) {
                double g = 0, u = 0;
                for (std::size_t i = 0; i < E; ++i) {
                    g += double(gate[e][j * E + i]) * xt[i];
                    u += double(up[e][j * E + i]) * xt[i];
                }
                h[j] = silu(g) * u;
            }
            for (std::size_t i = 0; i < E; ++i) {
                double d = 0;
                for (std::size_t j = 0; j < F; ++j) d += double(down[e][i * F + j]) * h[j];
                out[i] += we * d;
            }
        }
        for (std::size_t i = 0; i < E; ++i) BOOST_TEST(std::abs(y[t * E + i] - out[i]) <= 1e-5);
    }
}

BOOST_AUTO_TEST_CASE(moe_model_from_file) {
    auto s = llama_spec();
    s.arch = "mellum";
    s.n_expert = 4;
    s.n_expert_used = 2;
    s.window = 8;
    s.swa_pattern = {true, false};
    s.qk_norm = true;
    temp_model f(s, "moe");
    using D = Decoder<GQA<4, 2>, RoPE, Interleave<2, SlidingWindow<8>, Causal>, RollingCache, MoE<4, 2, SwiGLU>>;
    const auto m = load_model<D>(f.path);
    BOOST_TEST(m.hparams().windowed[0]);
    BOOST_TEST(!m.hparams().windowed[1]);
    const auto t = tokens(45, 12, m.n_vocab());
    const auto b = feed(m, t, 0);
    BOOST_TEST(max_abs(b, feed(m, t, 1)) <= 1e-5);
    BOOST_TEST(max_abs(b, feed(m, t, 5)) <= 1e-5);
    // the same pattern from the file, with full caches
    using P = Decoder<GQA<4, 2>, RoPE, Interleave<dynamic, SlidingWindow<>, Causal>, FullCache, MoE<dynamic, dynamic, SwiGLU>>;
    BOOST_TEST(max_abs(b, feed(load_model<P>(f.path), t, 0)) <= 1e-5);
    auto sess = session(m, {.n_threads = 1, .max_sequences = 1, .n_ctx = 4096});
    BOOST_TEST(sess.cache().cells(0) == 8u);     // windowed layer: ring
    BOOST_TEST(sess.cache().cells(1) == 4096u);  // global layer: full
    // a pattern that disagrees with the file
    using Wrong = Decoder<GQA<4, 2>, RoPE, SlidingWindow<8>, RollingCache, MoE<4, 2, SwiGLU>>;
    BOOST_CHECK_EXCEPTION(load_model<Wrong>(f.path), shape_error, [](const shape_error& e) {
        return std::string(e.what()).find("layer 1 global") != std::string::npos;
    });
    using WrongK = Decoder<Interleave<2, SlidingWindow<8>, Causal>, MoE<4, 1, SwiGLU>>;
    BOOST_CHECK_THROW(load_model<WrongK>(f.path), shape_error);
}

BOOST_AUTO_TEST_CASE(errors_leave_state_unchanged) {
    temp_model f(llama_spec(), "errors");
    const auto m = load_model<Decoder<GQA<4, 2>, RoPE>>(f.path);
    const std::size_t V = m.n_vocab();
    const auto p = tokens(20, 13, V);
    auto s = session(m, {.n_threads = 1, .max_sequences = 2, .n_ctx = 32});
    s.prefill(0, p, nullptr);
    std::vector<std::int32_t> bad = {1, 2, std::int32_t(V)};
    BOOST_CHECK_EXCEPTION(s.prefill(0, bad, nullptr), argument_error, [&](const argument_error& e) {
        return std::string(e.what()).find(std::to_string(V)) != std::string::npos;
    });
    bad = {1, -3};
    BOOST_CHECK_THROW(s.prefill(0, bad, nullptr), argument_error);
    BOOST_CHECK_THROW(s.prefill(2, p, nullptr), argument_error);   // unknown sequence
    BOOST_CHECK_THROW(s.prefill(-1, p, nullptr), argument_error);
    BOOST_CHECK_THROW(s.prefill(0, tokens(13, 1, V), nullptr), capacity_error); // 20 + 13 > 32
    const int two[] = {0, 0};
    const std::int32_t tt[] = {1, 1};
    BOOST_CHECK_THROW(s.decode(two, tt, nullptr), argument_error); // same sequence twice
    BOOST_CHECK_THROW(s.decode(std::span<const int>(two, 1), tt, nullptr), argument_error); // counts differ
    BOOST_CHECK_THROW(s.copy_sequence(0, 5), argument_error);
    BOOST_TEST(s.n_past(0) == 20);
    // the state is as if the errors never happened
    const auto q = tokens(12, 14, V);
    std::vector<float> a(q.size() * V), b(q.size() * V);
    s.prefill(0, q, a.data());
    auto ref = session(m, {.n_threads = 1, .max_sequences = 1, .n_ctx = 32});
    ref.prefill(0, p, nullptr);
    ref.prefill(0, q, b.data());
    BOOST_TEST(max_abs(a, b) == 0.0);
    BOOST_CHECK_THROW(s.prefill(0, tokens(1, 1, V), nullptr), capacity_error); // position 32 is past n_ctx
}

BOOST_AUTO_TEST_CASE(file_disagreeing_with_static_dims) {
    temp_model f(llama_spec(), "dims");
    auto msg = [&](auto load) {
        try {
            load();
        } catch (const shape_error& e) {
            return std::string(e.what());
        }
        return std::string("no error");
    };
    BOOST_TEST(msg([&] { load_model<Decoder<GQA<4, 4>>>(f.path); }) ==
               "GQA<4, 4> but the file has llama.attention.head_count_kv = 2");
    BOOST_TEST(msg([&] { load_model<Decoder<GQA<8, 2>>>(f.path); }) ==
               "GQA<8, 2> but the file has llama.attention.head_count = 4");
    BOOST_TEST(msg([&] { load_model<Decoder<MQA<4>>>(f.path); }) ==
               "MQA<4> but the file has llama.attention.head_count_kv = 2");
    BOOST_TEST(msg([&] { load_model<Decoder<GQA<4, 2, 32>>>(f.path); }).find("head dimension = 16") != std::string::npos);
    BOOST_TEST(msg([&] { load_model<Decoder<SwiGLUWith<64>>>(f.path); }).find("feed_forward_length = 80") != std::string::npos);
    BOOST_TEST(msg([&] { load_model<Decoder<RoPE::with<500000>>>(f.path); }).find("freq_base") != std::string::npos);
    BOOST_TEST(msg([&] { load_model<Decoder<SlidingWindow<>, RollingCache>>(f.path); }).find("sliding_window") != std::string::npos);
    BOOST_TEST(msg([&] { load_model<Decoder<MoE<2, 1, SwiGLU>>>(f.path); }).find("dense") != std::string::npos);
    BOOST_TEST(msg([&] { load_model<Decoder<Q8_0>>(f.path); }).find("Q8_0") != std::string::npos);
    auto s = llama_spec();
    s.arch = "mellum";
    s.window = 8;
    temp_model g(s, "dims_mellum");
    BOOST_TEST(msg([&] { load_model<Decoder<SlidingWindow<16>, MoE<1, 1, SwiGLU>>>(g.path); }) ==
               "SlidingWindow<16> but the file has mellum.attention.sliding_window = 8");
    BOOST_TEST(msg([&] { load_model<Decoder<Causal, SwiGLU>>(g.path); }).find("sliding_window = 8") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(tied_output_uses_the_token_embedding) {
    auto sp = llama_spec();
    sp.tied = true;
    temp_model f(sp, "tied");
    const auto m = load_model<Decoder<GQA<4, 2>>>(f.path);
    BOOST_TEST(m.hparams().dims.tied_output);
    const auto t = tokens(5, 15, m.n_vocab());
    auto s = session(m, {.n_threads = 1, .max_sequences = 1, .n_ctx = 64});
    const std::size_t V = m.n_vocab(), E = m.n_embd();
    std::vector<float> logits(V), hidden(E);
    s.prefill(0, t, logits.data(), logits_rows::last, hidden.data());
    const auto& te = m.token_embd();
    for (std::size_t v = 0; v < V; ++v) {
        const float* row = reinterpret_cast<const float*>(te.row(v));
        double d = 0;
        for (std::size_t i = 0; i < E; ++i) d += double(row[i]) * hidden[i];
        BOOST_TEST(std::abs(logits[v] - d) <= 1e-5);
    }
}

// A Q4_0 or Q8_0 model loads its projections into the x16 layouts
// (decoder_options::repack): the same logits bit for bit as the file's row layout
// in every feeding mode and thread count, every projection matrix owned once
// (exactly its bytes). An untied embedding stays a view of the file; a tied one
// (also the output head) is repacked, and its rows are read back from the x16
// copy for the embedding lookups.
BOOST_AUTO_TEST_CASE(repacked_model_gives_the_same_logits) {
    for (bool tied : {false, true}) {
    auto sp = llama_spec();
    sp.n_ff = 96; // a multiple of 32, so ffn_down is quantised too
    sp.tied = tied;
    temp_model f(sp, tied ? "x16_tied" : "x16_src");
    for (ggml_type type : {ggml_type::Q4_0, ggml_type::Q8_0}) {
    const std::string tn = std::string(type_name(type)) + (tied ? " tied" : "");
    const std::string q = f.path + "." + std::string(type_name(type)) + ".gguf";
    gguf::quantize_file(f.path, q, type);
    struct remove_at_exit { std::string p; ~remove_at_exit() { std::remove(p.c_str()); } } cleanup{q};
    using M = Decoder<GQA<4, 2>, RoPE>;
    const auto x = load_model<M>(q, {.repack = true});
    const auto r = load_model<M>(q, {.repack = false});
    BOOST_TEST(r.owned_bytes() == 0u);
    const auto& L0 = x.layer_at(0);
    const auto layout = kernels::x16_layout_for(type);
    BOOST_TEST((r.token_embd().layout == quant::weight_layout::rows));
    BOOST_TEST((r.layer_at(0).attn.wq.layout == quant::weight_layout::rows));
    if constexpr (kernels::has_x16) {
        BOOST_TEST((x.token_embd().layout == (tied ? layout : quant::weight_layout::rows)), tn);
        BOOST_TEST((L0.attn.wq.type == type));
        BOOST_TEST((L0.attn.wq.layout == layout), tn);
        BOOST_TEST((L0.ffn.down.layout == layout), tn);
        BOOST_TEST((x.output().layout == layout), tn);
        // q, k, v, o, gate, up, down per layer and the output head (tied: the embedding,
        // once), at the type's bytes per 32 weights
        const auto& d = x.hparams().dims;
        const std::size_t kv = d.head_dim * d.n_head_kv;
        const std::size_t per_layer = 2 * d.n_embd * d.n_embd + 2 * kv * d.n_embd + 3 * d.n_ff * d.n_embd;
        BOOST_TEST(x.owned_bytes() == (d.n_layer * per_layer + d.n_vocab * d.n_embd) / 32 * traits_of(type).type_size, tn);
    } else {
        BOOST_TEST(x.owned_bytes() == 0u); // no kernels in this build: nothing repacked
    }
    const auto t = tokens(45, 3, x.n_vocab());
    for (std::size_t threads : {1, 2})
        for (std::size_t step : {0, 1, 5}) {
            const auto a = feed(x, t, step, 512, threads), b = feed(r, t, step, 512, threads);
            BOOST_TEST((a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0),
                       tn << " threads " << threads << " step " << step);
        }
    }
    }
}

// ---- F16 (half) KV cache: the same properties, and half the bytes ----
// Tolerance: feeding modes and cache kinds differ in the last bits of K and V
// (GEMM block shapes, ring order of the attention sums; 1e-7 relative, see the
// float tests above). Rounding to half turns such a difference, where it falls
// on a rounding boundary, into one half-ulp step of that element (2^-11
// relative), measured as up to ~5e-5 on these logits; 5e-4 leaves 10x margin
// while a wrong cell, position or rounding would move them by 1e-2 or more.
constexpr double half_tol = 5e-4;

BOOST_AUTO_TEST_CASE(half_cache_feeding_modes_and_rolling_agree) {
    temp_model f(llama_spec(), "half");
    const auto h = kv_cache_type::f16;
    const auto m = load_model<Decoder<GQA<4, 2>, RoPE>>(f.path);
    const auto t = tokens(61, 1, m.n_vocab());
    const auto batch = feed(m, t, 0, 512, 2, h);
    BOOST_TEST(max_abs(batch, feed(m, t, 1, 512, 2, h)) <= half_tol);
    BOOST_TEST(max_abs(batch, feed(m, t, 5, 512, 2, h)) <= half_tol);
    BOOST_TEST(max_abs(batch, feed(m, t, 7, 512, 1, h)) <= half_tol);
    // half rounding of K and V (relative 2^-11) moves the logits a little, not more
    const auto f32 = feed(m, t, 0);
    const double d = max_abs(batch, f32);
    BOOST_TEST(d > 0.0);
    BOOST_TEST(d < 2e-2);

    using Full = Decoder<GQA<4, 2>, RoPE, SlidingWindow<16>, FullCache>;
    using Roll = Decoder<GQA<4, 2>, RoPE, SlidingWindow<16>, RollingCache>;
    const auto mf = load_model<Full>(f.path);
    const auto mr = load_model<Roll>(f.path);
    const auto t3 = tokens(300, 2, mf.n_vocab());
    const auto full = feed(mf, t3, 0, 512, 2, h);
    BOOST_TEST(max_abs(full, feed(mr, t3, 0, 512, 2, h)) <= half_tol);
    BOOST_TEST(max_abs(full, feed(mr, t3, 1, 512, 2, h)) <= half_tol);
    BOOST_TEST(max_abs(full, feed(mr, t3, 37, 512, 2, h)) <= half_tol);
}

BOOST_AUTO_TEST_CASE(half_cache_takes_half_the_bytes) {
    temp_model f(llama_spec(), "halfcells");
    using Roll = Decoder<GQA<4, 2, 16>, RoPE, SlidingWindow<16>, RollingCache>;
    const auto m = load_model<Roll>(f.path);
    auto s = session(m, {.n_threads = 1, .max_sequences = 2, .n_ctx = 4096, .kv_type = kv_cache_type::f16});
    const std::size_t per_seq = 2 /*layers*/ * 2 /*K,V*/ * 2 /*kv heads*/ * 16 /*cells*/ * 16 /*head dim*/ * 2 /*bytes*/;
    BOOST_TEST(s.cache().bytes_per_sequence() == per_seq);
    s.prefill(0, tokens(500, 3, m.n_vocab()), nullptr);
    BOOST_TEST(s.cache().allocated_bytes() == per_seq);
    // two sequences decoded in one batch == each alone, with a half cache
    s.prefill(1, tokens(20, 4, m.n_vocab()), nullptr);
    auto a = session(m, {.n_threads = 1, .max_sequences = 2, .n_ctx = 4096, .kv_type = kv_cache_type::f16});
    a.prefill(0, tokens(500, 3, m.n_vocab()), nullptr);
    a.prefill(1, tokens(20, 4, m.n_vocab()), nullptr);
    const std::size_t V = m.n_vocab();
    std::vector<float> both(2 * V), one(V);
    const int seqs[2] = {0, 1};
    const std::int32_t toks[2] = {7, 9};
    s.decode(seqs, toks, both.data());
    for (int q = 0; q < 2; ++q) {
        a.decode(std::span<const int>(&seqs[q], 1), std::span<const std::int32_t>(&toks[q], 1), one.data());
        BOOST_TEST(max_abs(std::vector<float>(both.begin() + q * std::ptrdiff_t(V), both.begin() + (q + 1) * std::ptrdiff_t(V)), one) <= half_tol);
    }
}
