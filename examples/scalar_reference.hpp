#pragma once
// The sublayers of a tiny_decoder as plain scalar code in double precision, for the
// examples that check a block shape of their own against the library: RMSNorm, causal
// GQA self-attention with NeoX RoPE, a SwiGLU feed-forward and the output head. Each
// example wires them into its own block (sequential, parallel, gated) in a few lines.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "tiny_decoder.hpp"

namespace examples {

struct scalar_reference {
    using vec = std::vector<double>;
    const tiny_decoder& m;

    const std::vector<float>& W(std::size_t il, const char* s) const {
        return m.w.at("blk." + std::to_string(il) + "." + s);
    }
    static vec matvec(const std::vector<float>& A, std::size_t rows, std::size_t cols, const vec& x) {
        vec y(rows, 0.0);
        for (std::size_t r = 0; r < rows; ++r)
            for (std::size_t c = 0; c < cols; ++c) y[r] += double(A[r * cols + c]) * x[c];
        return y;
    }
    vec rms_norm(const vec& x, const std::vector<float>& w) const {
        double ss = 0;
        for (double v : x) ss += v * v;
        const double s = 1.0 / std::sqrt(ss / double(x.size()) + m.eps);
        vec y(x.size());
        for (std::size_t i = 0; i < x.size(); ++i) y[i] = x[i] * s * w[i];
        return y;
    }
    /// NeoX pairs: (i, i + hd/2) rotated by p * base^(-2i/hd)
    void rope_neox(double* h, std::int64_t p) const {
        const std::size_t hd = m.head_dim();
        for (std::size_t i = 0; i < hd / 2; ++i) {
            const double th = double(p) * std::pow(double(m.rope_base), -2.0 * double(i) / double(hd));
            const double a = h[i], b = h[i + hd / 2];
            h[i] = a * std::cos(th) - b * std::sin(th);
            h[i + hd / 2] = a * std::sin(th) + b * std::cos(th);
        }
    }
    /// Layer il's attention output (after attn_output) for every position of h [n][E].
    std::vector<vec> attention(std::size_t il, const std::vector<vec>& h) const {
        const std::size_t E = m.n_embd, hd = m.head_dim(), H = m.n_head, G = m.n_head_kv, n = h.size();
        std::vector<vec> q(n), k(n), v(n), out(n);
        for (std::size_t t = 0; t < n; ++t) {
            q[t] = matvec(W(il, "attn_q.weight"), H * hd, E, h[t]);
            k[t] = matvec(W(il, "attn_k.weight"), G * hd, E, h[t]);
            v[t] = matvec(W(il, "attn_v.weight"), G * hd, E, h[t]);
            for (std::size_t a = 0; a < H; ++a) rope_neox(q[t].data() + a * hd, std::int64_t(t));
            for (std::size_t g = 0; g < G; ++g) rope_neox(k[t].data() + g * hd, std::int64_t(t));
        }
        for (std::size_t t = 0; t < n; ++t) {
            vec att(H * hd, 0.0);
            for (std::size_t a = 0; a < H; ++a) {
                const std::size_t g = a / (H / G);
                vec s(t + 1);
                double mx = -1e300, sum = 0;
                for (std::size_t j = 0; j <= t; ++j) {
                    double d = 0;
                    for (std::size_t i = 0; i < hd; ++i) d += q[t][a * hd + i] * k[j][g * hd + i];
                    mx = std::max(mx, s[j] = d / std::sqrt(double(hd)));
                }
                for (auto& e : s) sum += (e = std::exp(e - mx));
                for (std::size_t j = 0; j <= t; ++j)
                    for (std::size_t i = 0; i < hd; ++i) att[a * hd + i] += s[j] / sum * v[j][g * hd + i];
            }
            out[t] = matvec(W(il, "attn_output.weight"), E, H * hd, att);
        }
        return out;
    }
    /// Layer il's SwiGLU feed-forward of one row.
    vec ffn(std::size_t il, const vec& h) const {
        const std::size_t E = m.n_embd, F = m.n_ff;
        vec g = matvec(W(il, "ffn_gate.weight"), F, E, h);
        const vec u = matvec(W(il, "ffn_up.weight"), F, E, h);
        for (std::size_t i = 0; i < F; ++i) g[i] = g[i] / (1.0 + std::exp(-g[i])) * u[i];
        return matvec(W(il, "ffn_down.weight"), E, F, g);
    }
    std::vector<vec> embed(const std::vector<std::int32_t>& tok) const {
        const auto& emb = m.w.at("token_embd.weight");
        std::vector<vec> x(tok.size());
        for (std::size_t t = 0; t < tok.size(); ++t)
            x[t].assign(emb.begin() + std::ptrdiff_t(tok[t] * m.n_embd), emb.begin() + std::ptrdiff_t((tok[t] + 1) * m.n_embd));
        return x;
    }
    /// Logits [n x n_vocab] of the final residual stream.
    std::vector<double> logits(const std::vector<vec>& x) const {
        std::vector<double> out;
        for (const auto& r : x) {
            const vec l = matvec(m.w.at("output.weight"), m.n_vocab, m.n_embd, rms_norm(r, m.w.at("output_norm.weight")));
            out.insert(out.end(), l.begin(), l.end());
        }
        return out;
    }
    /// max |a - b| / max(1, max |b|), per position, worst over positions.
    static double worst_error(const std::vector<float>& a, const std::vector<double>& b, std::size_t V) {
        double worst = 0;
        for (std::size_t t = 0; t * V < b.size(); ++t) {
            double err = 0, ref = 0;
            for (std::size_t v = 0; v < V; ++v) {
                err = std::max(err, std::abs(double(a[t * V + v]) - b[t * V + v]));
                ref = std::max(ref, std::abs(b[t * V + v]));
            }
            worst = std::max(worst, err / std::max(1.0, ref));
        }
        return worst;
    }
};

} // namespace examples
