// ParallelMixers<SelfAttention, ShortConv> (policies/mixers/parallel.hpp) against a plain
// double-precision forward pass: every layer runs GQA attention and LFM2's gated short
// convolution side by side on the same normed input, x += attn(n(x)) + conv(n(x)), then a
// SwiGLU feed-forward. Fed in one pass, token by token after a prompt, and forked: the
// layer's memory is the KV cells and the conv state together.
#define BOOST_TEST_MODULE parallel_mixers
#include <boost/test/unit_test.hpp>

#include <filesystem>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "archetype/models/decoder_model.hpp"
#include "archetype/policies/mixers/parallel.hpp"
#include "archetype/runtime/decoder_session.hpp"
#include "scalar_reference.hpp"
#include "tiny_decoder.hpp"

using namespace archetype;
using Side = Decoder<GQA<4, 2>, RoPENeox, ParallelMixers<SelfAttention, ShortConv>>;

namespace {
using vec = std::vector<double>;
constexpr std::size_t L = 3; // the convolution's kernel

/// LFM2's ShortConv over the normed rows h of one sequence from a zero state:
/// [B | C | X] = in_proj h; y = C ⊙ conv_L(B ⊙ X); out = out_proj y.
std::vector<vec> short_conv(const examples::scalar_reference& ref, std::size_t il, const std::vector<vec>& h) {
    const std::size_t E = ref.m.n_embd;
    std::vector<vec> bx(h.size()), c(h.size()), out;
    for (std::size_t t = 0; t < h.size(); ++t) {
        const vec p = examples::scalar_reference::matvec(ref.W(il, "shortconv.in_proj.weight"), 3 * E, E, h[t]);
        bx[t].resize(E);
        c[t].assign(p.begin() + std::ptrdiff_t(E), p.begin() + std::ptrdiff_t(2 * E));
        for (std::size_t e = 0; e < E; ++e) bx[t][e] = p[e] * p[2 * E + e];
    }
    const auto& w = ref.W(il, "shortconv.conv.weight"); // [E][L]
    for (std::size_t t = 0; t < h.size(); ++t) {
        vec y(E, 0.0);
        for (std::size_t e = 0; e < E; ++e) {
            double acc = 0;
            for (std::size_t i = 0; i < L; ++i) // tap i reads the row L-1-i before t
                if (t + i >= L - 1) acc += bx[t + i - (L - 1)][e] * w[e * L + i];
            y[e] = c[t][e] * acc;
        }
        out.push_back(examples::scalar_reference::matvec(ref.W(il, "shortconv.out_proj.weight"), E, E, y));
    }
    return out;
}
} // namespace

BOOST_AUTO_TEST_CASE(attention_and_a_short_convolution_side_by_side_match_the_scalar_reference) {
    examples::tiny_decoder m;
    m.arch = "parallel-conv";
    m.randomise(2030);
    m.extra_u32["shortconv.l_cache"] = L;
    std::mt19937 rng(11);
    std::normal_distribution<float> nd(0.f, 1.f);
    const std::size_t E = m.n_embd;
    for (std::size_t il = 0; il < m.n_layer; ++il) {
        const std::string b = "blk." + std::to_string(il) + ".";
        auto add = [&](const std::string& name, std::vector<std::uint64_t> ne, float scale) {
            std::size_t n = 1;
            for (auto d : ne) n *= d;
            auto& v = m.w[b + name];
            for (v.resize(n); auto& x : v) x = scale * nd(rng);
            m.ne[b + name] = std::move(ne);
        };
        add("shortconv.in_proj.weight", {E, 3 * E}, 0.25f);
        add("shortconv.out_proj.weight", {E, E}, 0.25f);
        add("shortconv.conv.weight", {L, E}, 0.5f);
    }
    const auto path = (std::filesystem::temp_directory_path() / "archetype_parallel_mixers.gguf").string();
    m.write(path);
    const auto model = load_model<Side>(path);
    std::filesystem::remove(path);

    const std::vector<std::int32_t> tok = {3, 17, 42, 8, 8, 63, 0, 25, 11};
    const std::size_t V = model.n_vocab(), split = 4;
    auto s = session(model, {.n_threads = 2, .max_sequences = 3, .n_ctx = 64});
    BOOST_TEST(s.recurrent_state_bytes_per_sequence() == m.n_layer * (L - 1) * E * sizeof(float));
    std::vector<float> batch(tok.size() * V), steps(tok.size() * V), forked((tok.size() - split) * V);
    s.prefill(0, tok, batch.data());
    s.prefill(1, std::span(tok).first(split), steps.data());
    s.copy_sequence(1, 2); // the fork carries the KV cells and the conv state
    for (std::size_t t = split; t < tok.size(); ++t) s.decode(1, tok[t], steps.data() + t * V);
    s.prefill(2, std::span(tok).subspan(split), forked.data());

    const examples::scalar_reference ref{m};
    auto x = ref.embed(tok);
    for (std::size_t il = 0; il < m.n_layer; ++il) {
        std::vector<vec> h(x.size());
        for (std::size_t t = 0; t < x.size(); ++t) h[t] = ref.rms_norm(x[t], ref.W(il, "attn_norm.weight"));
        const auto a = ref.attention(il, h), c = short_conv(ref, il, h);
        for (std::size_t t = 0; t < x.size(); ++t) {
            for (std::size_t i = 0; i < E; ++i) x[t][i] += a[t][i] + c[t][i];
            const auto f = ref.ffn(il, ref.rms_norm(x[t], ref.W(il, "ffn_norm.weight")));
            for (std::size_t i = 0; i < E; ++i) x[t][i] += f[i];
        }
    }
    const auto want = ref.logits(x);
    BOOST_TEST(examples::scalar_reference::worst_error(batch, want, V) <= 1e-4);
    BOOST_TEST(examples::scalar_reference::worst_error(steps, want, V) <= 1e-4);
    const std::vector<double> want_tail(want.begin() + std::ptrdiff_t(split * V), want.end());
    BOOST_TEST(examples::scalar_reference::worst_error(forked, want_tail, V) <= 1e-4);
    // without the convolution the model is another one: the reference is not blind to it
    std::vector<vec> y = ref.embed(tok);
    for (std::size_t il = 0; il < m.n_layer; ++il) {
        std::vector<vec> h(y.size());
        for (std::size_t t = 0; t < y.size(); ++t) h[t] = ref.rms_norm(y[t], ref.W(il, "attn_norm.weight"));
        const auto a = ref.attention(il, h);
        for (std::size_t t = 0; t < y.size(); ++t) {
            for (std::size_t i = 0; i < E; ++i) y[t][i] += a[t][i];
            const auto f = ref.ffn(il, ref.rms_norm(y[t], ref.W(il, "ffn_norm.weight")));
            for (std::size_t i = 0; i < E; ++i) y[t][i] += f[i];
        }
    }
    BOOST_TEST(examples::scalar_reference::worst_error(batch, ref.logits(y), V) > 1e-2);
}
