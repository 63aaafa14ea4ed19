#pragma once
// Hyperparameters of a llama.cpp transformer GGUF of any architecture ({arch} =
// general.architecture: llama, mellum, gemma3, qwen2, a user's ...), read from the
// metadata with llama.cpp's defaults where a key is absent (commit d32676d;
// ../shared/fixtures/README.md §4.1). What the architecture implies but the keys do
// not say comes from its gguf_conventions (io/arch/conventions.hpp), given by the
// caller from the architecture registry (models/registry.hpp):
//
//   {arch}.context_length, embedding_length, block_count, attention.head_count  required
//           (head_count 0: a file without attention, llama.cpp's mamba / mamba2: no heads,
//           and the mixer that would attend refuses it)
//   {arch}.feed_forward_length            required unless the model is a MoE; 0 (mamba,
//           mamba2: no feed-forward) or one value per layer (nemotron_h: 0 on the layers
//           without one) are the block shape's to accept
//   {arch}.attention.head_count_kv        default head_count
//   {arch}.attention.key_length           default embedding_length / head_count
//   {arch}.rope.dimension_count           default key_length
//   {arch}.rope.freq_base                 default 10000
//   {arch}.rope.scaling.type              default linear ("none" = linear factor 1)
//   {arch}.rope.scaling.factor / rope.scale_linear   default 1
//   {arch}.rope.scaling.original_context_length     default context_length
//   {arch}.rope.scaling.yarn_beta_fast / _slow / yarn_ext_factor / attn_factor
//   {arch}.attention.layer_norm_rms_epsilon / layer_norm_epsilon   at least one: the
//           model's norm policy reads its own (norm_impl<N>::eps)
//   {arch}.vocab_size                     default: rows of token_embd.weight
//   {arch}.expert_count / expert_used_count         default 0
//   {arch}.attention.sliding_window (0/absent = none) and
//           {arch}.attention.sliding_window_pattern (bool per layer, or a period N:
//           layer il windowed iff N == 0 || il % N < N - 1); without the pattern key
//           the conventions' default period (0: every layer), or a format error when
//           the conventions require the key (mellum)
//   ({arch}.embedding_scale, residual_scale, logit_scale, final_logit_softcapping,
//           attn_logit_softcapping: read by their policies, EmbeddingMultiplier,
//           ResidualMultiplier, LogitDivisor / LogitMultiplier, LogitSoftCap, AttentionSoftCap)
//   (the attention scale and {arch}.attention.scale: the model's attention-scale policy,
//           policies/attention_scale.hpp)
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "archetype/core/error.hpp"
#include "archetype/io/arch/conventions.hpp"
#include "archetype/io/arch/window_pattern.hpp"
#include "archetype/io/gguf.hpp"

namespace archetype::arch {

enum class rope_scaling { none, linear, yarn };

struct llama_hparams {
    std::string arch;                    // general.architecture
    std::size_t n_vocab = 0, n_ctx_train = 0, n_embd = 0, n_layer = 0, n_ff = 0;
    std::vector<std::size_t> n_ff_per_layer; // when feed_forward_length is an array (n_ff: its largest)
    std::size_t n_head = 0, n_head_kv = 0, head_dim = 0, head_dim_v = 0, n_rot = 0;
    float rms_eps = 0.f, ln_eps = 0.f;   // {arch}.attention.layer_norm_rms_epsilon / layer_norm_epsilon
    bool has_rms_eps = false, has_ln_eps = false;
    // RoPE
    float rope_freq_base = 10000.f;
    rope_scaling rope_scaling_type = rope_scaling::linear;
    float rope_freq_scale = 1.f;         // 1 / scaling factor
    std::size_t rope_n_ctx_orig = 0;
    float yarn_ext_factor = 0.f, yarn_attn_factor = 1.f, yarn_beta_fast = 32.f, yarn_beta_slow = 1.f;
    // MoE
    std::size_t n_expert = 0, n_expert_used = 0, n_ff_exp = 0;
    // sliding window
    std::size_t n_swa = 0;               // 0 = none
    std::vector<bool> swa_layers;        // per layer, when n_swa > 0
    bool swa_pattern_in_file = false;
};

namespace detail {
inline std::size_t checked_dim(const gguf::file& f, const std::string& key, std::uint64_t v,
                               std::uint64_t limit = std::uint64_t(1) << 24) {
    if (v == 0 || v > limit)
        throw format_error("metadata key '" + key + "' = " + std::to_string(v) + " is out of range (1.." +
                           std::to_string(limit) + ")");
    (void)f;
    return static_cast<std::size_t>(v);
}
} // namespace detail

/// Reads the hyperparameters of a transformer file under its architecture's key prefix.
inline llama_hparams read_llama_hparams(const gguf::file& f, const gguf_conventions& conv = {}) {
    llama_hparams h;
    h.arch = std::string(f.architecture());
    if (h.arch.empty()) throw format_error("general.architecture is empty");
    const std::string a = h.arch + ".";
    auto req = [&](const char* k, std::uint64_t limit = std::uint64_t(1) << 24) {
        const std::string key = a + k;
        return detail::checked_dim(f, key, f.get<std::uint64_t>(key), limit);
    };
    auto opt = [&](const char* k, std::size_t def, std::uint64_t limit = std::uint64_t(1) << 24) {
        const std::string key = a + k;
        if (!f.has(key)) return def;
        return detail::checked_dim(f, key, f.get<std::uint64_t>(key), limit);
    };
    h.n_ctx_train = req("context_length", std::uint64_t(1) << 30);
    h.n_embd = req("embedding_length");
    h.n_layer = req("block_count", 4096);
    // 0: no attention in the file (llama.cpp's recurrent converters write it so)
    if (const std::string hk = a + "attention.head_count"; f.get<std::uint64_t>(hk) == 0) h.n_head = 0;
    else h.n_head = req("attention.head_count", 4096);
    // a per-layer array (0 = a layer without attention: lfm2, jamba, granitehybrid) gives the
    // model's one KV head count here; which layers attend is the mixer's to read
    // (detail::layer_attends, policies/mixer.hpp)
    if (const std::string kk = a + "attention.head_count_kv"; f.has(kk) && f.type_of(kk) == gguf::value_type::ARRAY) {
        const auto v = f.get<std::vector<std::uint64_t>>(kk);
        if (v.size() != h.n_layer)
            throw format_error(kk + " has " + std::to_string(v.size()) + " values for " + std::to_string(h.n_layer) +
                               " layers");
        for (std::size_t il = 0; il < v.size(); ++il) {
            if (v[il] > 4096)
                throw format_error(kk + "[" + std::to_string(il) + "] = " + std::to_string(v[il]) + " is out of range");
            if (v[il] != 0 && h.n_head_kv != 0 && v[il] != h.n_head_kv)
                throw shape_error(kk + " has layers with " + std::to_string(h.n_head_kv) + " and " +
                                  std::to_string(v[il]) + " KV heads (one KV head count per model is supported)");
            if (v[il] != 0) h.n_head_kv = std::size_t(v[il]);
        }
        if (h.n_head_kv == 0) h.n_head_kv = h.n_head; // no attention layer at all: the heads are unused
    } else if (h.n_head != 0) {
        h.n_head_kv = opt("attention.head_count_kv", h.n_head, 4096);
    }
    if (h.n_head == 0) {
        // nothing attends: no head dimension, no rotation
        if (const std::string kk = a + "attention.head_count_kv";
            f.has(kk) && f.type_of(kk) != gguf::value_type::ARRAY)
            h.n_head_kv = std::size_t(f.get<std::uint64_t>(kk));
        if (h.n_head_kv != 0)
            throw format_error(a + "attention.head_count = 0 but the file gives layers " + std::to_string(h.n_head_kv) +
                               " KV heads");
        h.head_dim = h.head_dim_v = opt("attention.key_length", 0, 65536);
        h.n_rot = 0;
    } else if (h.n_head % h.n_head_kv != 0)
        throw format_error(a + "attention.head_count = " + std::to_string(h.n_head) +
                           " is not a multiple of head_count_kv = " + std::to_string(h.n_head_kv));
    if (h.n_head != 0 && h.n_embd % h.n_head != 0 && !f.has(a + "attention.key_length"))
        throw format_error(a + "embedding_length = " + std::to_string(h.n_embd) +
                           " is not a multiple of head_count = " + std::to_string(h.n_head));
    if (h.n_head != 0) {
        h.head_dim = opt("attention.key_length", h.n_embd / h.n_head, 65536);
        // a value_length other than key_length is the mixer's to accept (multi-head latent
        // attention's values are a prefix of its keys) or refuse (SelfAttention)
        h.head_dim_v = opt("attention.value_length", h.head_dim, 65536);
        h.n_rot = opt("rope.dimension_count", h.head_dim, 65536);
        if (h.n_rot > h.head_dim || h.n_rot % 2 != 0)
            throw format_error(a + "rope.dimension_count = " + std::to_string(h.n_rot) +
                               " must be even and at most the head dimension " + std::to_string(h.head_dim));
    }
    auto eps_key = [&](const char* key, float& v, bool& has) {
        if (!(has = f.has(a + key))) return;
        v = f.get<float>(a + key);
        if (!(v >= 0.f) || !std::isfinite(v))
            throw format_error(a + key + " = " + std::to_string(v) + " is not a finite non-negative number");
    };
    eps_key("attention.layer_norm_rms_epsilon", h.rms_eps, h.has_rms_eps);
    eps_key("attention.layer_norm_epsilon", h.ln_eps, h.has_ln_eps);
    // (llama.cpp's converter files a config's norm_eps under the RMS key for every family:
    // for ModernBERT it is the eps of LayerNorms)
    if (conv.layer_norm_eps_in_rms_key && !h.has_ln_eps && h.has_rms_eps) {
        h.ln_eps = h.rms_eps;
        h.has_ln_eps = true;
    }
    if (!h.has_rms_eps && !h.has_ln_eps)
        throw format_error("the file has neither " + a + "attention.layer_norm_rms_epsilon nor " + a +
                           "attention.layer_norm_epsilon");
    // {arch}.use_parallel_residual is the block shape's key (policies/block.hpp)
    h.rope_freq_base = f.get_or<float>(a + "rope.freq_base", 10000.f);
    if (!(h.rope_freq_base > 0.f) || !std::isfinite(h.rope_freq_base))
        throw format_error(a + "rope.freq_base = " + std::to_string(h.rope_freq_base) + " must be positive");
    const std::string st = f.get_or<std::string>(a + "rope.scaling.type", "linear");
    if (st == "none" || st == "linear")
        h.rope_scaling_type = st == "none" ? rope_scaling::none : rope_scaling::linear;
    else if (st == "yarn")
        h.rope_scaling_type = rope_scaling::yarn;
    else
        throw shape_error(a + "rope.scaling.type = '" + st + "' is not supported (none, linear, yarn)");
    float factor = f.get_or<float>(a + "rope.scale_linear", 0.f);
    factor = f.get_or<float>(a + "rope.scaling.factor", factor);
    if (!std::isfinite(factor) || factor < 0.f)
        throw format_error(a + "rope.scaling.factor = " + std::to_string(factor) + " is not valid");
    h.rope_freq_scale = (factor == 0.f || h.rope_scaling_type == rope_scaling::none) ? 1.f : 1.f / factor;
    h.rope_n_ctx_orig = opt("rope.scaling.original_context_length", h.n_ctx_train, std::uint64_t(1) << 30);
    h.yarn_ext_factor = f.get_or<float>(a + "rope.scaling.yarn_ext_factor",
                                        h.rope_scaling_type == rope_scaling::yarn ? 1.f : 0.f);
    h.yarn_attn_factor = f.get_or<float>(a + "rope.scaling.attn_factor", 1.f);
    h.yarn_beta_fast = f.get_or<float>(a + "rope.scaling.yarn_beta_fast", 32.f);
    h.yarn_beta_slow = f.get_or<float>(a + "rope.scaling.yarn_beta_slow", 1.f);

    h.n_expert = f.has(a + "expert_count") ? f.get<std::size_t>(a + "expert_count") : 0;
    h.n_expert_used = f.has(a + "expert_used_count") ? f.get<std::size_t>(a + "expert_used_count") : 0;
    if (h.n_expert > 4096 || h.n_expert_used > h.n_expert || (h.n_expert > 0 && h.n_expert_used == 0))
        throw format_error(a + "expert_count = " + std::to_string(h.n_expert) + ", expert_used_count = " +
                           std::to_string(h.n_expert_used) + ": need 1 <= used <= count <= 4096");
    if (h.n_expert > 0) {
        h.n_ff_exp = opt("expert_feed_forward_length", 0);
        h.n_ff = opt("feed_forward_length", h.n_ff_exp);
        if (h.n_ff_exp == 0) h.n_ff_exp = h.n_ff;
    } else if (const std::string fk = a + "feed_forward_length"; f.has(fk) && f.type_of(fk) == gguf::value_type::ARRAY) {
        // one width per layer (nemotron_h: 0 on its mixer layers); which layers feed forward
        // is the block shape's to read
        const auto v = f.get<std::vector<std::uint64_t>>(fk);
        if (v.size() != h.n_layer)
            throw format_error(fk + " has " + std::to_string(v.size()) + " values for " + std::to_string(h.n_layer) +
                               " layers");
        for (std::size_t il = 0; il < v.size(); ++il) {
            if (v[il] > (std::uint64_t(1) << 24))
                throw format_error(fk + "[" + std::to_string(il) + "] = " + std::to_string(v[il]) + " is out of range");
            h.n_ff_per_layer.push_back(std::size_t(v[il]));
            h.n_ff = std::max(h.n_ff, std::size_t(v[il]));
        }
    } else if (f.get<std::uint64_t>(fk) == 0) {
        h.n_ff = 0; // no feed-forward (mamba, mamba2): the block shape must have none
    } else {
        h.n_ff = req("feed_forward_length");
    }

    if (const auto* t = f.find_tensor("token_embd.weight"); t && t->ne.size() >= 2)
        h.n_vocab = opt("vocab_size", static_cast<std::size_t>(t->ne[1]), std::uint64_t(1) << 31);
    else
        h.n_vocab = req("vocab_size", std::uint64_t(1) << 31);

    // {arch}.embedding_scale, residual_scale and logit_scale are their policies' keys
    // (policies/multipliers.hpp, policies/logits.hpp): Granite's logit_scale divides,
    // Command-R's multiplies; so are the soft caps (policies/attention_softcap.hpp,
    // logit_softcap.hpp); a model without the policy leaves the key to the ledger
    h.n_swa = f.has(a + "attention.sliding_window") ? f.get<std::size_t>(a + "attention.sliding_window") : 0;
    if (h.n_swa > (std::size_t(1) << 30))
        throw format_error(a + "attention.sliding_window = " + std::to_string(h.n_swa) + " is out of range");
    if (h.n_swa > 0) {
        const std::string pk = a + "attention.sliding_window_pattern";
        if (!f.has(pk) && conv.window_pattern_required)
            throw format_error("missing key '" + pk + "' (" + h.arch + " requires it with a sliding window)");
        h.swa_pattern_in_file = f.has(pk) || conv.window_period_default != 0;
        h.swa_layers = window_layers(f, pk, h.n_layer, conv);
    }
    return h;
}

} // namespace archetype::arch
