#pragma once
// Hugging Face checkpoints of the decoders and of ModernBERT (a directory with config.json and model.safetensors,
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
// Granite's multipliers and Gemma 2's soft caps and window as keys, experts stacked per
// layer (Qwen3-MoE, Mixtral, Qwen2-MoE with its shared expert, DeepSeek-V2), DeepSeek-V2's
// kv_b_proj split into attn_k_b / attn_v_b for the absorbed multi-head latent attention;
// Mamba-2 and Granite-4.0-H (dense) by their own rules in io/hf_ssm.hpp.
//
// Everything read here is hostile input: an unknown `architectures` entry, a missing or
// misshaped key, a tensor no family rule names (never dropped silently), a shard outside
// the directory, a tensor in two shards, a dtype other than F32/F16/BF16, a RoPE scaling
// the library does not implement: each a format_error naming it.
//
// Quantised checkpoints: a quantization_config is read only when it is AutoAWQ's GEMM
// format (io/hf_awq.hpp) on a dense llama-layout family; each quantised linear becomes an
// AWQ4 tensor (archetype's own block type), the rest as above. Any other quantization_config
// is refused by its quant_method / version / bits.
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
#include "archetype/io/hf_awq.hpp"
#include "archetype/io/safetensors.hpp"

namespace archetype::hf {

/// How one `architectures` class of config.json becomes GGUF (llama.cpp's converter class).
struct family {
    std::string_view hf_class;  // config.json architectures[0]
    std::string_view gguf_arch; // general.architecture
    bool permute_qk = false;    // LlamaModel.permute: q/k rows to adjacent-pair RoPE order
    bool norm_plus_one = false; // Gemma: RMSNorm weights stored as 1 + w
    bool post_norms = false;    // post_attention_layernorm is a norm after attention (Gemma 2, OLMo 2)
    bool layer_norm = false;    // LayerNorm (eps: layer_norm_eps / layer_norm_epsilon / norm_epsilon), else RMSNorm
    bool window = false;        // sliding_window written as {arch}.attention.sliding_window
    bool rope = true;           // rotary positions (GPT-2: learned; BLOOM: ALiBi)
    bool ff_4x = false;         // feed_forward_length = 4 x n_embd (GPT-2's n_inner when set)
    /// Tensor names and layouts: Llama-style `model.layers.N.*`, GPT-2's `transformer.h.N.*`
    /// with Conv1D ([in, out]) weights transposed, or BLOOM's with fused q/k/v rows regrouped.
    /// ModernBERT: an encoder with its own names and keys (detail::modern_bert_gguf).
    /// Mamba-2 and Granite-4.0-H: the state-space families' own rules (io/hf_ssm.hpp).
    enum class layout { llama, gpt2, bloom, modern_bert, mamba2, granite_hybrid } tensors = layout::llama;
    bool tied_by_default = false; // tie_word_embeddings when config.json does not say
    bool drops_head_dim = false;  // the converter ignores head_dim (Granite)
    bool llama3_rope = false;     // rope_scaling type llama3 -> rope_freqs.weight (Llama)
    bool long_rope = false;       // LongRoPE factors, attn_factor, original context; the rotary
                                  // width as int(f * n_embd) / n_head (Phi-3)
    bool moe = false;             // experts stacked per layer, router -> ffn_gate_inp (Qwen3-MoE)
    /// How the experts are saved and routed: Qwen3-MoE's mlp.experts.E.{gate,up,down}_proj with
    /// norm_topk_prob required; Mixtral's block_sparse_moe.experts.E.{w1,w3,w2} (the converter
    /// writes no routing key: llama.cpp renormalises); Qwen2-MoE's with norm_topk_prob refused and
    /// a sigmoid-gated shared expert; DeepSeek-V2's (n_routed_experts, shared experts, dense
    /// first layers, routing keys, multi-head latent attention).
    enum class experts { qwen3, mixtral, qwen2, deepseek2 } moe_kind = experts::qwen3;
    bool soft_caps = false;       // soft caps and query_pre_attn_scalar (Gemma 2)
    bool multipliers = false;     // embedding/residual/attention/logit multipliers (Granite)
    bool parallel_residual_key = false; // writes use_parallel_residual (StableLM)
    bool no_rope_every_4 = false; // no_rope_layer_interval must be 4 (SmolLM3)
    bool refuses_use_sliding_window = false; // Qwen's use_sliding_window is not converted
    bool drops_mlm_head = false;  // the masked-LM head (head.*, decoder.*) is not part of the encoder
    bool logit_scale = false;     // config logit_scale written as {arch}.logit_scale (Cohere 2: it multiplies)
};

/// The families a checkpoint directory may be, with the converter's rules.
inline const std::vector<family>& families() {
    static const std::vector<family> f = {
        {.hf_class = "LlamaForCausalLM", .gguf_arch = "llama", .permute_qk = true, .llama3_rope = true},
        {.hf_class = "MistralForCausalLM", .gguf_arch = "llama", .permute_qk = true, .window = true},
        {.hf_class = "Qwen2ForCausalLM", .gguf_arch = "qwen2", .refuses_use_sliding_window = true},
        {.hf_class = "Qwen3ForCausalLM", .gguf_arch = "qwen3", .refuses_use_sliding_window = true},
        {.hf_class = "GraniteForCausalLM", .gguf_arch = "granite", .permute_qk = true, .drops_head_dim = true,
         .multipliers = true},
        {.hf_class = "SmolLM3ForCausalLM", .gguf_arch = "smollm3", .permute_qk = true, .no_rope_every_4 = true},
        {.hf_class = "Olmo2ForCausalLM", .gguf_arch = "olmo2", .post_norms = true},
        {.hf_class = "Gemma2ForCausalLM", .gguf_arch = "gemma2", .norm_plus_one = true, .post_norms = true, .window = true,
         .soft_caps = true},
        {.hf_class = "StableLmForCausalLM", .gguf_arch = "stablelm", .layer_norm = true, .parallel_residual_key = true},
        {.hf_class = "Starcoder2ForCausalLM", .gguf_arch = "starcoder2", .layer_norm = true, .window = true,
         .tied_by_default = true},
        {.hf_class = "Phi3ForCausalLM", .gguf_arch = "phi3", .window = true, .long_rope = true},
        {.hf_class = "Qwen3MoeForCausalLM", .gguf_arch = "qwen3moe", .moe = true, .refuses_use_sliding_window = true},
        {.hf_class = "GemmaForCausalLM", .gguf_arch = "gemma", .norm_plus_one = true, .tied_by_default = true},
        // GLM-4: sandwich norms under their own names (post_self_attn_layernorm, post_mlp_layernorm)
        {.hf_class = "Glm4ForCausalLM", .gguf_arch = "glm4"},
        {.hf_class = "Cohere2ForCausalLM", .gguf_arch = "cohere2", .layer_norm = true, .window = true,
         .tied_by_default = true, .logit_scale = true},
        {.hf_class = "MixtralForCausalLM", .gguf_arch = "llama", .permute_qk = true, .moe = true,
         .moe_kind = family::experts::mixtral},
        {.hf_class = "Qwen2MoeForCausalLM", .gguf_arch = "qwen2moe", .moe = true, .moe_kind = family::experts::qwen2,
         .refuses_use_sliding_window = true},
        {.hf_class = "DeepseekV2ForCausalLM", .gguf_arch = "deepseek2", .drops_head_dim = true, .moe = true,
         .moe_kind = family::experts::deepseek2},
        // GPT-2: Conv1D weights ([in, out]) transposed; BLOOM: fused q/k/v rows regrouped
        {.hf_class = "GPT2LMHeadModel", .gguf_arch = "gpt2", .layer_norm = true, .rope = false, .ff_4x = true,
         .tensors = family::layout::gpt2, .tied_by_default = true},
        {.hf_class = "BloomForCausalLM", .gguf_arch = "bloom", .layer_norm = true, .rope = false, .ff_4x = true,
         .tensors = family::layout::bloom, .tied_by_default = true},
        // ModernBERT (the encoder; ForMaskedLM's prediction head is not part of an embedding)
        // state-space families: their conversion rules in io/hf_ssm.hpp
        {.hf_class = "Mamba2ForCausalLM", .gguf_arch = "mamba2", .tensors = family::layout::mamba2},
        {.hf_class = "GraniteMoeHybridForCausalLM", .gguf_arch = "granitehybrid", .tensors = family::layout::granite_hybrid},
        {.hf_class = "ModernBertModel", .gguf_arch = "modern-bert", .layer_norm = true, .tensors = family::layout::modern_bert},
        {.hf_class = "ModernBertForMaskedLM", .gguf_arch = "modern-bert", .layer_norm = true,
         .tensors = family::layout::modern_bert, .drops_mlm_head = true},
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
    /// The first of `keys` present (families name the same quantity differently).
    const char* first_of(std::initializer_list<const char*> keys) const {
        for (const char* k : keys)
            if (has(k)) return k;
        return *keys.begin();
    }
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

/// Phi-3's LongRoPE (the converter's Phi3MiniModel): the long and short per-pair factors
/// as tensors, and the attention factor sqrt(1 + ln(s) / ln(original context)) for a
/// context s times the original one.
inline void phi3_long_rope(gguf::writer& w, const std::string& a, const config& c, const nlohmann::json& rope,
                           std::uint64_t n_ctx, std::uint64_t n_rot, std::vector<float>& long_f, std::vector<float>& short_f) {
    auto factors = [&](const char* k) {
        std::vector<float> v;
        if (!rope.contains(k) || rope[k].is_null()) return v;
        if (!rope[k].is_array()) throw format_error("config.json rope '" + std::string(k) + "' is not a list");
        for (const auto& x : rope[k]) v.push_back(float(c.number(x, k)));
        return v;
    };
    long_f = factors("long_factor");
    short_f = factors("short_factor");
    if (long_f.empty()) { short_f.clear(); return; }
    if (long_f.size() != short_f.size() || 2 * long_f.size() != n_rot)
        throw format_error("config.json rope long_factor and short_factor must each have " + std::to_string(n_rot / 2) +
                           " entries (they have " + std::to_string(long_f.size()) + " and " + std::to_string(short_f.size()) + ")");
    const auto& orig_j = rope.contains("original_max_position_embeddings") ? rope["original_max_position_embeddings"]
                                                                           : c.raw().value("original_max_position_embeddings", nlohmann::json());
    if (orig_j.is_null()) throw format_error("config.json has no original_max_position_embeddings (LongRoPE needs it)");
    const double orig = c.number(orig_j, "original_max_position_embeddings");
    if (!(orig > 1)) throw format_error("config.json original_max_position_embeddings must be > 1");
    const double scale = double(n_ctx) / orig;
    w.set(a + "rope.scaling.attn_factor", float(scale > 1.0 ? std::sqrt(1 + std::log(scale) / std::log(orig)) : 1.0));
}

/// Qwen3-MoE's experts as the converter stacks them: per layer the router
/// (mlp.gate -> ffn_gate_inp) and ffn_{gate,up,down}_exps [expert][rows][cols], from one
/// tensor per expert (experts.E.gate_proj, ...) or transformers 5's fused
/// experts.gate_up_proj [E][2 ff][D] (gate first) and experts.down_proj [E][D][ff].
inline void moe_experts(gguf::writer& w, const weights& W, std::vector<std::vector<std::byte>>& owned,
                        std::set<std::string>& used, const config& c, const std::string& h, const std::string& g,
                        std::uint64_t n_embd, family::experts kind = family::experts::qwen3) {
    const bool mixtral = kind == family::experts::mixtral;
    const std::uint64_t n_expert = c.dim(c.first_of({"num_experts", "num_local_experts", "n_routed_experts"}), 1u << 12),
                        ff = c.dim(mixtral ? "intermediate_size" : "moe_intermediate_size");
    const std::string moe = h + (mixtral ? "block_sparse_moe." : "mlp.");
    auto find = [&](const std::string& name) -> const safetensors::tensor_info* {
        for (const auto& n : {name, name + ".weight"}) {
            const auto it = W.by_name.find(n);
            if (it != W.by_name.end()) { used.insert(n); return it->second; }
        }
        return nullptr;
    };
    auto expect = [&](const safetensors::tensor_info& t, std::vector<std::uint64_t> shape) {
        if (t.shape != shape) {
            std::string want;
            for (auto d : shape) want += (want.empty() ? "" : ", ") + std::to_string(d);
            throw format_error("tensor '" + t.name + "' is not [" + want + "]");
        }
    };
    const auto* router = find(moe + "gate");
    if (!router) throw format_error("checkpoint has no '" + moe + "gate.weight' (the expert router)");
    expect(*router, {n_expert, n_embd});
    w.add_tensor(g + "ffn_gate_inp.weight", gguf_type(*router), {n_embd, n_expert},
                 std::span<const std::byte>(router->data, router->n_bytes()));
    auto add3 = [&](const std::string& name, ggml_type type, std::uint64_t rows, std::uint64_t cols, std::vector<std::byte> b) {
        auto& kept = owned.emplace_back(std::move(b));
        w.add_tensor(name, type, {cols, rows, n_expert}, std::span<const std::byte>(kept.data(), kept.size()));
    };
    if (const auto* gate_up = mixtral ? nullptr : find(h + "mlp.experts.gate_up_proj")) {
        expect(*gate_up, {n_expert, 2 * ff, n_embd});
        const auto* down = find(h + "mlp.experts.down_proj");
        if (!down) throw format_error("checkpoint has experts.gate_up_proj but no '" + h + "mlp.experts.down_proj'");
        expect(*down, {n_expert, n_embd, ff});
        const std::size_t half = gate_up->n_bytes() / n_expert / 2;
        std::vector<std::byte> gb(half * n_expert), ub(half * n_expert);
        for (std::uint64_t e = 0; e < n_expert; ++e) {
            std::memcpy(gb.data() + e * half, gate_up->data + (2 * e) * half, half);
            std::memcpy(ub.data() + e * half, gate_up->data + (2 * e + 1) * half, half);
        }
        add3(g + "ffn_gate_exps.weight", gguf_type(*gate_up), ff, n_embd, std::move(gb));
        add3(g + "ffn_up_exps.weight", gguf_type(*gate_up), ff, n_embd, std::move(ub));
        w.add_tensor(g + "ffn_down_exps.weight", gguf_type(*down), {ff, n_embd, n_expert},
                     std::span<const std::byte>(down->data, down->n_bytes()));
        return;
    }
    const std::pair<const char*, const char*> parts[] = {{"gate_proj", "ffn_gate_exps"}, {"up_proj", "ffn_up_exps"},
                                                         {"down_proj", "ffn_down_exps"}};
    const std::pair<const char*, const char*> mixtral_parts[] = {{"w1", "ffn_gate_exps"}, {"w3", "ffn_up_exps"},
                                                                 {"w2", "ffn_down_exps"}};
    for (const auto& [hp, gp] : mixtral ? std::span(mixtral_parts) : std::span(parts)) {
        const bool down = std::string_view(gp) == "ffn_down_exps";
        const std::uint64_t rows = down ? n_embd : ff, cols = down ? ff : n_embd;
        std::vector<std::byte> b;
        std::optional<ggml_type> type;
        for (std::uint64_t e = 0; e < n_expert; ++e) {
            const auto name = moe + "experts." + std::to_string(e) + "." + hp;
            const auto* t = find(name);
            if (!t) throw format_error("checkpoint has no '" + name + ".weight' (" + std::to_string(n_expert) + " experts)");
            expect(*t, {rows, cols});
            if (type && *type != gguf_type(*t)) throw format_error("tensor '" + t->name + "' differs in dtype from expert 0's");
            type = gguf_type(*t);
            b.insert(b.end(), t->data, t->data + t->n_bytes());
        }
        add3(g + gp + ".weight", *type, rows, cols, std::move(b));
    }
}

/// ModernBERT as llama.cpp's ModernBertModel converter writes it (conversion/bert.py): the
/// `model.` prefix dropped, Wqkv and Wi kept fused (attn_qkv, ffn_up of 2 x intermediate
/// rows, the activated half first), `local_attention` as the window and
/// `global_attn_every_n_layers` as its pattern, both RoPE bases, norm_eps under the RMS key
/// (where the converter files it), hidden_activation. Biases (attention_bias, mlp_bias,
/// norm_bias) are not converted — llama.cpp's modern-bert has none — so a checkpoint with
/// any is refused by name. The masked-LM head (head.*, decoder.*) is not part of the encoder.
inline void modern_bert_gguf(gguf::writer& w, const config& c, const weights& W, std::set<std::string>& used,
                             const std::string& cls, bool drops_mlm_head) {
    const std::string a = "modern-bert.";
    const std::uint64_t n_layer = c.dim("num_hidden_layers", 1u << 12), n_embd = c.dim("hidden_size"),
                        n_head = c.dim("num_attention_heads", 1u << 12), n_ff = c.dim("intermediate_size");
    if (n_embd % n_head != 0)
        throw format_error("config.json hidden_size " + std::to_string(n_embd) + " is not a multiple of num_attention_heads");
    for (const char* k : {"attention_bias", "mlp_bias", "norm_bias"})
        if (c.flag_or(k, false)) throw format_error("config.json " + std::string(k) + " = true is not converted for " + cls);
    w.set("general.architecture", std::string("modern-bert"));
    w.set(a + "context_length", std::uint32_t(c.dim("max_position_embeddings", std::uint64_t(1) << 31)));
    w.set(a + "embedding_length", std::uint32_t(n_embd));
    w.set(a + "block_count", std::uint32_t(n_layer));
    w.set(a + "feed_forward_length", std::uint32_t(n_ff));
    w.set(a + "attention.head_count", std::uint32_t(n_head));
    w.set(a + "attention.head_count_kv", std::uint32_t(n_head));
    w.set(a + "attention.layer_norm_rms_epsilon", float(c.num_or("norm_eps", 1e-5)));
    w.set(a + "attention.causal", false);
    // RoPE bases: transformers 5's rope_parameters per layer type, or the older keys
    double global = c.num_or("global_rope_theta", 160000.0), local = c.num_or("local_rope_theta", 10000.0);
    if (c.has("rope_parameters")) {
        const auto& rp = c.raw()["rope_parameters"];
        auto theta = [&](const char* kind, double d) {
            if (!rp.is_object() || !rp.contains(kind)) return d;
            const auto& e = rp[kind];
            if (e.contains("rope_type") && e["rope_type"] != "default")
                throw format_error("config.json rope_parameters." + std::string(kind) + " rope_type " +
                                   e["rope_type"].dump() + " is not implemented for " + cls);
            return e.contains("rope_theta") ? c.number(e["rope_theta"], "rope_theta") : d;
        };
        global = theta("full_attention", global);
        local = theta("sliding_attention", local);
    }
    if (!(global > 0) || !(local > 0)) throw format_error("config.json RoPE bases must be positive");
    w.set(a + "rope.freq_base", float(global));
    w.set(a + "rope.freq_base_swa", float(local));
    w.set(a + "attention.sliding_window", std::uint32_t(c.dim_or("local_attention", 128)));
    const std::uint64_t every = c.dim_or("global_attn_every_n_layers", 3);
    w.set(a + "attention.sliding_window_pattern", std::uint32_t(every));
    if (c.has("layer_types")) { // transformers 5 saves each layer's kind: it must be the pattern's
        const auto& lt = c.raw()["layer_types"];
        if (!lt.is_array() || lt.size() != n_layer)
            throw format_error("config.json 'layer_types' must list " + std::to_string(n_layer) + " layers");
        for (std::uint64_t il = 0; il < n_layer; ++il)
            if (lt[il] != (il % every == 0 ? "full_attention" : "sliding_attention"))
                throw format_error("config.json 'layer_types'[" + std::to_string(il) + "] = " + lt[il].dump() +
                                   " is not what global_attn_every_n_layers = " + std::to_string(every) + " makes it");
    }
    if (c.has("hidden_activation")) {
        if (!c.raw()["hidden_activation"].is_string()) throw format_error("config.json 'hidden_activation' is not a string");
        w.set(a + "hidden_activation", c.raw()["hidden_activation"].get<std::string>());
    }
    w.set(a + "vocab_size", std::uint32_t(c.dim("vocab_size", std::uint64_t(1) << 31)));

    auto take = [&](const std::string& hname, const std::string& gname, bool required) {
        const std::string names[] = {hname, "model." + hname};
        for (const auto& n : names) {
            const auto it = W.by_name.find(n);
            if (it == W.by_name.end()) continue;
            used.insert(n);
            const auto& t = *it->second;
            std::vector<std::uint64_t> ne(t.shape.rbegin(), t.shape.rend());
            w.add_tensor(gname, gguf_type(t), ne, std::span<const std::byte>(t.data, t.n_bytes()));
            return;
        }
        if (required) throw format_error("checkpoint has no '" + hname + "' (nor 'model." + hname + "')");
    };
    take("embeddings.tok_embeddings.weight", "token_embd.weight", true);
    take("embeddings.norm.weight", "token_embd_norm.weight", true);
    take("final_norm.weight", "output_norm.weight", true);
    for (std::uint64_t l = 0; l < n_layer; ++l) {
        const std::string h = "layers." + std::to_string(l) + ".", g = "blk." + std::to_string(l) + ".";
        take(h + "attn_norm.weight", g + "attn_norm.weight", l != 0); // layer 0: an Identity in transformers
        take(h + "attn.Wqkv.weight", g + "attn_qkv.weight", true);
        take(h + "attn.Wo.weight", g + "attn_output.weight", true);
        take(h + "mlp_norm.weight", g + "ffn_norm.weight", true);
        take(h + "mlp.Wi.weight", g + "ffn_up.weight", true);
        take(h + "mlp.Wo.weight", g + "ffn_down.weight", true);
    }
    // the masked-LM prediction head: not part of the encoder's output
    if (drops_mlm_head)
        for (const char* k : {"head.dense.weight", "head.norm.weight", "decoder.weight", "decoder.bias"}) used.insert(k);
}

/// The state-space families' conversion (io/hf_ssm.hpp, included at the end of this file).
inline void write_ssm_gguf(const family& fam, const config& c, const weights& W, const std::string& cls,
                           const std::string& name, const std::string& out);

} // namespace detail

namespace detail {
/// The one class name of config.json's `architectures`, or nothing when it is not a list of one.
inline std::optional<std::string> checkpoint_class(const nlohmann::json& raw) {
    if (!raw.contains("architectures") || !raw["architectures"].is_array() || raw["architectures"].size() != 1 ||
        !raw["architectures"][0].is_string())
        return std::nullopt;
    return raw["architectures"][0].get<std::string>();
}
/// The entry of families() for a class name, or null.
inline const family* family_of(std::string_view cls) {
    for (const auto& f : families())
        if (f.hf_class == cls) return &f;
    return nullptr;
}
} // namespace detail

/// A checkpoint directory whose config.json names a class of families() (one this header
/// converts; a sentence-transformers BERT directory is read by models/bert_safetensors.hpp).
inline bool converts(const std::string& dir) {
    if (!is_checkpoint(dir)) return false;
    const auto cls = detail::checkpoint_class(detail::read_json(std::filesystem::path(dir) / "config.json"));
    return cls && detail::family_of(*cls);
}

/// Writes the GGUF of checkpoint directory `dir` to `out` (see the top of this file).
inline void write_gguf(const std::string& dir_s, const std::string& out) {
    namespace fs = std::filesystem;
    const fs::path dir(dir_s);
    const detail::config c(detail::read_json(dir / "config.json"));
    const auto& raw = c.raw();
    const auto cls_name = detail::checkpoint_class(raw);
    if (!cls_name) throw format_error("config.json 'architectures' must be a list of one class name");
    const std::string& cls = *cls_name;
    const family* fam = detail::family_of(cls);
    if (!fam) {
        std::string known;
        for (const auto& f : families()) known += (known.empty() ? "" : ", ") + std::string(f.hf_class);
        throw format_error("config.json architecture '" + cls + "' is not one this library converts (known: " + known + ")");
    }
    const std::string a = std::string(fam->gguf_arch) + ".";
    const auto awq = awq::read_settings(raw); // refuses any other quantization_config by name
    if (awq && (fam->tensors != family::layout::llama || fam->moe))
        throw format_error("config.json quantization_config (AWQ) on " + cls +
                           ": AWQ checkpoints are read for the dense families with Llama-style tensor names only");
    const detail::weights W(dir);
    if (fam->tensors == family::layout::mamba2 || fam->tensors == family::layout::granite_hybrid)
        return detail::write_ssm_gguf(*fam, c, W, cls, dir.filename().string(), out);
    if (fam->tensors == family::layout::modern_bert) {
        gguf::writer w;
        w.set("general.name", dir.filename().string());
        std::set<std::string> used;
        detail::modern_bert_gguf(w, c, W, used, cls, fam->drops_mlm_head);
        for (const auto& [name, t] : W.by_name)
            if (!used.count(name))
                throw format_error("tensor '" + name + "' of the checkpoint is not one a " + cls +
                                   " is converted with: refusing rather than dropping it");
        w.write(out);
        return;
    }

    // hyperparameters (GPT-2 and BLOOM name them their own way)
    const std::string_view arch = fam->gguf_arch;
    const bool gpt2 = fam->tensors == family::layout::gpt2, bloom = fam->tensors == family::layout::bloom;
    const std::uint64_t n_layer = c.dim(c.first_of({"num_hidden_layers", "n_layer"}), 1u << 16),
                        n_embd = c.dim(c.first_of({"hidden_size", "n_embd", "n_embed"})),
                        n_head = c.dim(c.first_of({"num_attention_heads", "n_head"})),
                        n_head_kv = c.dim_or("num_key_value_heads", n_head);
    const std::uint64_t n_ff = !fam->ff_4x ? c.dim("intermediate_size") : gpt2 && c.has("n_inner") ? c.dim("n_inner") : 4 * n_embd;
    const std::uint64_t n_ctx = gpt2    ? c.dim(c.first_of({"n_ctx", "n_positions"}), std::uint64_t(1) << 31)
                              : bloom   ? c.dim_or("seq_length", n_embd) // the converter's default
                                        : c.dim("max_position_embeddings", std::uint64_t(1) << 31);
    if (n_head % n_head_kv != 0)
        throw format_error("config.json num_attention_heads " + std::to_string(n_head) +
                           " is not a multiple of num_key_value_heads " + std::to_string(n_head_kv));
    const bool explicit_hd = c.has("head_dim") && !fam->drops_head_dim;
    const std::uint64_t hd = explicit_hd ? c.dim("head_dim") : n_embd / n_head;
    if (!explicit_hd && n_embd % n_head != 0)
        throw format_error("config.json hidden_size " + std::to_string(n_embd) + " is not a multiple of num_attention_heads");
    gguf::writer w;
    w.set("general.architecture", std::string(arch));
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
    if (fam->layer_norm)
        w.set(a + "attention.layer_norm_epsilon",
              float(c.num_or(c.first_of({"layer_norm_eps", "layer_norm_epsilon", "norm_epsilon"}), 1e-5)));
    else w.set(a + "attention.layer_norm_rms_epsilon", float(c.num_or("rms_norm_eps", 1e-6)));
    using kind = family::experts;
    if (fam->moe) {
        const auto n_expert = c.dim(c.first_of({"num_experts", "num_local_experts", "n_routed_experts"}), 1u << 12),
                   n_used = c.dim("num_experts_per_tok", 1u << 12);
        if (n_used > n_expert)
            throw format_error("config.json num_experts_per_tok " + std::to_string(n_used) + " exceeds num_experts " +
                               std::to_string(n_expert));
        w.set(a + "expert_count", std::uint32_t(n_expert));
        w.set(a + "expert_used_count", std::uint32_t(n_used));
        if (fam->moe_kind != kind::mixtral) // Mixtral's experts are intermediate_size wide
            w.set(a + "expert_feed_forward_length", std::uint32_t(c.dim("moe_intermediate_size")));
        // llama.cpp's qwen3moe always renormalises the chosen experts' weights, its qwen2moe never
        if (fam->moe_kind == kind::qwen3 && !c.flag_or("norm_topk_prob", false))
            throw format_error("config.json norm_topk_prob = false: the qwen3moe preset renormalises the top-k "
                               "weights (as llama.cpp does), which this checkpoint does not");
        if (fam->moe_kind == kind::qwen2 && c.flag_or("norm_topk_prob", false))
            throw format_error("config.json norm_topk_prob = true: the qwen2moe preset does not renormalise the top-k "
                               "weights (as llama.cpp does not), which this checkpoint does");
        if (fam->moe_kind == kind::qwen2)
            w.set(a + "expert_shared_feed_forward_length", std::uint32_t(c.dim("shared_expert_intermediate_size")));
        if (fam->moe_kind == kind::mixtral && c.has("sliding_window"))
            throw format_error("config.json sliding_window is not implemented for " + cls);
        for (const char* k : {"shared_expert_intermediate_size", "mlp_only_layers"}) {
            if (fam->moe_kind == kind::qwen2 && std::string_view(k) == "shared_expert_intermediate_size") continue;
            if (c.has(k) && !(c.raw()[k].is_array() && c.raw()[k].empty()) && !(c.raw()[k].is_number() && c.raw()[k] == 0))
                throw format_error("config.json '" + std::string(k) + "' is not implemented for " + cls);
        }
        if (c.dim_or("decoder_sparse_step", 1) != 1)
            throw format_error("config.json decoder_sparse_step must be 1 (every layer a mixture of experts)");
    }
    std::uint64_t qk_rope = 0, qk_nope = 0, v_mla = 0, kv_rank = 0; // multi-head latent attention (DeepSeek-V2)
    if (fam->moe_kind == kind::deepseek2) {
        kv_rank = c.dim("kv_lora_rank");
        qk_rope = c.dim("qk_rope_head_dim");
        qk_nope = c.dim("qk_nope_head_dim");
        v_mla = c.dim("v_head_dim");
        w.set(a + "attention.head_count_kv", std::uint32_t(1));
        w.set(a + "attention.kv_lora_rank", std::uint32_t(kv_rank));
        if (c.has("q_lora_rank")) w.set(a + "attention.q_lora_rank", std::uint32_t(c.dim("q_lora_rank")));
        w.set(a + "attention.key_length", std::uint32_t(kv_rank + qk_rope));
        w.set(a + "attention.value_length", std::uint32_t(kv_rank));
        w.set(a + "attention.key_length_mla", std::uint32_t(qk_nope + qk_rope));
        w.set(a + "attention.value_length_mla", std::uint32_t(v_mla));
        w.set(a + "vocab_size", std::uint32_t(c.dim("vocab_size", std::uint64_t(1) << 31)));
        w.set(a + "leading_dense_block_count", std::uint32_t(c.dim_or("first_k_dense_replace", 0)));
        w.set(a + "expert_shared_count", std::uint32_t(c.dim("n_shared_experts")));
        w.set(a + "expert_weights_scale", float(c.num_or("routed_scaling_factor", 1.0)));
        if (c.flag_or("norm_topk_prob", false)) w.set(a + "expert_weights_norm", true);
        const std::string scoring = c.has("scoring_func") ? c.raw()["scoring_func"].get<std::string>() : "softmax";
        if (scoring != "softmax" && scoring != "sigmoid")
            throw format_error("config.json scoring_func '" + scoring + "' is not implemented for " + cls);
        w.set(a + "expert_gating_func", std::uint32_t(scoring == "softmax" ? 1 : 2));
        if (c.has("n_group")) {
            w.set(a + "expert_group_count", std::uint32_t(c.dim("n_group")));
            w.set(a + "expert_group_used_count", std::uint32_t(c.dim("topk_group")));
        }
        if (c.has("attention_bias") && c.flag_or("attention_bias", false))
            throw format_error("config.json attention_bias = true is not implemented for " + cls);
    }
    const auto rope = c.rope();
    std::vector<float> rope_freqs, factors_long, factors_short;
    if (fam->rope) {
        const double base = rope.contains("rope_theta") ? c.number(rope["rope_theta"], "rope_theta") : 10000.0;
        w.set(a + "rope.freq_base", float(base));
        std::uint64_t n_rot = fam->moe_kind == kind::deepseek2 ? qk_rope : hd;
        if (c.has("partial_rotary_factor") || rope.contains("partial_rotary_factor")) {
            const double f = c.has("partial_rotary_factor") ? c.num("partial_rotary_factor")
                                                            : c.number(rope["partial_rotary_factor"], "partial_rotary_factor");
            if (!(f > 0 && f <= 1)) throw format_error("config.json partial_rotary_factor must be in (0, 1]");
            // Phi-3's converter: int(f * n_embd) / n_head
            n_rot = fam->long_rope ? std::uint64_t(f * double(n_embd)) / n_head : std::uint64_t(f * double(hd));
            if (n_rot == 0 || n_rot % 2) throw format_error("config.json partial_rotary_factor gives an odd or empty rotary width");
        }
        w.set(a + "rope.dimension_count", std::uint32_t(n_rot));
        const std::string rope_type = rope.contains("rope_type") && rope["rope_type"].is_string() ? rope["rope_type"].get<std::string>()
                                    : rope.contains("type") && rope["type"].is_string()      ? rope["type"].get<std::string>()
                                                                                             : "default";
        if (rope_type == "llama3" && fam->llama3_rope) rope_freqs = detail::llama3_rope_freqs(rope, base, n_rot);
        else if ((rope_type == "longrope" || rope_type == "su") && fam->long_rope)
            detail::phi3_long_rope(w, a, c, rope, n_ctx, n_rot, factors_long, factors_short);
        else if (rope_type == "yarn" && fam->moe_kind == kind::deepseek2) {
            // DeepSeek-V2's YaRN as its converter writes it (yarn_log_multiplier = 0.1 mscale_all_dim)
            auto num = [&](const char* k, double d) { return rope.contains(k) ? c.number(rope[k], k) : d; };
            w.set(a + "rope.scaling.type", std::string("yarn"));
            w.set(a + "rope.scaling.factor", float(num("factor", 1.0)));
            w.set(a + "rope.scaling.original_context_length", std::uint32_t(num("original_max_position_embeddings", 4096)));
            w.set(a + "rope.scaling.yarn_beta_fast", float(num("beta_fast", 32.0)));
            w.set(a + "rope.scaling.yarn_beta_slow", float(num("beta_slow", 1.0)));
            w.set(a + "rope.scaling.yarn_log_multiplier", float(0.1 * num("mscale_all_dim", 0.0)));
            if (num("mscale", 1.0) != num("mscale_all_dim", 0.0) && num("mscale_all_dim", 0.0) != 0.0)
                throw format_error("config.json rope mscale differs from mscale_all_dim (llama.cpp reads them as equal)");
        } else if (rope_type != "default")
            throw format_error("config.json rope type '" + rope_type + "' is not implemented for " + cls);
        if (fam->long_rope) {
            const auto orig = rope.contains("original_max_position_embeddings") ? rope["original_max_position_embeddings"]
                                                                                : c.raw().value("original_max_position_embeddings", nlohmann::json());
            if (!orig.is_null())
                w.set(a + "rope.scaling.original_context_length", std::uint32_t(c.number(orig, "original_max_position_embeddings")));
        }
    }
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
    if (fam->soft_caps) {
        if (c.has("attn_logit_softcapping")) w.set(a + "attn_logit_softcapping", float(c.num("attn_logit_softcapping")));
        if (c.has("final_logit_softcapping")) w.set(a + "final_logit_softcapping", float(c.num("final_logit_softcapping")));
        // transformers scales by query_pre_attn_scalar^-0.5 (the GGUF leaves it to llama.cpp's rule)
        w.set(a + "attention.scale", float(1.0 / std::sqrt(c.num_or("query_pre_attn_scalar", double(hd)))));
    }
    if (fam->multipliers) {
        if (c.has("attention_multiplier")) w.set(a + "attention.scale", float(c.num("attention_multiplier")));
        if (c.has("embedding_multiplier")) w.set(a + "embedding_scale", float(c.num("embedding_multiplier")));
        if (c.has("residual_multiplier")) w.set(a + "residual_scale", float(c.num("residual_multiplier")));
        if (c.has("logits_scaling")) w.set(a + "logit_scale", float(c.num("logits_scaling")));
    }
    if (fam->parallel_residual_key) w.set(a + "use_parallel_residual", c.flag_or("use_parallel_residual", false));
    if (fam->logit_scale) w.set(a + "logit_scale", float(c.num("logit_scale")));
    if (fam->no_rope_every_4 && c.dim_or("no_rope_layer_interval", 4) != 4)
        throw format_error("config.json no_rope_layer_interval must be 4 (the library's and llama.cpp's SmolLM3 rule)");
    if (fam->refuses_use_sliding_window && c.flag_or("use_sliding_window", false))
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
    // Rows of `t` in a new order: dst row r comes from src row order(r); ne as `shape` reversed.
    auto reordered = [&](const std::string& gname, const safetensors::tensor_info& t, std::uint64_t rows,
                         const auto& order) {
        const std::size_t row_bytes = t.n_bytes() / rows;
        auto& b = owned.emplace_back(t.n_bytes());
        for (std::uint64_t r = 0; r < rows; ++r) std::memcpy(b.data() + r * row_bytes, t.data + order(r) * row_bytes, row_bytes);
        std::vector<std::uint64_t> ne(t.shape.rbegin(), t.shape.rend());
        w.add_tensor(gname, detail::gguf_type(t), ne, std::span<const std::byte>(b.data(), b.size()));
    };
    auto permuted = [&](const std::string& gname, const safetensors::tensor_info& t, std::uint64_t heads) {
        // rows (h, half, i) -> (h, i, half): LlamaModel.permute
        const std::uint64_t rows = t.shape.empty() ? 0 : t.shape[0];
        if (rows == 0 || rows % (2 * heads) != 0)
            throw format_error("tensor '" + t.name + "' has " + std::to_string(rows) + " rows, not 2 x " + std::to_string(heads) + " heads");
        const std::uint64_t hdh = rows / heads / 2;
        reordered(gname, t, rows, [&](std::uint64_t dst) {
            const std::uint64_t h = dst / (2 * hdh), i = (dst % (2 * hdh)) / 2, half = dst % 2;
            return h * 2 * hdh + half * hdh + i;
        });
    };
    auto bloom_qkv = [&](const std::string& gname, const safetensors::tensor_info& t) {
        // rows (head, q|k|v, i) -> (q|k|v, head, i): BloomModel.modify_tensors
        if (t.shape.empty() || t.shape[0] != 3 * n_embd)
            throw format_error("tensor '" + t.name + "' has " + std::to_string(t.shape.empty() ? 0 : t.shape[0]) +
                               " rows, not 3 x hidden_size " + std::to_string(n_embd));
        reordered(gname, t, 3 * n_embd, [&](std::uint64_t dst) {
            const std::uint64_t part = dst / n_embd, h = (dst % n_embd) / hd, i = dst % hd;
            return h * 3 * hd + part * hd + i;
        });
    };
    auto transposed = [&](const std::string& gname, const safetensors::tensor_info& t) {
        // GPT-2's Conv1D stores [in, out]; the GGUF holds [out, in] rows
        if (t.shape.size() != 2) throw format_error("tensor '" + t.name + "' is not a matrix");
        const std::uint64_t in = t.shape[0], out = t.shape[1];
        const std::size_t es = t.n_bytes() / (in * out);
        auto& b = owned.emplace_back(t.n_bytes());
        for (std::uint64_t o = 0; o < out; ++o)
            for (std::uint64_t i = 0; i < in; ++i) std::memcpy(b.data() + (o * in + i) * es, t.data + (i * out + o) * es, es);
        w.add_tensor(gname, detail::gguf_type(t), {in, out}, std::span<const std::byte>(b.data(), b.size()));
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
        const bool qkv = gname.find(".attn_qkv.") != std::string::npos;
        if (fam->norm_plus_one && norm) plus_one(gname, t);
        else if (t.shape.size() == 1 && (bloom && qkv)) {
            std::vector<float> v(t.n_elements());
            if (v.size() != 3 * n_embd) throw format_error("tensor '" + t.name + "' is not 3 x hidden_size long");
            for (std::size_t dst = 0; dst < v.size(); ++dst) {
                const std::size_t part = dst / n_embd, h = (dst % n_embd) / hd, i = dst % hd;
                v[dst] = detail::element(t, h * 3 * hd + part * hd + i);
            }
            add_f32(gname, {v.size()}, v);
        }
        else if (t.shape.size() == 1 && t.type != safetensors::dtype::F32) {
            // vectors (norms, biases) become F32, as the converter writes them
            std::vector<float> v(t.n_elements());
            for (std::size_t i = 0; i < v.size(); ++i) v[i] = detail::element(t, i);
            add_f32(gname, {v.size()}, v);
        }
        else if (fam->permute_qk && gname.find(".attn_q.") != std::string::npos) permuted(gname, t, n_head);
        else if (fam->permute_qk && gname.find(".attn_k.") != std::string::npos) permuted(gname, t, n_head_kv);
        else if (bloom && qkv) bloom_qkv(gname, t);
        else if (gpt2 && t.shape.size() == 2 && hname.find(".h.") != std::string::npos) transposed(gname, t);
        else add_as_is(gname, t);
        return true;
    };
    // AutoAWQ's quantised linears of layer prefix h (io/hf_awq.hpp) as AWQ4 tensors of blk prefix g;
    // their biases (and the linears modules_to_not_convert keeps float) go through take() below
    auto awq_linears = [&](const std::string& h, const std::string& g) {
        struct linear { const char* hf; const char* gguf; std::uint64_t out, in; std::uint64_t permute_heads; };
        const linear linears[] = {
            {"self_attn.q_proj", "attn_q", n_head * hd, n_embd, fam->permute_qk ? n_head : 0},
            {"self_attn.k_proj", "attn_k", n_head_kv * hd, n_embd, fam->permute_qk ? n_head_kv : 0},
            {"self_attn.v_proj", "attn_v", n_head_kv * hd, n_embd, 0},
            {"self_attn.o_proj", "attn_output", n_embd, n_head * hd, 0},
            {"mlp.gate_proj", "ffn_gate", n_ff, n_embd, 0},
            {"mlp.up_proj", "ffn_up", n_ff, n_embd, 0},
            {"mlp.down_proj", "ffn_down", n_embd, n_ff, 0},
        };
        for (const auto& l : linears) {
            const std::string module = h + l.hf;
            const auto qw = W.by_name.find(module + ".qweight");
            const bool packed = qw != W.by_name.end(), plain = W.by_name.count(module + ".weight") > 0;
            if (!awq->quantises(module)) {
                if (packed)
                    throw format_error("tensor '" + module + ".qweight': quantization_config.modules_to_not_convert keeps '" +
                                       module + "' float");
                continue;
            }
            if (plain)
                throw format_error("tensor '" + module + ".weight' is float, but quantization_config (AWQ) quantises '" +
                                   module + "' (no entry of modules_to_not_convert names it)");
            if (!packed) continue; // missing: the model's binder names it
            awq::linear_tensors t{qw->second, nullptr, nullptr};
            for (auto [part, ptr] : {std::pair{".qzeros", &t.qzeros}, std::pair{".scales", &t.scales}}) {
                const auto it = W.by_name.find(module + part);
                if (it == W.by_name.end()) throw format_error("checkpoint has '" + module + ".qweight' but no '" + module + part + "'");
                *ptr = it->second;
                used.insert(module + part);
            }
            used.insert(module + ".qweight");
            const std::uint64_t heads = l.permute_heads, hdh = heads ? l.out / heads / 2 : 0;
            if (heads && l.out % (2 * heads) != 0)
                throw format_error("'" + module + "' has " + std::to_string(l.out) + " outputs, not 2 x " + std::to_string(heads) + " heads");
            auto bytes = awq::repack(module, t, l.out, l.in, *awq, [&](std::uint64_t dst) {
                if (!heads) return dst; // rows (h, half, i) -> (h, i, half): LlamaModel.permute, as `permuted` below
                const std::uint64_t hh = dst / (2 * hdh), i = (dst % (2 * hdh)) / 2, half = dst % 2;
                return hh * 2 * hdh + half * hdh + i;
            });
            const auto& kept = owned.emplace_back(std::move(bytes));
            w.add_tensor(g + l.gguf + ".weight", ggml_type::AWQ4, {l.in, l.out}, std::span<const std::byte>(kept.data(), kept.size()));
        }
    };
    const char* suffixes[] = {"weight", "bias"};
    using name_pair = std::pair<const char*, const char*>;
    if (gpt2 || bloom) {
        const std::string tp = "transformer.";
        take(tp + (gpt2 ? "wte.weight" : "word_embeddings.weight"), "token_embd.weight");
        if (gpt2) take(tp + "wpe.weight", "position_embd.weight");
        if (bloom)
            for (const char* s : suffixes) take(tp + "word_embeddings_layernorm." + s, std::string("token_embd_norm.") + s);
        for (const char* s : suffixes) take(tp + "ln_f." + s, std::string("output_norm.") + s);
        if (W.by_name.count("lm_head.weight")) {
            if (c.flag_or("tie_word_embeddings", fam->tied_by_default)) used.insert("lm_head.weight"); // the embedding, once
            else take("lm_head.weight", "output.weight");
        }
        const name_pair gpt2_names[] = {{"ln_1", "attn_norm"}, {"attn.c_attn", "attn_qkv"}, {"attn.c_proj", "attn_output"},
                                        {"ln_2", "ffn_norm"},  {"mlp.c_fc", "ffn_up"},      {"mlp.c_proj", "ffn_down"}};
        const name_pair bloom_names[] = {{"input_layernorm", "attn_norm"}, {"self_attention.query_key_value", "attn_qkv"},
                                         {"self_attention.dense", "attn_output"}, {"post_attention_layernorm", "ffn_norm"},
                                         {"mlp.dense_h_to_4h", "ffn_up"}, {"mlp.dense_4h_to_h", "ffn_down"}};
        for (std::uint64_t l = 0; l < n_layer; ++l) {
            const std::string h = tp + "h." + std::to_string(l) + ".", g = "blk." + std::to_string(l) + ".";
            for (const auto& [hn, gn] : gpt2 ? std::span<const name_pair>(gpt2_names) : std::span<const name_pair>(bloom_names))
                for (const char* s : suffixes) take(h + hn + "." + s, g + gn + "." + s);
            used.insert(h + "attn.bias"); // GPT-2's causal-mask buffers, not weights
            used.insert(h + "attn.masked_bias");
        }
    } else {
        take("model.embed_tokens.weight", "token_embd.weight");
        take("model.norm.weight", "output_norm.weight");
        take("model.norm.bias", "output_norm.bias");
        if (!c.flag_or("tie_word_embeddings", fam->tied_by_default) || !W.by_name.count("model.embed_tokens.weight"))
            take("lm_head.weight", "output.weight");
        else if (W.by_name.count("lm_head.weight"))
            used.insert("lm_head.weight"); // tied: the converter writes the embedding once
        for (std::uint64_t l = 0; l < n_layer; ++l) {
            const std::string h = "model.layers." + std::to_string(l) + ".", g = "blk." + std::to_string(l) + ".";
            const name_pair names[] = {
                {"input_layernorm", "attn_norm"},
                {"post_attention_layernorm", fam->post_norms ? "post_attention_norm" : "ffn_norm"},
                {"pre_feedforward_layernorm", "ffn_norm"},
                {"post_feedforward_layernorm", "post_ffw_norm"},
                {"post_self_attn_layernorm", "post_attention_norm"}, {"post_mlp_layernorm", "post_ffw_norm"}, // GLM-4
                {"self_attn.q_proj", "attn_q"}, {"self_attn.k_proj", "attn_k"}, {"self_attn.v_proj", "attn_v"},
                {"self_attn.qkv_proj", "attn_qkv"}, {"self_attn.o_proj", "attn_output"},
                {"self_attn.q_norm", "attn_q_norm"}, {"self_attn.k_norm", "attn_k_norm"},
                {"mlp.gate_proj", "ffn_gate"}, {"mlp.up_proj", "ffn_up"}, {"mlp.down_proj", "ffn_down"},
                {"mlp.gate_up_proj", "ffn_up"}, // Phi-3: gate and up fused, gate first (llama.cpp splits it)
                {"mlp.c_fc", "ffn_up"}, {"mlp.c_proj", "ffn_down"}, // StarCoder2
            };
            if (awq) awq_linears(h, g);
            for (const auto& [hn, gn] : names)
                for (const char* s : suffixes) take(h + hn + "." + s, g + gn + "." + s);
            if (fam->moe_kind == kind::deepseek2) {
                const name_pair mla_names[] = {
                    {"self_attn.q_a_proj", "attn_q_a"}, {"self_attn.q_a_layernorm", "attn_q_a_norm"},
                    {"self_attn.q_b_proj", "attn_q_b"}, {"self_attn.kv_a_proj_with_mqa", "attn_kv_a_mqa"},
                    {"self_attn.kv_a_layernorm", "attn_kv_a_norm"}, {"mlp.shared_experts.gate_proj", "ffn_gate_shexp"},
                    {"mlp.shared_experts.up_proj", "ffn_up_shexp"}, {"mlp.shared_experts.down_proj", "ffn_down_shexp"},
                    {"mlp.gate.e_score_correction_bias", "exp_probs_b.bias"}};
                for (const auto& [hn, gn] : mla_names)
                    if (std::string_view(gn).ends_with(".bias")) take(h + hn, g + gn);
                    else take(h + hn + ".weight", g + gn + ".weight");
                // kv_b_proj [H (nope + v), r]: per head the nope rows -> attn_k_b (transposed to
                // [r, nope]) and the v rows -> attn_v_b, as the converter splits it
                const std::string kvb = h + "self_attn.kv_b_proj.weight";
                const auto it = W.by_name.find(kvb);
                if (it == W.by_name.end()) throw format_error("checkpoint has no '" + kvb + "'");
                used.insert(kvb);
                const auto& t = *it->second;
                if (t.shape != std::vector<std::uint64_t>{n_head * (qk_nope + v_mla), kv_rank})
                    throw format_error("tensor '" + kvb + "' is not [num_attention_heads x (qk_nope_head_dim + v_head_dim), kv_lora_rank]");
                const std::size_t es = t.n_bytes() / t.n_elements();
                std::vector<std::byte> kb(n_head * kv_rank * qk_nope * es), vb(n_head * v_mla * kv_rank * es);
                for (std::uint64_t hh = 0; hh < n_head; ++hh) {
                    const std::byte* src = t.data + hh * (qk_nope + v_mla) * kv_rank * es;
                    for (std::uint64_t i = 0; i < qk_nope; ++i)
                        for (std::uint64_t r = 0; r < kv_rank; ++r)
                            std::memcpy(kb.data() + ((hh * kv_rank + r) * qk_nope + i) * es, src + (i * kv_rank + r) * es, es);
                    std::memcpy(vb.data() + hh * v_mla * kv_rank * es, src + qk_nope * kv_rank * es, v_mla * kv_rank * es);
                }
                const auto& k_kept = owned.emplace_back(std::move(kb)); // the bytes stay where they are
                w.add_tensor(g + "attn_k_b.weight", detail::gguf_type(t), {qk_nope, kv_rank, n_head},
                             std::span<const std::byte>(k_kept.data(), k_kept.size()));
                const auto& v_kept = owned.emplace_back(std::move(vb));
                w.add_tensor(g + "attn_v_b.weight", detail::gguf_type(t), {kv_rank, v_mla, n_head},
                             std::span<const std::byte>(v_kept.data(), v_kept.size()));
                if (W.by_name.count(h + "mlp.gate.weight")) detail::moe_experts(w, W, owned, used, c, h, g, n_embd, fam->moe_kind);
            } else if (fam->moe_kind == kind::qwen2) {
                const name_pair shared[] = {{"mlp.shared_expert.gate_proj", "ffn_gate_shexp"},
                                            {"mlp.shared_expert.up_proj", "ffn_up_shexp"},
                                            {"mlp.shared_expert.down_proj", "ffn_down_shexp"},
                                            {"mlp.shared_expert_gate", "ffn_gate_inp_shexp"}};
                for (const auto& [hn, gn] : shared) take(h + hn + ".weight", g + gn + ".weight");
                detail::moe_experts(w, W, owned, used, c, h, g, n_embd, fam->moe_kind);
            } else if (fam->moe) {
                detail::moe_experts(w, W, owned, used, c, h, g, n_embd, fam->moe_kind);
            }
            used.insert(h + "self_attn.rotary_emb.inv_freq"); // a buffer older checkpoints saved; recomputed from the config
        }
    }
    if (!rope_freqs.empty()) add_f32("rope_freqs.weight", {rope_freqs.size()}, rope_freqs);
    if (!factors_long.empty()) {
        add_f32("rope_factors_long.weight", {factors_long.size()}, factors_long);
        add_f32("rope_factors_short.weight", {factors_short.size()}, factors_short);
    }
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

#include "archetype/io/hf_ssm.hpp" // detail::write_ssm_gguf
