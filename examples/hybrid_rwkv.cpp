// hybrid_rwkv: an attention / RWKV-7 hybrid composed in application code — no library
// header edited. Its layers alternate causal GQA self-attention and RWKV-7's time mix, each
// followed by a SwiGLU feed-forward, pre-normed with RMSNorm:
//
//   using HybridGoose = Decoder<GQA<4, 2>, RoPENeox, HybridMixer<SelfAttention, Rwkv7TimeMix>>;
//
// The file says which layers attend, as hybrids' files do: {arch}.attention.head_count_kv
// is a per-layer array whose 0 entries are the RWKV-7 layers. Each layer keeps its own
// memory (KV cells on the attention layers; the token-shift vector and wkv matrix on the
// RWKV-7 ones), and the first RWKV-7 layer hands its values (v_first) to the later ones
// through the layer stack's side channel.
//
// A tiny GGUF of that architecture is written here, loaded through the registry, and checked
// against a plain scalar forward pass (below) fed all at once and token by token after a
// prompt (the recurrent state carried across calls).
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "archetype/models/architectures.hpp"
#include "archetype/models/decoder_model.hpp"
#include "archetype/runtime/decoder_session.hpp"
#include "scalar_reference.hpp"
#include "tiny_decoder.hpp"

// ---- the architecture: library policies only -------------------------------------
using HybridGoose = archetype::Decoder<archetype::GQA<4, 2>, archetype::RoPENeox,
                                      archetype::HybridMixer<archetype::SelfAttention, archetype::Rwkv7TimeMix>>;
struct hybrid_goose_architecture {
    static constexpr std::string_view gguf_name = "hybrid-goose";
    using model = HybridGoose;
};
using my_architectures = archetype::extend_t<archetype::default_architectures, hybrid_goose_architecture>;

namespace {
using vec = std::vector<double>;
constexpr std::size_t N = 8, DW = 8, DA = 6, DV = 4, DG = 8; // head size, LoRA ranks

/// RWKV-7's time mix over the normed rows h of one sequence, from an empty state
/// (ChatRWKV's RWKV_x070_TMix, in double). `first`: this layer writes v_first.
std::vector<vec> rwkv7_reference(const examples::scalar_reference& ref, std::size_t il, const std::vector<vec>& h,
                                 std::vector<vec>& v_first, bool first) {
    const std::size_t C = ref.m.n_embd, H = C / N;
    auto W = [&](const char* s) -> const std::vector<float>& { return ref.W(il, s); };
    auto mv = [&](const char* s, std::size_t rows, std::size_t cols, const vec& x) {
        return examples::scalar_reference::matvec(W(s), rows, cols, x);
    };
    auto sig = [](double x) { return 1.0 / (1.0 + std::exp(-x)); };
    std::vector<double> S(H * N * N, 0.0);
    vec prev(C, 0.0);
    std::vector<vec> out;
    for (std::size_t t = 0; t < h.size(); ++t) {
        std::vector<vec> xc(6, vec(C)); // r, w, k, v, a, g
        for (std::size_t c = 0; c < 6; ++c)
            for (std::size_t i = 0; i < C; ++i) xc[c][i] = h[t][i] + (prev[i] - h[t][i]) * W("time_mix_lerp_fused.weight")[c * C + i];
        prev = h[t];
        const vec r = mv("time_mix_receptance.weight", C, C, xc[0]);
        vec k = mv("time_mix_key.weight", C, C, xc[2]), v = mv("time_mix_value.weight", C, C, xc[3]);
        auto lora = [&](const char* w1, const char* w2, std::size_t D, const vec& x, auto f) {
            vec mid = mv(w1, D, C, x);
            for (double& e : mid) e = f(e);
            return mv(w2, C, D, mid);
        };
        auto id = [](double x) { return x; };
        vec w = lora("time_mix_w1.weight", "time_mix_w2.weight", DW, xc[1], [](double x) { return std::tanh(x); });
        vec a = lora("time_mix_a1.weight", "time_mix_a2.weight", DA, xc[4], id);
        const vec g = lora("time_mix_g1.weight", "time_mix_g2.weight", DG, xc[5], sig);
        for (std::size_t i = 0; i < C; ++i) {
            w[i] = std::exp(-std::exp(-0.5) * sig(W("time_mix_w0.weight")[i] + w[i]));
            a[i] = sig(W("time_mix_a0.weight")[i] + a[i]);
        }
        if (first) {
            v_first[t] = v;
        } else {
            const vec m = lora("time_mix_v1.weight", "time_mix_v2.weight", DV, xc[3], id);
            for (std::size_t i = 0; i < C; ++i) v[i] += (v_first[t][i] - v[i]) * sig(W("time_mix_v0.weight")[i] + m[i]);
        }
        vec kk(C), o(C);
        for (std::size_t hh = 0; hh < H; ++hh) {
            double ss = 0;
            for (std::size_t j = 0; j < N; ++j) ss += std::pow(kk[hh * N + j] = k[hh * N + j] * W("time_mix_k_k.weight")[hh * N + j], 2);
            for (std::size_t j = 0; j < N; ++j) kk[hh * N + j] /= std::max(std::sqrt(ss), 1e-12);
        }
        for (std::size_t i = 0; i < C; ++i) k[i] *= 1 + (a[i] - 1) * W("time_mix_k_a.weight")[i];
        for (std::size_t hh = 0; hh < H; ++hh) {
            const std::size_t b = hh * N;
            for (std::size_t i = 0; i < N; ++i) { // S[i][j] = S w_j + (S (-kk))_i (kk a)_j + v_i k_j
                double* row = &S[(hh * N + i) * N];
                double sa = 0, y = 0;
                for (std::size_t j = 0; j < N; ++j) sa -= row[j] * kk[b + j];
                for (std::size_t j = 0; j < N; ++j) y += (row[j] = row[j] * w[b + j] + sa * kk[b + j] * a[b + j] + v[b + i] * k[b + j]) * r[b + j];
                o[b + i] = y;
            }
            double mean = 0, var = 0, bonus = 0;
            for (std::size_t j = 0; j < N; ++j) mean += o[b + j] / double(N);
            for (std::size_t j = 0; j < N; ++j) var += (o[b + j] - mean) * (o[b + j] - mean) / double(N);
            for (std::size_t j = 0; j < N; ++j) bonus += r[b + j] * k[b + j] * W("time_mix_r_k.weight")[b + j];
            for (std::size_t j = 0; j < N; ++j)
                o[b + j] = ((o[b + j] - mean) / std::sqrt(var + 64e-5) * W("time_mix_ln.weight")[b + j] +
                            W("time_mix_ln.bias")[b + j] + bonus * v[b + j]) * g[b + j];
        }
        out.push_back(mv("time_mix_output.weight", C, C, o));
    }
    return out;
}
} // namespace

int main() {
    using namespace archetype;
    examples::tiny_decoder m;
    m.arch = "hybrid-goose";
    m.n_layer = 4;
    m.randomise(2029);
    m.head_count_kv_per_layer = {2, 0, 2, 0}; // layers 1 and 3 are RWKV-7
    m.extra_u32["wkv.head_size"] = N;
    std::mt19937 rng(7);
    std::normal_distribution<float> nd(0.f, 1.f);
    const std::size_t C = m.n_embd;
    for (std::size_t il : {1, 3}) {
        const std::string b = "blk." + std::to_string(il) + ".";
        for (const char* t : {"attn_q.weight", "attn_k.weight", "attn_v.weight", "attn_output.weight"}) {
            m.w.erase(b + t);
            m.ne.erase(b + t);
        }
        auto add = [&](const std::string& name, std::vector<std::uint64_t> ne, float scale, float offset = 0.f) {
            std::size_t n = 1;
            for (auto d : ne) n *= d;
            auto& v = m.w[b + name];
            for (v.resize(n); auto& x : v) x = offset + scale * nd(rng);
            m.ne[b + name] = std::move(ne);
        };
        add("time_mix_lerp_fused.weight", {C, 1, 1, 6}, 0.2f, 0.5f);
        for (const char* t : {"time_mix_w0.weight", "time_mix_a0.weight", "time_mix_r_k.weight"}) add(t, {C}, 0.5f);
        add("time_mix_k_k.weight", {C}, 0.2f, 1.f);
        add("time_mix_k_a.weight", {C}, 0.2f, 1.f);
        for (auto [t, D] : {std::pair{"w", DW}, {"a", DA}, {"g", DG}, {"v", DV}}) {
            if (il == 1 && std::string(t) == "v") continue; // the first RWKV-7 layer has no value residual
            add(std::string("time_mix_") + t + "1.weight", {C, D}, 0.3f);
            add(std::string("time_mix_") + t + "2.weight", {D, C}, 0.3f);
        }
        if (il == 3) add("time_mix_v0.weight", {C}, 0.5f);
        for (const char* t : {"time_mix_receptance.weight", "time_mix_key.weight", "time_mix_value.weight",
                              "time_mix_output.weight"})
            add(t, {C, C}, 0.25f);
        add("time_mix_ln.weight", {C}, 0.2f, 1.f);
        add("time_mix_ln.bias", {C}, 0.1f);
    }
    const auto path = (std::filesystem::temp_directory_path() / "archetype_hybrid_goose.gguf").string();
    m.write(path);

    const std::vector<std::int32_t> tok = {3, 17, 42, 8, 8, 63, 0, 25, 11};
    const bool picked = with_architecture<my_architectures>(
        gguf::file::open(path), []<class A>(std::type_identity<A>) { return std::is_same_v<A, hybrid_goose_architecture>; });
    const auto model = load_model<hybrid_goose_architecture>(path);
    // a pipeline stage of layers 2..3 would run layer 3 without layer 1's v_first: refused
    bool stage_refused = false;
    try {
        (void)load_model<hybrid_goose_architecture>(path, {.layers = {2, 2}});
    } catch (const shape_error& e) {
        stage_refused = std::string(e.what()).find("v_first") != std::string::npos;
        std::printf("a stage of layers 2..3: %s\n", e.what());
    }
    std::filesystem::remove(path);
    std::printf("%s", model.describe().c_str());
    const std::size_t V = model.n_vocab(), split = 4;
    auto s = session(model, {.n_threads = 2, .max_sequences = 2, .n_ctx = 64});
    std::vector<float> batch(tok.size() * V), steps(tok.size() * V);
    s.prefill(0, tok, batch.data()); // sequence 0: the whole prompt in one pass
    s.prefill(1, std::span(tok).first(split), steps.data()); // sequence 1: a prompt, then one token at a time
    for (std::size_t t = split; t < tok.size(); ++t) s.decode(1, tok[t], steps.data() + t * V);

    // the scalar reference: x += mixer(n(x)); x += ffn(n(x)), the mixer per layer
    const examples::scalar_reference ref{m};
    auto x = ref.embed(tok);
    std::vector<vec> v_first(tok.size());
    for (std::size_t il = 0; il < m.n_layer; ++il) {
        std::vector<vec> h(x.size());
        for (std::size_t t = 0; t < x.size(); ++t) h[t] = ref.rms_norm(x[t], ref.W(il, "attn_norm.weight"));
        const auto a = il % 2 == 0 ? ref.attention(il, h) : rwkv7_reference(ref, il, h, v_first, il == 1);
        for (std::size_t t = 0; t < x.size(); ++t) {
            for (std::size_t i = 0; i < m.n_embd; ++i) x[t][i] += a[t][i];
            const auto f = ref.ffn(il, ref.rms_norm(x[t], ref.W(il, "ffn_norm.weight")));
            for (std::size_t i = 0; i < m.n_embd; ++i) x[t][i] += f[i];
        }
    }
    const auto want = ref.logits(x);
    const double e_batch = examples::scalar_reference::worst_error(batch, want, V);
    const double e_steps = examples::scalar_reference::worst_error(steps, want, V);
    std::printf("state per sequence: %zu bytes of RWKV-7 state beside the KV cells of 2 attention layers\n",
                s.recurrent_state_bytes_per_sequence());
    std::printf("hybrid-goose vs the scalar reference: max |diff| / max(1, max |ref|) = %.3g (one pass), %.3g "
                "(prompt, then token by token)\n", e_batch, e_steps);
    if (!picked || !stage_refused || !(e_batch <= 1e-4) || !(e_steps <= 1e-4) ||
        s.recurrent_state_bytes_per_sequence() != 2 * (C + C * N) * sizeof(float)) {
        std::printf("FAIL\n");
        return 1;
    }
    std::printf("OK\n");
    return 0;
}
