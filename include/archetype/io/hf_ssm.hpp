#pragma once
// The state-space families' Hugging Face checkpoints as llama.cpp's converter writes them
// (conversion/mamba.py Mamba2Model, conversion/granite.py GraniteHybridModel): one function
// per family, called by hf::write_gguf (io/hf_checkpoint.hpp) for its families() entries.
// hf_checkpoint.hpp declares write_ssm_gguf and includes this file at its end; this file
// includes hf_checkpoint.hpp for its helpers (config, weights, element, gguf_type).
//
//   Mamba2ForCausalLM             -> `mamba2`: no attention, no feed-forward (head_count 0,
//                                    feed_forward_length 0), the ssm.* keys, A = −exp(A_log),
//                                    conv1d [C, 1, K] -> [C, K], ssm_norm [d_inner] -> [G, d_inner/G]
//   GraniteMoeHybridForCausalLM   -> `granitehybrid`: Mamba-2 layers and attention layers by
//                                    layer_types ("mamba"/"attention" on the Hub, transformers 5's
//                                    "linear_attention"/"full_attention"; head_count_kv 0 on the
//                                    Mamba layers), Granite's multipliers, the dense shared_mlp
//                                    (input_linear = gate | up rows), q/k rows permuted as
//                                    LlamaModel.permute; NoPE (rope.scaling.finetuned false,
//                                    context_length 2^20) unless position_embedding_type is
//                                    "rope": then rope.scaling.finetuned true (llama.cpp's RoPE
//                                    switch; the converter itself writes it only for Bamba) and
//                                    the config's max_position_embeddings
//
// What these converters do not handle is refused by name: a time_step_limit other than
// (0, inf) (transformers clamps dt to it, llama.cpp does not), Granite's mixtures of experts,
// a RoPE type other than "default", a bias on a projection the GGUF has no tensor for.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "archetype/io/hf_checkpoint.hpp"

namespace archetype::hf::detail {

/// config.json's time_step_limit must be absent or (0, inf): no clamp on dt.
inline void require_unclamped_dt(const config& c, const std::string& cls) {
    if (!c.has("time_step_limit")) return;
    const auto& v = c.raw()["time_step_limit"];
    const bool inf_hi = v.is_array() && v.size() == 2 &&
                        ((v[1].is_number() && std::isinf(v[1].get<double>())) ||
                         (v[1].is_object() && v[1].contains("__float__") && v[1]["__float__"] == "Infinity"));
    if (!(inf_hi && v[0].is_number() && v[0].get<double>() == 0.0))
        throw format_error("config.json time_step_limit = " + v.dump() + " is not implemented for " + cls +
                           " (transformers clamps dt to it; the GGUF has no key for it)");
}

/// Writes one Mamba-2 mixer's tensors: `h` the checkpoint's mixer prefix ("...mixer." /
/// "...mamba."), `g` the GGUF block prefix.
template <class Take, class AddF32>
void mamba2_mixer(const weights& W, std::set<std::string>& used, const std::string& h, const std::string& g,
                  std::uint64_t d_inner, std::uint64_t n_group, Take&& take, AddF32&& add_f32) {
    auto tensor = [&](const std::string& name) -> const safetensors::tensor_info& {
        const auto it = W.by_name.find(name);
        if (it == W.by_name.end()) throw format_error("checkpoint has no '" + name + "'");
        used.insert(name);
        return *it->second;
    };
    auto as_f32 = [&](const safetensors::tensor_info& t, auto&& f) {
        std::vector<float> v(t.n_elements());
        for (std::size_t i = 0; i < v.size(); ++i) v[i] = f(element(t, i));
        return v;
    };
    take(h + "in_proj.weight", g + "ssm_in.weight");
    take(h + "out_proj.weight", g + "ssm_out.weight");
    take(h + "conv1d.bias", g + "ssm_conv1d.bias");
    take(h + "dt_bias", g + "ssm_dt.bias");
    const auto& conv = tensor(h + "conv1d.weight"); // [C, 1, K]
    if (conv.shape.size() != 3 || conv.shape[1] != 1)
        throw format_error("tensor '" + conv.name + "' is not [channels, 1, kernel]");
    add_f32(g + "ssm_conv1d.weight", {conv.shape[2], conv.shape[0]}, as_f32(conv, [](float x) { return x; }));
    const auto& a = tensor(h + "A_log");
    // −exp(A_log) rounded once from double (torch.exp in float32 is within an ulp of it)
    add_f32(g + "ssm_a", {1, a.n_elements()}, as_f32(a, [](float x) { return float(-std::exp(double(x))); }));
    const auto& d = tensor(h + "D");
    add_f32(g + "ssm_d", {1, d.n_elements()}, as_f32(d, [](float x) { return x; }));
    if (W.by_name.count(h + "norm.weight")) {
        const auto& nw = tensor(h + "norm.weight");
        if (nw.n_elements() != d_inner)
            throw format_error("tensor '" + nw.name + "' has " + std::to_string(nw.n_elements()) + " values, not d_inner " +
                               std::to_string(d_inner));
        add_f32(g + "ssm_norm.weight", {d_inner / n_group, n_group}, as_f32(nw, [](float x) { return x; }));
    }
}

/// The ssm.* keys of a Mamba-2 mixer.
inline void mamba2_keys(gguf::writer& w, const std::string& a, std::uint64_t d_conv, std::uint64_t d_inner,
                        std::uint64_t d_state, std::uint64_t n_head, std::uint64_t n_group) {
    if (d_inner % n_head != 0 || n_head % n_group != 0)
        throw format_error("config.json: " + std::to_string(n_head) + " Mamba-2 heads and " + std::to_string(n_group) +
                           " groups for an inner size of " + std::to_string(d_inner) +
                           " (heads must divide it, groups the heads)");
    w.set(a + "ssm.conv_kernel", std::uint32_t(d_conv));
    w.set(a + "ssm.inner_size", std::uint32_t(d_inner));
    w.set(a + "ssm.state_size", std::uint32_t(d_state));
    w.set(a + "ssm.time_step_rank", std::uint32_t(n_head));
    w.set(a + "ssm.group_count", std::uint32_t(n_group));
}

/// Mamba2ForCausalLM (conversion/mamba.py Mamba2Model).
template <class Take, class AddF32>
void mamba2_gguf(gguf::writer& w, const config& c, const weights& W, std::set<std::string>& used, const std::string& cls,
                 Take&& take, AddF32&& add_f32) {
    const std::string a = "mamba2.";
    require_unclamped_dt(c, cls);
    const std::uint64_t n_embd = c.dim(c.first_of({"hidden_size", "d_model"})),
                        n_layer = c.dim(c.first_of({"num_hidden_layers", "n_layer"}), 1u << 16),
                        expand = c.dim_or("expand", 2),
                        d_inner = c.dim_or(c.first_of({"intermediate_size", "d_inner"}), expand * n_embd),
                        head_dim = c.dim_or("head_dim", 64), d_conv = c.dim_or(c.first_of({"conv_kernel", "d_conv"}), 4),
                        d_state = c.dim_or(c.first_of({"state_size", "d_state"}), 128), n_group = c.dim_or("n_groups", 1);
    if (d_inner % head_dim != 0)
        throw format_error("config.json: inner size " + std::to_string(d_inner) + " is not a multiple of head_dim " +
                           std::to_string(head_dim));
    w.set("general.architecture", std::string("mamba2"));
    w.set(a + "context_length", std::uint32_t(1) << 20); // the converter's: no positions
    w.set(a + "embedding_length", std::uint32_t(n_embd));
    w.set(a + "feed_forward_length", std::uint32_t(0));
    w.set(a + "attention.head_count", std::uint32_t(0));
    w.set(a + "block_count", std::uint32_t(n_layer));
    mamba2_keys(w, a, d_conv, d_inner, d_state, d_inner / head_dim, n_group);
    w.set(a + "attention.layer_norm_rms_epsilon", float(c.num_or(c.first_of({"layer_norm_epsilon", "rms_norm_eps"}), 1e-5)));
    take("backbone.embeddings.weight", "token_embd.weight");
    take("backbone.norm_f.weight", "output_norm.weight");
    if (!c.flag_or("tie_word_embeddings", true)) take("lm_head.weight", "output.weight");
    else if (W.by_name.count("lm_head.weight")) used.insert("lm_head.weight"); // tied: the embedding, once
    for (std::uint64_t l = 0; l < n_layer; ++l) {
        const std::string h = "backbone.layers." + std::to_string(l) + ".", g = "blk." + std::to_string(l) + ".";
        take(h + "norm.weight", g + "attn_norm.weight");
        mamba2_mixer(W, used, h + "mixer.", g, d_inner, n_group, take, add_f32);
    }
}

/// GraniteMoeHybridForCausalLM, dense (conversion/granite.py GraniteHybridModel).
template <class Take, class TakeRows, class Permuted, class AddF32>
void granite_hybrid_gguf(gguf::writer& w, const config& c, const weights& W, std::set<std::string>& used,
                         const std::string& cls, Take&& take, TakeRows&& take_rows, Permuted&& permuted,
                         AddF32&& add_f32) {
    const std::string a = "granitehybrid.";
    require_unclamped_dt(c, cls);
    auto nonzero = [&](const char* k) { return c.has(k) && c.raw()[k] != 0; };
    if (nonzero("num_local_experts") || nonzero("num_experts_per_tok"))
        throw format_error("config.json num_local_experts > 0: " + cls + " with experts is not converted by this library");
    // transformers: RoPE iff position_embedding_type is "rope" (None and the Hub's "nope": none)
    const auto& pe = c.has("position_embedding_type") ? c.raw()["position_embedding_type"] : nlohmann::json();
    const bool rotary = pe == "rope";
    if (!rotary && !pe.is_null() && pe != "nope")
        throw format_error("config.json position_embedding_type = " + pe.dump() + " is not implemented for " + cls +
                           " (\"rope\" or none)");
    const auto rope = c.rope();
    // GraniteMoeHybridRotaryEmbedding's default RoPE spans the whole head (no partial factor)
    if (rotary && rope.contains("rope_type") && rope["rope_type"] != "default")
        throw format_error("config.json rope_parameters.rope_type = " + rope["rope_type"].dump() + " is not implemented for " +
                           cls + " (the default RoPE only)");
    for (const char* k : {"mamba_proj_bias", "attention_bias"})
        if (c.flag_or(k, false)) throw format_error("config.json " + std::string(k) + " = true is not implemented for " + cls);
    const std::uint64_t n_embd = c.dim("hidden_size"), n_layer = c.dim("num_hidden_layers", 1u << 16),
                        n_head = c.dim("num_attention_heads"), n_head_kv = c.dim_or("num_key_value_heads", n_head),
                        n_ff = c.dim("shared_intermediate_size"), d_inner = c.dim("mamba_expand") * n_embd,
                        n_group = c.dim("mamba_n_groups"), n_ssm_head = c.dim("mamba_n_heads");
    if (n_embd % n_head != 0 || n_head % n_head_kv != 0)
        throw format_error("config.json: hidden_size, num_attention_heads and num_key_value_heads do not divide");
    if (c.has("mamba_d_head") && c.dim("mamba_d_head") * n_ssm_head != d_inner)
        throw format_error("config.json mamba_d_head x mamba_n_heads is not mamba_expand x hidden_size");
    // which layers attend: layer_types (the Hub's names or transformers 5's)
    if (!c.has("layer_types") || !c.raw()["layer_types"].is_array() || c.raw()["layer_types"].size() != n_layer)
        throw format_error("config.json layer_types must list the " + std::to_string(n_layer) + " layers' kinds");
    std::vector<bool> attends;
    for (const auto& t : c.raw()["layer_types"]) {
        const std::string s = t.is_string() ? t.get<std::string>() : "";
        if (s == "attention" || s == "full_attention") attends.push_back(true);
        else if (s == "mamba" || s == "linear_attention") attends.push_back(false);
        else throw format_error("config.json layer_types entry " + t.dump() + " is not mamba/attention "
                                "(linear_attention/full_attention)");
    }
    std::vector<std::uint32_t> kv(n_layer);
    for (std::uint64_t l = 0; l < n_layer; ++l) kv[l] = attends[l] ? std::uint32_t(n_head_kv) : 0;
    const std::uint64_t hd = n_embd / n_head;
    w.set("general.architecture", std::string("granitehybrid"));
    // the converter's 2^20 for NoPE, max_position_embeddings (LlamaModel's) with RoPE
    w.set(a + "context_length", rotary ? std::uint32_t(c.dim("max_position_embeddings", std::uint64_t(1) << 31))
                                       : std::uint32_t(1) << 20);
    w.set(a + "embedding_length", std::uint32_t(n_embd));
    w.set(a + "block_count", std::uint32_t(n_layer));
    w.set(a + "feed_forward_length", std::uint32_t(n_ff));
    w.set(a + "attention.head_count", std::uint32_t(n_head));
    w.set(a + "attention.head_count_kv", kv);
    w.set(a + "attention.layer_norm_rms_epsilon", float(c.num_or("rms_norm_eps", 1e-6)));
    w.set(a + "rope.dimension_count", std::uint32_t(hd));
    w.set(a + "rope.freq_base", float(rope.contains("rope_theta") ? c.number(rope["rope_theta"], "rope_theta") : 10000.0));
    w.set(a + "rope.scaling.finetuned", rotary);
    w.set(a + "vocab_size", std::uint32_t(c.dim("vocab_size", std::uint64_t(1) << 31)));
    w.set(a + "expert_count", std::uint32_t(0));
    w.set(a + "expert_used_count", std::uint32_t(0));
    w.set(a + "expert_shared_feed_forward_length", std::uint32_t(n_ff));
    w.set(a + "attention.scale", float(c.num_or("attention_multiplier", 1.0 / std::sqrt(double(hd)))));
    w.set(a + "embedding_scale", float(c.num_or("embedding_multiplier", 1.0)));
    w.set(a + "residual_scale", float(c.num_or("residual_multiplier", 1.0)));
    w.set(a + "logit_scale", float(c.num_or("logits_scaling", 1.0)));
    mamba2_keys(w, a, c.dim("mamba_d_conv"), d_inner, c.dim("mamba_d_state"), n_ssm_head, n_group);
    take("model.embed_tokens.weight", "token_embd.weight");
    take("model.norm.weight", "output_norm.weight");
    if (!c.flag_or("tie_word_embeddings", false)) take("lm_head.weight", "output.weight");
    else if (W.by_name.count("lm_head.weight")) used.insert("lm_head.weight");
    for (std::uint64_t l = 0; l < n_layer; ++l) {
        const std::string h = "model.layers." + std::to_string(l) + ".", g = "blk." + std::to_string(l) + ".";
        take(h + "input_layernorm.weight", g + "attn_norm.weight");
        take(h + "post_attention_layernorm.weight", g + "ffn_norm.weight");
        take_rows(h + "shared_mlp.input_linear.weight", g + "ffn_gate.weight", 0, n_ff);
        take_rows(h + "shared_mlp.input_linear.weight", g + "ffn_up.weight", n_ff, n_ff);
        take(h + "shared_mlp.output_linear.weight", g + "ffn_down.weight");
        if (attends[l]) {
            permuted(h + "self_attn.q_proj.weight", g + "attn_q.weight", n_head);
            permuted(h + "self_attn.k_proj.weight", g + "attn_k.weight", n_head_kv);
            take(h + "self_attn.v_proj.weight", g + "attn_v.weight");
            take(h + "self_attn.o_proj.weight", g + "attn_output.weight");
        } else {
            mamba2_mixer(W, used, h + "mamba.", g, d_inner, n_group, take, add_f32);
        }
    }
}

} // namespace archetype::hf::detail

namespace archetype::hf::detail {

/// Writes the GGUF of a state-space family's checkpoint (families() layouts mamba2 and
/// granite_hybrid) to `out`; every checkpoint tensor must be converted or named as ignored.
inline void write_ssm_gguf(const family& fam, const config& c, const weights& W, const std::string& cls,
                           const std::string& name, const std::string& out) {
    gguf::writer w;
    w.set("general.name", name);
    std::set<std::string> used;
    std::vector<std::vector<std::byte>> owned; // converted bytes (A, conv, norms, permuted and split rows)
    auto find = [&](const std::string& hname) -> const safetensors::tensor_info* {
        const auto it = W.by_name.find(hname);
        if (it == W.by_name.end()) return nullptr;
        used.insert(hname);
        return it->second;
    };
    auto add_f32 = [&](const std::string& gname, std::vector<std::uint64_t> ne, const std::vector<float>& v) {
        auto& b = owned.emplace_back(v.size() * 4);
        std::memcpy(b.data(), v.data(), b.size());
        w.add_tensor(gname, ggml_type::F32, std::move(ne), std::span<const std::byte>(b.data(), b.size()));
    };
    // as is (vectors become F32, as the converter writes them)
    auto take = [&](const std::string& hname, const std::string& gname) {
        const auto* t = find(hname);
        if (!t) return false;
        if (t->shape.size() == 1 && t->type != safetensors::dtype::F32) {
            std::vector<float> v(t->n_elements());
            for (std::size_t i = 0; i < v.size(); ++i) v[i] = element(*t, i);
            add_f32(gname, {v.size()}, v);
        } else {
            w.add_tensor(gname, gguf_type(*t), std::vector<std::uint64_t>(t->shape.rbegin(), t->shape.rend()),
                         std::span<const std::byte>(t->data, t->n_bytes()));
        }
        return true;
    };
    // rows [first, first + n) of a matrix, in a new order (dst row r from src row order(r))
    auto rows_of = [&](const safetensors::tensor_info& t, const std::string& gname, std::uint64_t n, auto&& order) {
        if (t.shape.size() != 2) throw format_error("tensor '" + t.name + "' is not a matrix");
        const std::size_t row_bytes = t.n_bytes() / t.shape[0];
        auto& b = owned.emplace_back(n * row_bytes);
        for (std::uint64_t r = 0; r < n; ++r) std::memcpy(b.data() + r * row_bytes, t.data + order(r) * row_bytes, row_bytes);
        w.add_tensor(gname, gguf_type(t), {t.shape[1], n}, std::span<const std::byte>(b.data(), b.size()));
    };
    auto take_rows = [&](const std::string& hname, const std::string& gname, std::uint64_t first, std::uint64_t n) {
        const auto* t = find(hname);
        if (!t) throw format_error("checkpoint has no '" + hname + "'");
        if (t->shape.size() != 2 || first + n > t->shape[0])
            throw format_error("tensor '" + hname + "' has no rows " + std::to_string(first) + ".." +
                               std::to_string(first + n - 1));
        rows_of(*t, gname, n, [&](std::uint64_t r) { return first + r; });
    };
    // LlamaModel.permute: rows (h, half, i) -> (h, i, half)
    auto permuted = [&](const std::string& hname, const std::string& gname, std::uint64_t heads) {
        const auto* t = find(hname);
        if (!t) throw format_error("checkpoint has no '" + hname + "'");
        const std::uint64_t rows = t->shape.empty() ? 0 : t->shape[0];
        if (rows == 0 || rows % (2 * heads) != 0)
            throw format_error("tensor '" + hname + "' has " + std::to_string(rows) + " rows, not 2 x " +
                               std::to_string(heads) + " heads");
        const std::uint64_t hdh = rows / heads / 2;
        rows_of(*t, gname, rows, [&](std::uint64_t dst) {
            const std::uint64_t h = dst / (2 * hdh), i = (dst % (2 * hdh)) / 2, half = dst % 2;
            return h * 2 * hdh + half * hdh + i;
        });
    };
    if (fam.tensors == family::layout::mamba2) mamba2_gguf(w, c, W, used, cls, take, add_f32);
    else granite_hybrid_gguf(w, c, W, used, cls, take, take_rows, permuted, add_f32);
    for (const auto& [tname, t] : W.by_name)
        if (!used.count(tname))
            throw format_error("tensor '" + tname + "' of the checkpoint is not one a " + cls +
                               " is converted with: refusing rather than dropping it");
    w.write(out);
}

} // namespace archetype::hf::detail
