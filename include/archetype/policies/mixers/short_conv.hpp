#pragma once
// ShortConv: LFM2's gated short causal convolution, a mixer with a recurrent state
// (Liquid AI; llama.cpp src/models/lfm2.cpp, transformers Lfm2ShortConv).
//
//   [B | C | X] = in_proj(h)                 in_proj [E -> 3E], in that order
//   s           = the last L-1 rows of B⊙X of this sequence (its conv state, zeros at
//                 the start), then this pass's rows of B⊙X
//   conv[t, e]  = sum_{i<L} s[t + i, e] · w[e, i]    (a depthwise causal conv, kernel L)
//   out         = out_proj(C ⊙ conv)                 out_proj [E -> E]
//
// Tensors blk.N.shortconv.{in_proj,out_proj,conv}.weight (conv: ggml ne [L, E], w[e, i]
// at e·L + i); key {arch}.shortconv.l_cache = L. Its memory per sequence is the conv
// state, (L-1)·E floats, kept by the session beside the KV cells of the attention
// layers (decoder_session: recurrent_state_floats / forward hook).
#include <cstddef>
#include <cstdint>
#include <string>

#include "archetype/core/error.hpp"
#include "archetype/core/policy.hpp"
#include "archetype/core/thread_pool.hpp"
#include "archetype/kernels/matmul.hpp"
#include "archetype/policies/impl.hpp"

namespace archetype {

struct ShortConv {
    using axis = archetype::axis::mixer;
    static constexpr std::string_view name = "ShortConv";
    static constexpr bool attention = false;
    static std::string describe() { return "ShortConv (gated short causal convolution)"; }
};

template <>
struct mixer_impl<ShortConv> {
    struct weights {
        kernels::weight_view in_proj{}, out_proj{};
        const float* conv = nullptr; // [E x L]: conv[e * L + i]
        std::size_t L = 0, E = 0;
    };
    static constexpr bool keeps_kv = false;

    template <class Binder>
    static void bind(Binder& b, const std::string& blk, weights& w) {
        const std::string key = b.prefix() + "shortconv.l_cache";
        const auto L = b.file().template get<std::uint64_t>(key);
        if (L < 1 || L > 64)
            throw format_error("metadata key '" + key + "' = " + std::to_string(L) + " is out of range (1..64)");
        const std::size_t E = b.hparams().dims.n_embd;
        w.L = std::size_t(L);
        w.E = E;
        w.in_proj = b.matrix(blk + "shortconv.in_proj.weight", E, 3 * E);
        w.out_proj = b.matrix(blk + "shortconv.out_proj.weight", E, E);
        const auto& t = b.tensor(blk + "shortconv.conv.weight", {w.L, E});
        if (t.type != ggml_type::F32)
            throw shape_error("tensor '" + t.name + "' is " + std::string(type_name(t.type)) + ", expected F32");
        w.conv = reinterpret_cast<const float*>(t.data);
    }
    /// Floats of recurrent state one sequence keeps for this layer.
    static std::size_t state_floats(const weights& w) noexcept { return (w.L - 1) * w.E; }
    /// Floats of scratch a pass of `rows` rows needs.
    static std::size_t scratch_floats(const weights& w, std::size_t rows) noexcept { return rows * 4 * w.E; }

    /// The pass's rows `in` [rows x E] -> `out` [rows x E]. Ctx gives rows(), groups()
    /// (sequence, first row, count), state(seq) (this layer's conv state of the sequence),
    /// scratch(), pool().
    template <class Ctx>
    static void forward(Ctx& c, const weights& w, const float* in, float* out) {
        const std::size_t n = c.rows(), E = w.E, L = w.L;
        float* bcx = c.scratch();          // [n x 3E]
        float* y = bcx + n * 3 * E;        // [n x E]
        kernels::matmul(w.in_proj, in, E, n, bcx, 3 * E, c.pool());
        for (std::size_t t = 0; t < n; ++t) { // B ⊙ X, in place of B
            float* r = bcx + t * 3 * E;
            for (std::size_t e = 0; e < E; ++e) r[e] *= r[2 * E + e];
        }
        for (const auto& g : c.groups()) {
            float* st = c.state(g.seq); // [(L-1) x E], oldest row first
            // row j of s: the state's row j for j < L-1, else the pass's B⊙X row j-(L-1)
            auto s_row = [&](std::size_t j) -> const float* {
                return j < L - 1 ? st + j * E : bcx + (g.row + j - (L - 1)) * 3 * E;
            };
            for (std::size_t t = 0; t < g.n; ++t) {
                const float* C = bcx + (g.row + t) * 3 * E + E;
                float* yr = y + (g.row + t) * E;
                for (std::size_t e = 0; e < E; ++e) {
                    float acc = 0.f;
                    for (std::size_t i = 0; i < L; ++i) acc += s_row(t + i)[e] * w.conv[e * L + i];
                    yr[e] = C[e] * acc;
                }
            }
            // the new state: the last L-1 rows of s (rows g.n .. g.n + L-2), copied in order
            // (row k of the new state is row k + g.n of s: it never reads a row already overwritten)
            for (std::size_t k = 0; k + 1 < L; ++k) {
                const float* src = s_row(k + g.n);
                if (src != st + k * E)
                    for (std::size_t e = 0; e < E; ++e) st[k * E + e] = src[e];
            }
        }
        kernels::matmul(w.out_proj, y, E, n, out, E, c.pool());
    }
};

} // namespace archetype
