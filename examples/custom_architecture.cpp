// custom_architecture: an architecture the library has never heard of, built in
// application code — no library header edited.
//
//  1. A new policy: SquaredReLUGLU, a gated feed-forward block whose activation is
//     relu(x)^2 (Primer, So et al. 2021). The policy is a tag on the ffn axis plus
//     its behaviour, archetype::ffn_impl<SquaredReLUGLU>::apply.
//  2. A new architecture composed of it and library policies, registered under its
//     own GGUF name "relu2llama" by extending the library's architecture list.
//  3. A GGUF of that architecture written here with random weights (or the file
//     given on the command line), loaded through the registry, and checked against
//     a plain scalar forward pass written below in double precision.
//
//   ./build/examples/custom_architecture [model.gguf]
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "archetype/models/architectures.hpp"
#include "archetype/models/decoder_model.hpp"
#include "archetype/runtime/decoder_session.hpp"
#include "tiny_decoder.hpp"

// ---- 1. the policy: a tag and its behaviour ----------------------------------
struct SquaredReLUGLU {
    using axis = archetype::axis::ffn;
    static constexpr std::string_view name = "SquaredReLUGLU";
    static constexpr archetype::dim_t hidden = archetype::dynamic; // from the file
    static constexpr bool gated = true;                           // binds ffn_gate.weight too
    static std::string describe() { return "SquaredReLUGLU"; }
};
template <>
struct archetype::ffn_impl<SquaredReLUGLU> {
    /// gate[i] = relu(gate[i])^2 * up[i]
    static void apply(float* gate, const float* up, std::size_t n) noexcept {
        for (std::size_t i = 0; i < n; ++i) {
            const float r = gate[i] > 0.f ? gate[i] : 0.f;
            gate[i] = r * r * up[i];
        }
    }
};

// ---- 2. the architecture and its registry entry --------------------------------
using Relu2Llama = archetype::Decoder<archetype::GQA<4, 2>, archetype::RoPENeox, SquaredReLUGLU>;

struct relu2llama_architecture {
    static constexpr std::string_view gguf_name = "relu2llama";
    using model = Relu2Llama;
    static constexpr archetype::arch::gguf_conventions conventions{.rope_neox = true};
};
using my_architectures = archetype::extend_t<archetype::default_architectures, relu2llama_architecture>;

// ---- 3. a plain scalar forward pass of the same model --------------------------
namespace {
using vec = std::vector<double>;

vec matvec(const std::vector<float>& W, std::size_t rows, std::size_t cols, const vec& x) {
    vec y(rows, 0.0);
    for (std::size_t r = 0; r < rows; ++r)
        for (std::size_t c = 0; c < cols; ++c) y[r] += double(W[r * cols + c]) * x[c];
    return y;
}
vec rms_norm(const vec& x, const std::vector<float>& w, double eps) {
    double ss = 0;
    for (double v : x) ss += v * v;
    const double s = 1.0 / std::sqrt(ss / double(x.size()) + eps);
    vec y(x.size());
    for (std::size_t i = 0; i < x.size(); ++i) y[i] = x[i] * s * w[i];
    return y;
}
// NeoX pairs: (i, i + hd/2) rotated by p * base^(-2i/hd)
void rope_neox(double* h, std::size_t hd, std::int64_t p, double base) {
    for (std::size_t i = 0; i < hd / 2; ++i) {
        const double th = double(p) * std::pow(base, -2.0 * double(i) / double(hd));
        const double a = h[i], b = h[i + hd / 2];
        h[i] = a * std::cos(th) - b * std::sin(th);
        h[i + hd / 2] = a * std::sin(th) + b * std::cos(th);
    }
}

/// Logits of every position, [n x n_vocab].
std::vector<double> reference_logits(const examples::tiny_decoder& m, const std::vector<std::int32_t>& tok) {
    const std::size_t E = m.n_embd, hd = m.head_dim(), H = m.n_head, G = m.n_head_kv, F = m.n_ff, n = tok.size();
    std::vector<vec> x(n), K(m.n_layer * n), V(m.n_layer * n);
    for (std::size_t t = 0; t < n; ++t) {
        const auto& emb = m.w.at("token_embd.weight");
        x[t].assign(emb.begin() + std::ptrdiff_t(tok[t] * E), emb.begin() + std::ptrdiff_t((tok[t] + 1) * E));
    }
    for (std::size_t il = 0; il < m.n_layer; ++il) {
        const std::string b = "blk." + std::to_string(il) + ".";
        auto W = [&](const char* s) -> const std::vector<float>& { return m.w.at(b + s); };
        std::vector<vec> q(n);
        for (std::size_t t = 0; t < n; ++t) {
            const vec h = rms_norm(x[t], W("attn_norm.weight"), m.eps);
            q[t] = matvec(W("attn_q.weight"), H * hd, E, h);
            vec k = matvec(W("attn_k.weight"), G * hd, E, h);
            for (std::size_t hh = 0; hh < H; ++hh) rope_neox(q[t].data() + hh * hd, hd, std::int64_t(t), m.rope_base);
            for (std::size_t g = 0; g < G; ++g) rope_neox(k.data() + g * hd, hd, std::int64_t(t), m.rope_base);
            K[il * n + t] = k;
            V[il * n + t] = matvec(W("attn_v.weight"), G * hd, E, h);
        }
        for (std::size_t t = 0; t < n; ++t) {
            vec att(H * hd, 0.0);
            for (std::size_t hh = 0; hh < H; ++hh) {
                const std::size_t g = hh / (H / G);
                vec s(t + 1);
                double mx = -1e300;
                for (std::size_t j = 0; j <= t; ++j) {
                    double d = 0;
                    for (std::size_t i = 0; i < hd; ++i) d += q[t][hh * hd + i] * K[il * n + j][g * hd + i];
                    s[j] = d / std::sqrt(double(hd));
                    mx = std::max(mx, s[j]);
                }
                double sum = 0;
                for (auto& v : s) sum += (v = std::exp(v - mx));
                for (std::size_t j = 0; j <= t; ++j)
                    for (std::size_t i = 0; i < hd; ++i) att[hh * hd + i] += s[j] / sum * V[il * n + j][g * hd + i];
            }
            const vec o = matvec(W("attn_output.weight"), E, H * hd, att);
            for (std::size_t i = 0; i < E; ++i) x[t][i] += o[i];
            const vec h = rms_norm(x[t], W("ffn_norm.weight"), m.eps);
            vec g = matvec(W("ffn_gate.weight"), F, E, h);
            const vec u = matvec(W("ffn_up.weight"), F, E, h);
            for (std::size_t i = 0; i < F; ++i) g[i] = std::max(g[i], 0.0) * std::max(g[i], 0.0) * u[i];
            const vec d = matvec(W("ffn_down.weight"), E, F, g);
            for (std::size_t i = 0; i < E; ++i) x[t][i] += d[i];
        }
    }
    std::vector<double> logits;
    for (std::size_t t = 0; t < n; ++t) {
        const vec l = matvec(m.w.at("output.weight"), m.n_vocab, E, rms_norm(x[t], m.w.at("output_norm.weight"), m.eps));
        logits.insert(logits.end(), l.begin(), l.end());
    }
    return logits;
}
} // namespace

int main(int argc, char** argv) {
    using namespace archetype;
    examples::tiny_decoder m;
    m.arch = "relu2llama";
    m.randomise(2026);
    std::string path;
    if (argc > 1) {
        path = argv[1];
    } else {
        path = (std::filesystem::temp_directory_path() / "archetype_relu2llama.gguf").string();
        m.write(path);
    }

    // the registry, extended with our entry, picks the structure from the file
    const std::vector<std::int32_t> tok = {3, 17, 42, 8, 8, 63, 0, 25, 11};
    std::vector<float> logits;
    std::string described;
    with_architecture<my_architectures>(gguf::file::open(path), [&]<class A>(std::type_identity<A>) {
        if constexpr (DecoderType<typename A::model>) {
            const auto model = load_model<A>(path);
            described = model.describe();
            auto s = session(model, {.n_threads = 2, .max_sequences = 1, .n_ctx = 64});
            logits.resize(tok.size() * model.n_vocab());
            s.prefill(0, tok, logits.data());
        }
        return 0;
    });
    std::printf("%s", described.c_str());
    if (argc > 1) {
        std::printf("ran %s: %zu logits (no reference for a file of yours)\n", path.c_str(), logits.size());
        return 0;
    }

    const auto want = reference_logits(m, tok);
    double worst = 0;
    for (std::size_t t = 0; t < tok.size(); ++t) {
        double err = 0, ref = 0;
        for (std::size_t v = 0; v < m.n_vocab; ++v) {
            err = std::max(err, std::abs(double(logits[t * m.n_vocab + v]) - want[t * m.n_vocab + v]));
            ref = std::max(ref, std::abs(want[t * m.n_vocab + v]));
        }
        worst = std::max(worst, err / std::max(1.0, ref));
    }
    std::printf("relu2llama vs the scalar reference: max |diff| / max(1, max |ref|) = %.3g over %zu positions\n", worst,
                tok.size());
    std::filesystem::remove(path);
    if (!(worst <= 1e-4)) {
        std::printf("FAIL: the library's relu2llama differs from the scalar forward pass\n");
        return 1;
    }
    std::printf("OK\n");
    return 0;
}
