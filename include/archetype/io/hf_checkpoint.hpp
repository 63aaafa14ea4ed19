#pragma once
// Hugging Face decoder checkpoints (a directory with config.json and model.safetensors,
// or a sharded model.safetensors.index.json) as the GGUF llama.cpp's convert_hf_to_gguf.py
// would write for them: the same architecture name, metadata keys, tensor names and
// layouts, so that every registered preset loads a checkpoint exactly as it loads the
// converted file (tests/zoo/test_zoo_hf.cpp checks the logits against transformers).
//
//   auto f = archetype::hf::open_as_gguf("Qwen2.5-0.5B/");     // a gguf::file
//   auto model = archetype::load_model<archetype::presets::qwen2_architecture>(std::move(f));
//
// open_as_gguf writes the GGUF to a temporary file, maps it and unlinks it: the weights
// are copied once (into the page cache, not the heap); F32, F16 and BF16 matrices keep
// their type, vectors (norms, biases) become F32 as the converter writes them. What the converter changes, this changes the same way (documented per
// family in `families()` below): Llama-style q/k rows reordered for adjacent-pair RoPE,
// Gemma's norm weights stored as 1 + w, Llama 3's rope_freqs computed from rope_scaling,
// Granite's multipliers and Gemma 2's soft caps and window as keys.
//
// Everything read here is hostile input: an unknown `architectures` entry, a missing or
// misshaped key, a tensor no family rule names (never dropped silently), a shard outside
// the directory, a tensor in two shards, a dtype other than F32/F16/BF16, a RoPE scaling
// the library does not implement: each a format_error naming it.
#include <atomic>
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "archetype/core/dtype.hpp"
#include "archetype/core/error.hpp"
#include "archetype/core/half.hpp"
#include "archetype/io/gguf.hpp"
#include "archetype/io/gguf_writer.hpp"
#include "archetype/io/safetensors.hpp"

namespace archetype::hf {

/// How one `architectures` class of config.json becomes GGUF (llama.cpp's converter class).
struct family {
    std::string_view hf_class;  // config.json architectures[0]
    std::string_view gguf_arch; // general.architecture
    bool permute_qk = false;    // LlamaModel.permute: q/k rows to adjacent-pair RoPE order
    bool norm_plus_one = false; // Gemma: RMSNorm weights stored as 1 + w
    bool post_norms = false;    // post_attention_layernorm is a norm after attention (Gemma 2, OLMo 2)
    bool layer_norm = false;    // LayerNorm with layer_norm_eps (StableLM), else RMSNorm with rms_norm_eps
    bool window = false;        // sliding_window written as {arch}.attention.sliding_window
};

/// The families a checkpoint directory may be, with the converter's rules.
inline const std::vector<family>& families() {
    static const std::vector<family> f = {
        {.hf_class = "LlamaForCausalLM", .gguf_arch = "llama", .permute_qk = true},
        {.hf_class = "MistralForCausalLM", .gguf_arch = "llama", .permute_qk = true, .window = true},
        {.hf_class = "Qwen2ForCausalLM", .gguf_arch = "qwen2"},
        {.hf_class = "Qwen3ForCausalLM", .gguf_arch = "qwen3"},
        {.hf_class = "GraniteForCausalLM", .gguf_arch = "granite", .permute_qk = true},
        {.hf_class = "SmolLM3ForCausalLM", .gguf_arch = "smollm3", .permute_qk = true},
        {.hf_class = "Olmo2ForCausalLM", .gguf_arch = "olmo2", .post_norms = true},
        {.hf_class = "Gemma2ForCausalLM", .gguf_arch = "gemma2", .norm_plus_one = true, .post_norms = true, .window = true},
        {.hf_class = "StableLmForCausalLM", .gguf_arch = "stablelm", .layer_norm = true},
    };
    return f;
}

/// A directory holds a checkpoint when it has config.json and safetensors weights.
inline bool is_checkpoint(const std::string& dir) {
    namespace fs = std::filesystem;
    std::error_code ec;
    return fs::is_directory(dir, ec) && fs::is_regular_file(fs::path(dir) / "config.json", ec) &&
           (fs::is_regular_file(fs::path(dir) / "model.safetensors", ec) ||
            fs::is_regular_file(fs::path(dir) / "model.safetensors.index.json", ec));
}

namespace detail {

inline nlohmann::json read_json(const std::filesystem::path& p, std::size_t limit = std::size_t(64) << 20) {
    std::ifstream in(p, std::ios::binary | std::ios::ate);
    if (!in) throw format_error("cannot open '" + p.string() + "'");
    const auto n = static_cast<std::size_t>(in.tellg());
    if (n > limit) throw format_error("'" + p.string() + "' is " + std::to_string(n) + " bytes, more than " + std::to_string(limit));
    std::string text(n, '\0');
    in.seekg(0);
    in.read(text.data(), static_cast<std::streamsize>(n));
    auto j = nlohmann::json::parse(text, nullptr, false);
    if (j.is_discarded() || !j.is_object()) throw format_error("'" + p.string() + "' is not a JSON object");
    return j;
}

/// config.json with typed, checked access (every failure names the key).
class config {
public:
    explicit config(nlohmann::json j) : j_(std::move(j)) {}
    bool has(const char* k) const { return j_.contains(k) && !j_[k].is_null(); }
    std::uint64_t dim(const char* k, std::uint64_t limit = std::uint64_t(1) << 24) const {
        if (!has(k)) throw format_error("config.json has no '" + std::string(k) + "'");
        const auto& v = j_[k];
        if (!v.is_number_integer() || v.get<std::int64_t>() <= 0 || v.get<std::uint64_t>() > limit)
            throw format_error("config.json '" + std::string(k) + "' = " + v.dump() + " is not an integer in 1.." +
                               std::to_string(limit));
        return v.get<std::uint64_t>();
    }
    std::uint64_t dim_or(const char* k, std::uint64_t d) const { return has(k) ? dim(k) : d; }
    double number(const nlohmann::json& v, const std::string& k) const {
        if (!v.is_number() || !std::isfinite(v.get<double>()))
            throw format_error("config.json '" + k + "' = " + v.dump() + " is not a finite number");
        return v.get<double>();
    }
    double num(const char* k) const {
        if (!has(k)) throw format_error("config.json has no '" + std::string(k) + "'");
        return number(j_[k], k);
    }
    double num_or(const char* k, double d) const { return has(k) ? num(k) : d; }
    bool flag_or(const char* k, bool d) const {
        if (!has(k)) return d;
        if (!j_[k].is_boolean()) throw format_error("config.json '" + std::string(k) + "' = " + j_[k].dump() + " is not a boolean");
        return j_[k].get<bool>();
    }
    /// RoPE parameters: transformers 5's rope_parameters, or the older rope_theta + rope_scaling.
    nlohmann::json rope() const {
        nlohmann::json r = nlohmann::json::object();
        if (has("rope_parameters")) {
            if (!j_["rope_parameters"].is_object()) throw format_error("config.json 'rope_parameters' is not an object");
            r = j_["rope_parameters"];
        } else if (has("rope_scaling")) {
            if (!j_["rope_scaling"].is_object()) throw format_error("config.json 'rope_scaling' is not an object");
            r = j_["rope_scaling"];
        }
        if (!r.contains("rope_theta") && has("rope_theta")) r["rope_theta"] = j_["rope_theta"];
        return r;
    }
    const nlohmann::json& raw() const { return j_; }

private:
    nlohmann::json j_;
};

/// The tensors of the checkpoint: one file or the shards an index names.
struct weights {
    std::vector<std::unique_ptr<safetensors::file>> files;
    std::map<std::string, const safetensors::tensor_info*> by_name;

    explicit weights(const std::filesystem::path& dir) {
        const auto single = dir / "model.safetensors";
        std::vector<std::string> shards;
        if (std::filesystem::exists(single)) {
            shards.push_back("model.safetensors");
        } else {
            const auto idx = read_json(dir / "model.safetensors.index.json");
            if (!idx.contains("weight_map") || !idx["weight_map"].is_object())
                throw format_error("model.safetensors.index.json has no 'weight_map' object");
            std::set<std::string> seen;
            for (const auto& [tensor, shard] : idx["weight_map"].items()) {
                if (!shard.is_string()) throw format_error("weight_map['" + tensor + "'] is not a file name");
                const auto s = shard.get<std::string>();
                // a shard is a file of this directory, never a path out of it
                if (s.empty() || s.find('/') != std::string::npos || s.find('\\') != std::string::npos || s == "." ||
                    s == "..")
                    throw format_error("weight_map['" + tensor + "'] = '" + s + "' is not a file name in the directory");
                if (seen.insert(s).second) shards.push_back(s);
            }
        }
        for (const auto& s : shards) {
            files.push_back(std::make_unique<safetensors::file>((dir / s).string()));
            for (const auto& t : files.back()->tensors())
                if (!by_name.emplace(t.name, &t).second)
                    throw format_error("tensor '" + t.name + "' is in two shards (the second: " + s + ")");
        }
    }
};

/// GGUF type of a safetensors dtype (the weights keep their type).
inline ggml_type gguf_type(const safetensors::tensor_info& t) {
    switch (t.type) {
    case safetensors::dtype::F32: return ggml_type::F32;
    case safetensors::dtype::F16: return ggml_type::F16;
    case safetensors::dtype::BF16: return ggml_type::BF16;
    default:
        throw format_error("tensor '" + t.name + "' has dtype " + std::string(safetensors::dtype_name(t.type)) +
                           ": F32, F16 or BF16 expected");
    }
}

inline float element(const safetensors::tensor_info& t, std::size_t i) {
    std::uint16_t h;
    switch (t.type) {
    case safetensors::dtype::F32: {
        float f;
        std::memcpy(&f, t.data + 4 * i, 4);
        return f;
    }
    case safetensors::dtype::F16: std::memcpy(&h, t.data + 2 * i, 2); return fp16_to_fp32(h);
    case safetensors::dtype::BF16: std::memcpy(&h, t.data + 2 * i, 2); return bf16_to_fp32(h);
    default: throw format_error("tensor '" + t.name + "': unsupported dtype");
    }
}

/// Llama 3's per-pair RoPE divisors (the converter's LlamaModel.generate_extra_tensors).
inline std::vector<float> llama3_rope_freqs(const nlohmann::json& rope, double base, std::size_t n_rot) {
    auto get = [&](const char* k, double d) {
        if (!rope.contains(k)) return d;
        if (!rope[k].is_number()) throw format_error("config.json rope '" + std::string(k) + "' is not a number");
        return rope[k].get<double>();
    };
    const double factor = get("factor", 8.0), low = get("low_freq_factor", 1.0), high = get("high_freq_factor", 4.0),
                 old_ctx = get("original_max_position_embeddings", 8192.0);
    if (!(factor > 0) || !(low > 0) || !(high > low) || !(old_ctx > 0))
        throw format_error("config.json llama3 rope scaling: factor, low_freq_factor < high_freq_factor and "
                           "original_max_position_embeddings must be positive");
    const double low_wavelen = old_ctx / low, high_wavelen = old_ctx / high;
    std::vector<float> out;
    for (std::size_t i = 0; i < n_rot; i += 2) {
        const double freq = 1.0 / std::pow(base, double(i) / double(n_rot));
        const double wavelen = 2 * M_PI / freq;
        if (wavelen < high_wavelen) out.push_back(1.f);
        else if (wavelen > low_wavelen) out.push_back(float(factor));
        else {
            const double smooth = (old_ctx / wavelen - low) / (high - low);
            out.push_back(float(1.0 / ((1 - smooth) / factor + smooth)));
        }
    }
    return out;
}

} // namespace detail

/// Writes the GGUF of checkpoint directory `dir` to `out` (see the top of this file).
inline void write_gguf(const std::string& dir_s, const std::string& out) {
    namespace fs = std::filesystem;
    const fs::path dir(dir_s);
    const detail::config c(detail::read_json(dir / "config.json"));
    const auto& raw = c.raw();
    if (!raw.contains("architectures") || !raw["architectures"].is_array() || raw["architectures"].size() != 1 ||
        !raw["architectures"][0].is_string())
        throw format_error("config.json 'architectures' must be a list of one class name");
    const auto cls = raw["architectures"][0].get<std::string>();
    const family* fam = nullptr;
    std::string known;
    for (const auto& f : families()) {
        known += (known.empty() ? "" : ", ") + std::string(f.hf_class);
        if (f.hf_class == cls) fam = &f;
    }
    if (!fam) throw format_error("config.json architecture '" + cls + "' is not one this library converts (known: " + known + ")");
    const std::string a = std::string(fam->gguf_arch) + ".";
    const detail::weights W(dir);

    // hyperparameters
    const std::uint64_t n_layer = c.dim("num_hidden_layers", 1u << 16), n_embd = c.dim("hidden_size"),
                        n_head = c.dim("num_attention_heads"), n_head_kv = c.dim_or("num_key_value_heads", n_head),
                        n_ff = c.dim("intermediate_size"), n_ctx = c.dim("max_position_embeddings", std::uint64_t(1) << 31);
    if (n_head % n_head_kv != 0)
        throw format_error("config.json num_attention_heads " + std::to_string(n_head) +
                           " is not a multiple of num_key_value_heads " + std::to_string(n_head_kv));
    const bool explicit_hd = c.has("head_dim") && fam->gguf_arch != "granite"; // the granite converter drops head_dim
    const std::uint64_t hd = explicit_hd ? c.dim("head_dim") : n_embd / n_head;
    if (!explicit_hd && n_embd % n_head != 0)
        throw format_error("config.json hidden_size " + std::to_string(n_embd) + " is not a multiple of num_attention_heads");
    gguf::writer w;
    w.set("general.architecture", std::string(fam->gguf_arch));
    w.set("general.name", dir.filename().string());
    w.set(a + "context_length", std::uint32_t(n_ctx));
    w.set(a + "embedding_length", std::uint32_t(n_embd));
    w.set(a + "block_count", std::uint32_t(n_layer));
    w.set(a + "feed_forward_length", std::uint32_t(n_ff));
    w.set(a + "attention.head_count", std::uint32_t(n_head));
    w.set(a + "attention.head_count_kv", std::uint32_t(n_head_kv));
    if (explicit_hd) {
        w.set(a + "attention.key_length", std::uint32_t(hd));
        w.set(a + "attention.value_length", std::uint32_t(hd));
    }
    if (fam->layer_norm) w.set(a + "attention.layer_norm_epsilon", float(c.num_or("layer_norm_eps", 1e-5)));
    else w.set(a + "attention.layer_norm_rms_epsilon", float(c.num_or("rms_norm_eps", 1e-6)));
    const auto rope = c.rope();
    const double base = rope.contains("rope_theta") ? c.number(rope["rope_theta"], "rope_theta") : 10000.0;
    w.set(a + "rope.freq_base", float(base));
    std::uint64_t n_rot = hd;
    if (c.has("partial_rotary_factor") || rope.contains("partial_rotary_factor")) {
        const double f = c.has("partial_rotary_factor") ? c.num("partial_rotary_factor")
                                                        : c.number(rope["partial_rotary_factor"], "partial_rotary_factor");
        if (!(f > 0 && f <= 1)) throw format_error("config.json partial_rotary_factor must be in (0, 1]");
        n_rot = std::uint64_t(f * double(hd));
        if (n_rot == 0 || n_rot % 2) throw format_error("config.json partial_rotary_factor gives an odd or empty rotary width");
    }
    w.set(a + "rope.dimension_count", std::uint32_t(n_rot));
    std::vector<float> rope_freqs;
    const std::string rope_type = rope.contains("rope_type") && rope["rope_type"].is_string() ? rope["rope_type"].get<std::string>()
                                : rope.contains("type") && rope["type"].is_string()      ? rope["type"].get<std::string>()
                                                                                         : "default";
    if (rope_type == "llama3" && fam->gguf_arch == "llama") rope_freqs = detail::llama3_rope_freqs(rope, base, n_rot);
    else if (rope_type != "default")
        throw format_error("config.json rope type '" + rope_type + "' is not implemented for " + cls);
    if (fam->window && c.has("sliding_window")) w.set(a + "attention.sliding_window", std::uint32_t(c.dim("sliding_window")));
    if (c.has("layer_types")) {
        // transformers 5 saves each layer's kind: windowed layers become the GGUF's per-layer pattern
        const auto& lt = raw["layer_types"];
        if (!lt.is_array() || lt.size() != n_layer)
            throw format_error("config.json 'layer_types' must list " + std::to_string(n_layer) + " layers");
        std::vector<bool> windowed;
        for (const auto& t : lt) {
            const auto s = t.is_string() ? t.get<std::string>() : std::string();
            if (s != "sliding_attention" && s != "full_attention")
                throw format_error("config.json 'layer_types' entry " + t.dump() + " is not sliding_attention or full_attention");
            windowed.push_back(s == "sliding_attention");
        }
        const bool any = std::find(windowed.begin(), windowed.end(), true) != windowed.end();
        if (any && !(fam->window && c.has("sliding_window")))
            throw format_error("config.json 'layer_types' has windowed layers, which " + cls + " is not converted with");
        if (any) w.set(a + "attention.sliding_window_pattern", windowed);
    }
    if (fam->gguf_arch == "gemma2") {
        if (c.has("attn_logit_softcapping")) w.set(a + "attn_logit_softcapping", float(c.num("attn_logit_softcapping")));
        if (c.has("final_logit_softcapping")) w.set(a + "final_logit_softcapping", float(c.num("final_logit_softcapping")));
        // transformers scales by query_pre_attn_scalar^-0.5 (the GGUF leaves it to llama.cpp's rule)
        w.set(a + "attention.scale", float(1.0 / std::sqrt(c.num_or("query_pre_attn_scalar", double(hd)))));
    }
    if (fam->gguf_arch == "granite") {
        if (c.has("attention_multiplier")) w.set(a + "attention.scale", float(c.num("attention_multiplier")));
        if (c.has("embedding_multiplier")) w.set(a + "embedding_scale", float(c.num("embedding_multiplier")));
        if (c.has("residual_multiplier")) w.set(a + "residual_scale", float(c.num("residual_multiplier")));
        if (c.has("logits_scaling")) w.set(a + "logit_scale", float(c.num("logits_scaling")));
    }
    if (fam->gguf_arch == "smollm3" && c.dim_or("no_rope_layer_interval", 4) != 4)
        throw format_error("config.json no_rope_layer_interval must be 4 (the library's and llama.cpp's SmolLM3 rule)");
    if ((fam->gguf_arch == "qwen2" || fam->gguf_arch == "qwen3") && c.flag_or("use_sliding_window", false))
        throw format_error("config.json use_sliding_window = true is not implemented for " + cls);

    // tensors
    std::vector<std::vector<std::byte>> owned; // what had to change (permuted rows, 1 + w, rope_freqs)
    std::set<std::string> used;
    auto add_as_is = [&](const std::string& gname, const safetensors::tensor_info& t) {
        std::vector<std::uint64_t> ne(t.shape.rbegin(), t.shape.rend());
        w.add_tensor(gname, detail::gguf_type(t), ne, std::span<const std::byte>(t.data, t.n_bytes()));
    };
    auto add_f32 = [&](const std::string& gname, std::vector<std::uint64_t> ne, const std::vector<float>& v) {
        auto& b = owned.emplace_back(v.size() * 4);
        std::memcpy(b.data(), v.data(), b.size());
        w.add_tensor(gname, ggml_type::F32, std::move(ne), std::span<const std::byte>(b.data(), b.size()));
    };
    auto permuted = [&](const std::string& gname, const safetensors::tensor_info& t, std::uint64_t heads) {
        // rows (h, half, i) -> (h, i, half): LlamaModel.permute
        const std::uint64_t rows = t.shape.empty() ? 0 : t.shape[0];
        const std::size_t row_bytes = rows ? t.n_bytes() / rows : 0;
        if (rows == 0 || rows % (2 * heads) != 0)
            throw format_error("tensor '" + t.name + "' has " + std::to_string(rows) + " rows, not 2 x " + std::to_string(heads) + " heads");
        const std::uint64_t hdh = rows / heads / 2;
        auto& b = owned.emplace_back(t.n_bytes());
        for (std::uint64_t h = 0; h < heads; ++h)
            for (std::uint64_t i = 0; i < hdh; ++i)
                for (std::uint64_t half = 0; half < 2; ++half) {
                    const std::uint64_t dst = h * 2 * hdh + i * 2 + half, src = h * 2 * hdh + half * hdh + i;
                    std::memcpy(b.data() + dst * row_bytes, t.data + src * row_bytes, row_bytes);
                }
        std::vector<std::uint64_t> ne(t.shape.rbegin(), t.shape.rend());
        w.add_tensor(gname, detail::gguf_type(t), ne, std::span<const std::byte>(b.data(), b.size()));
    };
    auto plus_one = [&](const std::string& gname, const safetensors::tensor_info& t) {
        std::vector<float> v(t.n_elements());
        for (std::size_t i = 0; i < v.size(); ++i) v[i] = detail::element(t, i) + 1.f;
        add_f32(gname, std::vector<std::uint64_t>(t.shape.rbegin(), t.shape.rend()), v);
    };
    auto take = [&](const std::string& hname, const std::string& gname) {
        const auto it = W.by_name.find(hname);
        if (it == W.by_name.end()) return false;
        used.insert(hname);
        const auto& t = *it->second;
        const bool norm = hname.size() > 11 && hname.rfind("norm.weight") == hname.size() - 11;
        if (fam->norm_plus_one && norm) plus_one(gname, t);
        else if (t.shape.size() == 1 && t.type != safetensors::dtype::F32) {
            // vectors (norms, biases) become F32, as the converter writes them
            std::vector<float> v(t.n_elements());
            for (std::size_t i = 0; i < v.size(); ++i) v[i] = detail::element(t, i);
            add_f32(gname, {v.size()}, v);
        }
        else if (fam->permute_qk && gname.find(".attn_q.") != std::string::npos) permuted(gname, t, n_head);
        else if (fam->permute_qk && gname.find(".attn_k.") != std::string::npos) permuted(gname, t, n_head_kv);
        else add_as_is(gname, t);
        return true;
    };
    take("model.embed_tokens.weight", "token_embd.weight");
    take("model.norm.weight", "output_norm.weight");
    take("model.norm.bias", "output_norm.bias");
    if (!c.flag_or("tie_word_embeddings", false) || !W.by_name.count("model.embed_tokens.weight"))
        take("lm_head.weight", "output.weight");
    else if (W.by_name.count("lm_head.weight"))
        used.insert("lm_head.weight"); // tied: the converter writes the embedding once
    const char* suffixes[] = {"weight", "bias"};
    for (std::uint64_t l = 0; l < n_layer; ++l) {
        const std::string h = "model.layers." + std::to_string(l) + ".", g = "blk." + std::to_string(l) + ".";
        const std::pair<const char*, const char*> names[] = {
            {"input_layernorm", "attn_norm"},
            {"post_attention_layernorm", fam->post_norms ? "post_attention_norm" : "ffn_norm"},
            {"pre_feedforward_layernorm", "ffn_norm"},
            {"post_feedforward_layernorm", "post_ffw_norm"},
            {"self_attn.q_proj", "attn_q"}, {"self_attn.k_proj", "attn_k"}, {"self_attn.v_proj", "attn_v"},
            {"self_attn.o_proj", "attn_output"}, {"self_attn.q_norm", "attn_q_norm"}, {"self_attn.k_norm", "attn_k_norm"},
            {"mlp.gate_proj", "ffn_gate"}, {"mlp.up_proj", "ffn_up"}, {"mlp.down_proj", "ffn_down"},
        };
        for (const auto& [hn, gn] : names)
            for (const char* s : suffixes) take(h + hn + "." + s, g + gn + "." + s);
        used.insert(h + "self_attn.rotary_emb.inv_freq"); // a buffer older checkpoints saved; recomputed from the config
    }
    if (!rope_freqs.empty()) add_f32("rope_freqs.weight", {rope_freqs.size()}, rope_freqs);
    for (const auto& [name, t] : W.by_name)
        if (!used.count(name))
            throw format_error("tensor '" + name + "' of the checkpoint is not one a " + cls +
                               " is converted with: refusing rather than dropping it");
    w.write(out);
}

/// The checkpoint as a GGUF file (written to a temporary file, mapped, unlinked).
inline gguf::file open_as_gguf(const std::string& dir) {
    namespace fs = std::filesystem;
    static std::atomic<unsigned> counter{0};
    const auto tmp = fs::temp_directory_path() /
                     ("archetype-hf-" + std::to_string(::getpid()) + "-" + std::to_string(counter++) + ".gguf");
    try {
        write_gguf(dir, tmp.string());
        auto f = gguf::file::open(tmp.string());
        fs::remove(tmp); // the mapping keeps the data
        return f;
    } catch (const format_error& e) {
        std::error_code ec;
        fs::remove(tmp, ec);
        throw format_error("'" + dir + "': " + e.what());
    } catch (...) {
        std::error_code ec;
        fs::remove(tmp, ec);
        throw;
    }
}

} // namespace archetype::hf
