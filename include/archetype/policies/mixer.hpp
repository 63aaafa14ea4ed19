#pragma once
// Mixer axis: what mixes information across positions. Self-attention here; the
// others in policies/mixers/ (ShortConv, Rwkv7TimeMix, HybridMixer); the RWKV tags in
// policies/rwkv.hpp.
#include <cstdint>
#include <string>
#include <vector>

#include "archetype/core/error.hpp"
#include "archetype/core/policy.hpp"
#include "archetype/io/gguf.hpp"
#include "archetype/layers/attention.hpp"
#include "archetype/policies/impl.hpp"

namespace archetype {

/// Whether attention applies an RMSNorm to Q and K before RoPE: to each head (Qwen3,
/// Gemma 3: weights [head_dim]), or to the whole projection row (OLMo 2: weights
/// [n_head * head_dim] and [n_head_kv * head_dim]); from_file: as the file's
/// attn_q_norm.weight is shaped, none when it has none.
/// layer_per_head: a LayerNorm without bias over each head, each head with its own weights
/// (Cohere's use_qk_norm: attn_q_norm.weight [head_dim, n_head], attn_k_norm.weight
/// [head_dim, n_head_kv]).
/// rms_after_rope: the per-head RMSNorm applied to the rotated Q and K (Hunyuan).
enum class qk_norm { from_file, none, rms, rms_whole, layer_per_head, rms_after_rope };

/// Multi-head self-attention (heads, position, mask and cache are their own axes).
template <qk_norm QKNorm = qk_norm::from_file>
struct SelfAttentionWith {
    using axis = archetype::axis::mixer;
    static constexpr std::string_view name = "SelfAttention";
    static constexpr bool attention = true;
    static constexpr qk_norm qk = QKNorm;
    static std::string describe() {
        return std::string("SelfAttention") + (QKNorm == qk_norm::rms              ? "(QK RMSNorm)"
                                                : QKNorm == qk_norm::rms_whole      ? "(QK RMSNorm over all heads)"
                                                : QKNorm == qk_norm::layer_per_head ? "(QK LayerNorm per head)"
                                                : QKNorm == qk_norm::rms_after_rope ? "(QK RMSNorm after RoPE)"
                                                                                    : "");
    }
};
using SelfAttention = SelfAttentionWith<>;

namespace detail {
/// The file's {arch}.attention.head_count_kv per layer when it is an array (a hybrid's file:
/// 0 marks a layer without attention; the reader has checked its length and values), else
/// empty (one count for every layer).
template <class Binder>
std::vector<std::uint64_t> kv_heads_per_layer(Binder& b) {
    const std::string key = b.prefix() + "attention.head_count_kv";
    if (!b.file().has(key) || b.file().type_of(key) != gguf::value_type::ARRAY) return {};
    return b.file().template get<std::vector<std::uint64_t>>(key);
}
/// Whether the layer being bound attends: false where the per-layer array's entry is 0.
template <class Binder>
bool layer_attends(Binder& b) {
    const auto kv = kv_heads_per_layer(b);
    return kv.empty() || kv.at(b.layer_index()) != 0;
}
/// Whether mixer M keeps KV cells on a layer with these weights.
template <class M, class W>
bool mixer_keeps_kv(const W& w) {
    if constexpr (requires { mixer_impl<M>::keeps_kv(w); }) return mixer_impl<M>::keeps_kv(w);
    else if constexpr (requires { mixer_impl<M>::keeps_kv; }) return bool(mixer_impl<M>::keeps_kv);
    else return true;
}
template <class M, class W>
std::size_t mixer_state_floats(const W& w) {
    if constexpr (requires { mixer_impl<M>::state_floats(w); }) return mixer_impl<M>::state_floats(w);
    else return 0;
}
template <class M, class W>
std::size_t mixer_scratch_floats(const W& w, std::size_t rows) {
    if constexpr (requires { mixer_impl<M>::scratch_floats(w, rows); }) return mixer_impl<M>::scratch_floats(w, rows);
    else return 0;
}
/// Floats per pass of `rows` rows that mixer M hands to later layers through the layer
/// stack's side channel (RWKV-7's v_first; 0 for most mixers).
template <class M, class W>
std::size_t mixer_side_channel_floats(const W& w, std::size_t rows) {
    if constexpr (requires { mixer_impl<M>::side_channel_floats(w, rows); })
        return mixer_impl<M>::side_channel_floats(w, rows);
    else return 0;
}
} // namespace detail

/// What one layer hands to later layers of the same pass (RWKV-7's v_first): owned by the
/// layer stack (the session), cleared (written = false) at the start of each pass.
struct side_channel {
    float* data = nullptr;
    bool written = false;
};

/// The tensors of one attention block (blk.N. prefix given): attn_{q,k,v,output}.weight
/// (or one fused attn_qkv.weight [+ .bias], split by rows into Q, K, V),
/// the optional biases attn_{q,k,v,output}.bias (Qwen2, StableLM, GPT-2 ...; bound
/// whenever the file has them, llama.cpp's TENSOR_NOT_REQUIRED), the optional attention
/// sinks attn_sinks.weight [n_head] (gpt-oss), and the QK norms
/// attn_{q,k}_norm.weight as the policy's qk_norm says.
template <qk_norm QKNorm>
struct mixer_impl<SelfAttentionWith<QKNorm>> {
    using weights = layers::attention_weights;
    static constexpr bool keeps_kv = true; // KV cells under the model's cache policy
    /// The rows `in` -> `out` through the session's attention (its heads, position, mask and cache).
    template <class Ctx>
    static void forward(Ctx& c, const weights& w, const float* in, float* out) {
        c.self_attention(w, in, out);
    }
    template <class Binder>
    static void bind(Binder& b, const std::string& blk, weights& w) {
        const auto& d = b.hparams().dims;
        if (!detail::layer_attends(b))
            throw shape_error(b.prefix() + "attention.head_count_kv[" + std::to_string(b.layer_index()) +
                              "] = 0: layer " + std::to_string(b.layer_index()) + " has no attention; compose its "
                              "mixer per layer (HybridMixer<SelfAttention, ShortConv>, policies/mixers/hybrid.hpp)");
        if (d.n_head == 0)
            throw shape_error(b.prefix() + "attention.head_count = 0: the file has no attention heads, but layer " +
                              std::to_string(b.layer_index()) + "'s mixer is SelfAttention");
        if (b.keys().head_dim_v != d.head_dim)
            throw shape_error(b.prefix() + "attention.value_length = " + std::to_string(b.keys().head_dim_v) +
                              " differs from key_length = " + std::to_string(d.head_dim) +
                              " (not supported by SelfAttention; multi-head latent attention files: MultiHeadLatentAttention)");
        const std::size_t E = d.n_embd, qw = d.n_head * d.head_dim, kw = d.n_head_kv * d.head_dim, hd = d.head_dim;
        if (b.file().find_tensor(blk + "attn_qkv.weight")) {
            // one fused projection [E, qw + 2 kw] (GPT-2, Phi-3, BLOOM): Q, K, V are its row ranges.
            // Falcon's converter notes that it reordered the rows to that layout ("jploski")
            if (const std::string key = b.prefix() + "tensor_data_layout"; b.file().has(key)) {
                const auto layout = b.file().template get<std::string>(key);
                if (layout != "jploski")
                    throw shape_error("metadata key '" + key + "' = '" + layout + "': the fused attn_qkv rows are read "
                                      "as Q | K | V, the layout llama.cpp's converter writes ('jploski')");
            }
            const std::size_t n = qw + 2 * kw;
            w.wq = b.matrix_rows(blk + "attn_qkv.weight", E, n, 0, qw);
            w.wk = b.matrix_rows(blk + "attn_qkv.weight", E, n, qw, kw);
            w.wv = b.matrix_rows(blk + "attn_qkv.weight", E, n, qw + kw, kw);
            if (const float* bias = b.optional_vector_f32(blk + "attn_qkv.bias", n)) {
                w.bq = bias;
                w.bk = bias + qw;
                w.bv = bias + qw + kw;
            }
        } else {
            w.wq = b.matrix(blk + "attn_q.weight", E, qw);
            w.wk = b.matrix(blk + "attn_k.weight", E, kw);
            w.wv = b.matrix(blk + "attn_v.weight", E, kw);
            w.bq = b.optional_vector_f32(blk + "attn_q.bias", qw);
            w.bk = b.optional_vector_f32(blk + "attn_k.bias", kw);
            w.bv = b.optional_vector_f32(blk + "attn_v.bias", kw);
        }
        w.wo = b.matrix(blk + "attn_output.weight", qw, E);
        w.bo = b.optional_vector_f32(blk + "attn_output.bias", E);
        // attention sinks (gpt-oss): one logit per head in each softmax's denominator
        w.sinks = b.optional_vector_f32(blk + "attn_sinks.weight", d.n_head);
        const auto* qn = b.file().find_tensor(blk + "attn_q_norm.weight");
        if constexpr (QKNorm == qk_norm::none) {
            if (qn) throw shape_error("SelfAttentionWith<qk_norm::none> but the file has " + blk + "attn_q_norm.weight");
        } else if constexpr (QKNorm == qk_norm::layer_per_head) {
            auto per_head = [&](const std::string& name, std::size_t heads) {
                const auto& t = b.tensor(name, {hd, heads});
                if (t.type != ggml_type::F32)
                    throw shape_error("tensor '" + name + "' is " + std::string(type_name(t.type)) + ", expected F32");
                return reinterpret_cast<const float*>(t.data);
            };
            w.qk_layer_norm = true;
            w.q_norm = per_head(blk + "attn_q_norm.weight", d.n_head);
            w.k_norm = per_head(blk + "attn_k_norm.weight", d.n_head_kv);
        } else {
            // from_file: a weight as wide as the whole Q row (and not as one head) norms the row
            const bool whole = QKNorm == qk_norm::rms_whole ||
                               (QKNorm == qk_norm::from_file && qn && qw != hd && qn->n_elements() == qw);
            if (qn || QKNorm != qk_norm::from_file) {
                w.qk_norm_whole = whole;
                w.qk_norm_after_rope = QKNorm == qk_norm::rms_after_rope;
                w.q_norm = b.vector_f32(blk + "attn_q_norm.weight", whole ? qw : hd);
                w.k_norm = b.vector_f32(blk + "attn_k_norm.weight", whole ? kw : hd);
            }
        }
    }
};

} // namespace archetype
