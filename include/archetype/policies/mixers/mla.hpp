#pragma once
// Multi-head latent attention (DeepSeek-V2/V3, Kimi-K2; llama.cpp src/models/deepseek2.cpp)
// in the absorbed form, for every batch size, as llama.cpp runs it when the file has
// attn_k_b / attn_v_b: per token
//
//   q        = attn_q . x, or attn_q_b . RMSNorm(attn_q_a . x)   (by the tensors present:
//              attn_q_a means a low-rank q of {arch}.attention.q_lora_rank)
//   [c; k_pe] = attn_kv_a_mqa . x,  c = RMSNorm(c, attn_kv_a_norm)   (kv_lora_rank r, rope dims)
//   per head h: q_nope, q_pe = q[h] split at key_length_mla - rope;  q_pe, k_pe rotated (RoPE)
//   Q_h = [attn_k_b[h] . q_nope ; q_pe]        K = V-source = [c ; k_pe]  (one shared "head")
//   o_h = attn_v_b[h] . sum_s p_s c_s,  p = softmax(kq_scale * Q_h . K_s)
//   out = attn_output . [o_0 .. o_H-1]
//
// The cache keeps one row [c ; k_pe] of key_length = r + rope floats per token and layer
// (a K-only cache: the values are the first value_length = r of each key row), against
// n_head * (key_length_mla + value_length_mla) for the decompressed heads (describe shows both).
// kq_scale = mscale^2 / sqrt(key_length_mla) with mscale = 1 + 0.1 m ln(factor), m =
// {arch}.rope.scaling.yarn_log_multiplier / 0.1 (llama.cpp's DeepSeek-2 reading of the
// converter's key), and the rotation's cos/sin carry no YaRN magnitude (llama.cpp's
// DeepSeek-2 special case mscale = mscale_all_dim: the factor is folded into kq_scale).
#include <cmath>
#include <cstddef>
#include <string>
#include <vector>

#include "archetype/core/error.hpp"
#include "archetype/core/policy.hpp"
#include "archetype/core/thread_pool.hpp"
#include "archetype/kernels/batch_activations.hpp"
#include "archetype/kernels/decode_rows.hpp"
#include "archetype/kernels/matmul.hpp"
#include "archetype/kernels/norm.hpp"
#include "archetype/policies/impl.hpp"

namespace archetype {

struct MultiHeadLatentAttention {
    using axis = archetype::axis::mixer;
    static constexpr std::string_view name = "MultiHeadLatentAttention";
    static constexpr bool attention = true;
    static std::string describe() { return "MultiHeadLatentAttention (absorbed, K-only latent cache)"; }
};
using MLA = MultiHeadLatentAttention;

namespace layers {
struct mla_weights {
    kernels::weight_view wq{}, wq_a{}, wq_b{}, wkv_a{}, wo{};
    std::vector<kernels::weight_view> wk_b, wv_b; // per head: [r x nope], [v x r]
    const float* q_a_norm = nullptr;
    const float* kv_a_norm = nullptr;
    std::size_t n_head = 0, rank = 0, nope = 0, rope = 0, v = 0, q_rank = 0;
    float scale = 1.f, eps = 1e-6f;
    std::size_t q_head() const noexcept { return nope + rope; }
    std::size_t k_head() const noexcept { return rank + rope; }
};
} // namespace layers

template <>
struct mixer_impl<MultiHeadLatentAttention> {
    using weights = layers::mla_weights;
    static constexpr bool keeps_kv = true;
    /// The values are the first rank floats of each cached key row: the cache keeps K only.
    static constexpr bool values_in_keys = true;

    /// The cache row per token and layer against what the decompressed heads would keep.
    static std::string describe_cache(const weights& w) {
        return std::to_string(w.k_head() * sizeof(float)) + " bytes per layer in float32 (one latent row: kv_lora_rank " +
               std::to_string(w.rank) + " + rope " + std::to_string(w.rope) + "); decompressed heads would keep " +
               std::to_string(w.n_head * (w.q_head() + w.v) * sizeof(float)) + " (" + std::to_string(w.n_head) +
               " x (K " + std::to_string(w.q_head()) + " + V " + std::to_string(w.v) + "))";
    }
    static std::size_t scratch_floats(const weights& w, std::size_t rows) {
        return rows * (w.n_head * w.q_head() + w.q_rank + w.n_head * w.v);
    }

    template <class Binder>
    static void bind(Binder& b, const std::string& blk, weights& w) {
        const auto& f = b.file();
        const std::string a = b.prefix();
        auto& hp = b.hparams();
        const auto& h = b.keys();
        auto key = [&](const char* k) {
            const std::size_t v = f.template get<std::size_t>(a + k);
            if (v == 0 || v > 65536) throw format_error("metadata key '" + a + k + "' = " + std::to_string(v) + " is out of range");
            return v;
        };
        const std::size_t E = hp.dims.n_embd, H = h.n_head;
        w.n_head = H;
        w.rank = key("attention.kv_lora_rank");
        w.rope = h.n_rot;
        const std::size_t k_mla = key("attention.key_length_mla");
        w.v = key("attention.value_length_mla");
        if (k_mla <= w.rope)
            throw format_error(a + "attention.key_length_mla = " + std::to_string(k_mla) + " must exceed the rotated dims " +
                               std::to_string(w.rope));
        w.nope = k_mla - w.rope;
        if (h.n_head_kv != 1 || h.head_dim != w.rank + w.rope || h.head_dim_v != w.rank)
            throw shape_error("multi-head latent attention keeps one key row [kv_lora_rank + rope] per token: the file "
                              "has head_count_kv = " + std::to_string(h.n_head_kv) + ", key_length = " +
                              std::to_string(h.head_dim) + ", value_length = " + std::to_string(h.head_dim_v) +
                              " (expected 1, " + std::to_string(w.rank + w.rope) + ", " + std::to_string(w.rank) + ")");
        const std::size_t qw = H * w.q_head();
        if (f.find_tensor(blk + "attn_q_a.weight")) { // a low-rank q (V3), by the tensors present
            w.q_rank = f.has(a + "attention.q_lora_rank") ? key("attention.q_lora_rank")
                                                          : f.tensor(blk + "attn_q_a.weight").ne.at(1);
            w.wq_a = b.matrix(blk + "attn_q_a.weight", E, w.q_rank);
            w.q_a_norm = b.vector_f32(blk + "attn_q_a_norm.weight", w.q_rank);
            w.wq_b = b.matrix(blk + "attn_q_b.weight", w.q_rank, qw);
        } else {
            if (f.has(a + "attention.q_lora_rank")) (void)key("attention.q_lora_rank"); // the lite files' key, unused
            w.wq = b.matrix(blk + "attn_q.weight", E, qw);
        }
        w.wkv_a = b.matrix(blk + "attn_kv_a_mqa.weight", E, w.rank + w.rope);
        w.kv_a_norm = b.vector_f32(blk + "attn_kv_a_norm.weight", w.rank);
        w.wk_b.resize(H);
        w.wv_b.resize(H);
        for (std::size_t i = 0; i < H; ++i) {
            w.wk_b[i] = b.expert(blk + "attn_k_b.weight", w.nope, w.rank, H, i);
            w.wv_b[i] = b.expert(blk + "attn_v_b.weight", w.rank, w.v, H, i);
        }
        w.wo = b.matrix(blk + "attn_output.weight", H * w.v, E);
        w.eps = hp.norm_eps;
        // YaRN: the magnitude goes into the score scale, not into cos/sin (llama.cpp's deepseek2)
        float mscale = 1.f;
        auto& r = hp.rope;
        if (r.ext_factor != 0.f && r.freq_scale < 1.f) {
            const float lf = std::log(1.f / r.freq_scale);
            const std::string mk = a + "rope.scaling.yarn_log_multiplier";
            const float m = f.has(mk) ? f.template get<float>(mk) / 0.1f : 0.f;
            mscale = 1.f + 0.1f * m * lf;
            r.attn_factor = 1.f / (1.f + 0.1f * lf);
            hp.rope_swa.attn_factor = r.attn_factor;
        }
        w.scale = mscale * mscale / std::sqrt(float(k_mla));
    }

    template <class Ctx>
    static void forward(Ctx& c, const weights& w, const float* in, float* out) {
        const std::size_t n = c.rows(), E = c.width(), H = w.n_head, qh = w.q_head(), kh = w.k_head();
        thread_pool* pool = c.pool();
        float* q = c.scratch();            // [n x H*qh]
        float* qa = q + n * H * qh;        // [n x q_rank]
        float* o = qa + n * w.q_rank;      // [n x H*v]
        float* Q = c.queries();            // [n x H*kh]
        float* K = c.keys();               // [n x kh]
        float* lat = c.attention_out();    // [n x H*rank]
        if (w.q_rank) {
            kernels::matmul(w.wq_a, in, E, n, qa, w.q_rank, pool);
            for (std::size_t t = 0; t < n; ++t)
                kernels::rms_norm(qa + t * w.q_rank, w.q_a_norm, qa + t * w.q_rank, w.q_rank, w.eps);
            kernels::matmul(w.wq_b, qa, w.q_rank, n, q, H * qh, pool);
        } else {
            kernels::matmul(w.wq, in, E, n, q, H * qh, pool);
        }
        kernels::matmul(w.wkv_a, in, E, n, K, kh, pool);
        for (std::size_t t = 0; t < n; ++t) kernels::rms_norm(K + t * kh, w.kv_a_norm, K + t * kh, w.rank, w.eps);
        c.rotate(q + w.nope, H * qh, H, qh); // q_pe of every head
        c.rotate(K + w.rank, kh, 1, kh);     // the shared k_pe
        // The per-head products are small (rank x nope, v x rank): the heads, not the rows of
        // one head's product, are spread over the threads, one fork-join for all of them
        // instead of one per head (at decode the joins cost more than the products). A
        // product's result does not depend on the threads that compute it (kernels/), so the
        // logits are those of the per-head loop bit for bit.
        // A matmul inside a task runs on that task's thread; the numerics modes are a
        // property of the calling thread (kernels/batch_activations.hpp, decode_rows.hpp),
        // so each task takes the caller's.
        const auto numerics = kernels::current_batch_activations();
        const bool invariant = kernels::decode_rows_invariant();
        const auto each_head = [&](auto&& f) {
            if (!pool) {
                for (std::size_t i = 0; i < H; ++i) f(i);
                return;
            }
            pool->for_each_task(H, [&](std::size_t i) {
                const kernels::batch_activations_scope a(numerics);
                const kernels::decode_rows_invariant_scope b(invariant);
                f(i);
            });
        };
        each_head([&](std::size_t i) { // Q_h = [k_b[h] . q_nope ; q_pe]
            kernels::matmul(w.wk_b[i], q + i * qh, H * qh, n, Q + i * kh, H * kh, pool);
            for (std::size_t t = 0; t < n; ++t)
                for (std::size_t d = 0; d < w.rope; ++d) Q[t * H * kh + i * kh + w.rank + d] = q[t * H * qh + i * qh + w.nope + d];
        });
        c.attend_latent(w.rank, w.scale); // lat [n x H*rank]: each head's softmax-weighted sum of c
        each_head([&](std::size_t i) {
            kernels::matmul(w.wv_b[i], lat + i * w.rank, H * w.rank, n, o + i * w.v, H * w.v, pool);
        });
        kernels::matmul(w.wo, o, H * w.v, n, out, E, pool);
    }
};

namespace detail {
/// Whether mixer M's values are a prefix of its cached keys (a K-only cache: MLA).
template <class M>
inline constexpr bool mixer_values_in_keys = [] {
    if constexpr (requires { mixer_impl<M>::values_in_keys; }) return bool(mixer_impl<M>::values_in_keys);
    else return false;
}();
} // namespace detail

} // namespace archetype
