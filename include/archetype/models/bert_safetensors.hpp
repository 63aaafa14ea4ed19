#pragma once
// BERT encoders from a sentence-transformers directory (or a plain Hugging Face
// BertModel directory): model.safetensors + config.json, pooling from
// 1_Pooling/config.json, normalisation from modules.json, truncation length
// from sentence_bert_config.json, WordPiece from tokenizer.json or vocab.txt.
//
//   using MiniLM = Encoder<GeluMLPWith<gelu_form::erf>>;         // HF "gelu" is the erf form
//   auto st = archetype::arch::read_sentence_transformers(dir);  // pooling, normalise, max_seq_length
//   auto model = archetype::load_sentence_transformers<MiniLM>(dir);
//   auto tok = archetype::tokenizer::load_wordpiece(st.tokenizer_path, st.lowercase);
//   auto ids = archetype::arch::sentence_transformers_encode(*tok, "A sentence.", st.max_seq_length);
//
// The Hugging Face names map onto the GGUF `bert` names the GGUF loader binds
// (the same weight structs, the same shape checks):
//
//   embeddings.word_embeddings.weight            token_embd.weight
//   embeddings.position_embeddings.weight        position_embd.weight
//   embeddings.token_type_embeddings.weight      token_types.weight
//   embeddings.LayerNorm.{weight,bias}           token_embd_norm.{weight,bias}
//   encoder.layer.N.attention.self.query         blk.N.attn_q       (.weight, .bias)
//   encoder.layer.N.attention.self.key           blk.N.attn_k
//   encoder.layer.N.attention.self.value         blk.N.attn_v
//   encoder.layer.N.attention.output.dense       blk.N.attn_output
//   encoder.layer.N.attention.output.LayerNorm   blk.N.attn_output_norm
//   encoder.layer.N.intermediate.dense           blk.N.ffn_up
//   encoder.layer.N.output.dense                 blk.N.ffn_down
//   encoder.layer.N.output.LayerNorm             blk.N.layer_output_norm
//
// (a "bert." prefix, as BertFor* checkpoints have, and the old LayerNorm
// gamma/beta names are accepted; pooler.* and embeddings.position_ids are not
// used). A PyTorch Linear weight is stored [out, in], row-major: that is GGUF's
// ne = [in, out], so the safetensors bytes are used in place, never copied.
//
// config.json: hidden_size, num_hidden_layers, num_attention_heads,
// intermediate_size, max_position_embeddings, vocab_size, type_vocab_size
// (default 2), layer_norm_eps (default 1e-12), hidden_act, and
// position_embedding_type (only "absolute"). hidden_act "gelu" is the exact
// erf GELU in transformers; "gelu_new" / "gelu_pytorch_tanh" / "gelu_fast" are
// the tanh form. The Encoder type fixes the form at compile time, and loading
// refuses a mismatch (shape_error naming both), because tanh instead of erf
// moves MiniLM's embeddings by ~1e-4 in cosine distance.
//
// Everything read here is hostile input: a missing or malformed file, key or
// tensor is an error naming it; unsupported modules (Dense, mean-sqrt-len
// pooling, several pooling modes at once) are refused rather than ignored.
#include <cctype>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "archetype/core/dtype.hpp"
#include "archetype/core/error.hpp"
#include "archetype/io/arch/bert.hpp"
#include "archetype/io/gguf.hpp"
#include "archetype/io/safetensors.hpp"
#include "archetype/models/encoder.hpp"
#include "archetype/models/encoder_model.hpp"
#include "archetype/policies/ffn.hpp"
#include "archetype/policies/pooling.hpp"
#include "archetype/runtime/tokenizer/tokenizer.hpp"

namespace archetype::arch {

/// What a sentence-transformers directory says beyond the weights.
struct sentence_transformers_config {
    std::string dir;              // the Transformer module's directory (config.json, model.safetensors)
    std::string weights_path;     // .../model.safetensors
    std::string tokenizer_path;   // tokenizer.json if present, else vocab.txt
    bool lowercase = true;        // for vocab.txt (tokenizer_config.json's do_lower_case)
    pooling_type pooling = pooling_type::mean;
    bool normalize = false;       // a sentence_transformers.models.Normalize module (L2)
    std::size_t max_seq_length = 0; // tokens incl. [CLS]/[SEP]; 0 = the position table
    gelu_form gelu = gelu_form::erf;
    bool sentence_transformers = false; // modules.json present (else a plain BertModel directory)
};

namespace bert_st_detail {
namespace fs = std::filesystem;

inline nlohmann::json read_json(const fs::path& p) {
    return safetensors::config(p.string()).json();
}
inline std::size_t dim(const safetensors::config& c, const char* key, std::uint64_t limit) {
    const auto v = c.get<std::uint64_t>(key);
    if (v == 0 || v > limit)
        throw format_error("config.json key '" + std::string(key) + "' = " + std::to_string(v) +
                           " is out of range (1.." + std::to_string(limit) + ")");
    return static_cast<std::size_t>(v);
}
inline bool flag(const nlohmann::json& j, const char* key, const std::string& file) {
    if (!j.contains(key) || j.at(key).is_null()) return false;
    if (!j.at(key).is_boolean())
        throw format_error("'" + file + "' key '" + key + "' is not a boolean: " + j.at(key).dump());
    return j.at(key).get<bool>();
}

/// Pooling from a sentence-transformers Pooling config (exactly one supported mode).
inline pooling_type pooling_from(const fs::path& p) {
    const auto j = read_json(p);
    const std::string f = p.string();
    if (j.contains("pooling_mode") && j.at("pooling_mode").is_string()) { // newer spelling
        const auto m = j.at("pooling_mode").get<std::string>();
        if (m == "mean") return pooling_type::mean;
        if (m == "cls") return pooling_type::cls;
        if (m == "max") return pooling_type::max;
        if (m == "lasttoken") return pooling_type::last;
        throw format_error("'" + f + "' pooling_mode '" + m + "' is not supported (mean, cls, max, lasttoken)");
    }
    for (const char* k : {"pooling_mode_mean_sqrt_len_tokens", "pooling_mode_weightedmean_tokens"})
        if (flag(j, k, f)) throw format_error("'" + f + "' sets " + std::string(k) + ", which is not supported");
    int n = 0;
    pooling_type p_out = pooling_type::mean;
    const std::pair<const char*, pooling_type> modes[] = {{"pooling_mode_mean_tokens", pooling_type::mean},
                                                          {"pooling_mode_cls_token", pooling_type::cls},
                                                          {"pooling_mode_max_tokens", pooling_type::max},
                                                          {"pooling_mode_lasttoken", pooling_type::last}};
    for (const auto& [k, v] : modes)
        if (flag(j, k, f)) { ++n; p_out = v; }
    if (n != 1)
        throw format_error("'" + f + "' enables " + std::to_string(n) +
                           " pooling modes; exactly one of mean, cls, max, lasttoken is supported "
                           "(several are concatenated by sentence-transformers)");
    return p_out;
}

inline gelu_form gelu_from(const std::string& act) {
    if (act == "gelu") return gelu_form::erf;
    if (act == "gelu_new" || act == "gelu_pytorch_tanh" || act == "gelu_fast") return gelu_form::tanh;
    throw format_error("config.json hidden_act '" + act +
                       "' is not supported (gelu = erf form; gelu_new, gelu_pytorch_tanh, gelu_fast = tanh form)");
}

/// safetensors tensor -> the GGUF description encoder_model binds (ne reversed, same bytes).
inline gguf::tensor_info as_gguf(const safetensors::tensor_info& t) {
    gguf::tensor_info g;
    g.name = t.name;
    g.type = safetensors::weight_type(t);
    if (t.shape.empty()) throw shape_error("tensor '" + t.name + "' is a scalar, a vector or matrix was expected");
    for (std::size_t i = t.shape.size(); i-- > 0;) g.ne.push_back(t.shape[i]);
    g.n_bytes = t.n_bytes();
    g.data = t.data;
    const std::size_t es = safetensors::dtype_size(t.type);
    if (reinterpret_cast<std::uintptr_t>(t.data) % es != 0)
        throw format_error("tensor '" + t.name + "' data is not aligned to its " + std::to_string(es) +
                           "-byte elements");
    return g;
}
} // namespace bert_st_detail

/// Reads modules.json, 1_Pooling/config.json, sentence_bert_config.json and the
/// tokenizer files of `dir`. A directory without modules.json is a plain
/// BertModel: mean pooling (what sentence-transformers wraps such a model in),
/// no normalisation, no truncation beyond the position table.
inline sentence_transformers_config read_sentence_transformers(const std::string& dir) {
    namespace fs = std::filesystem;
    using namespace bert_st_detail;
    sentence_transformers_config st;
    bool st_lower = false; // sentence_bert_config.json's do_lower_case: text.lower() before the tokenizer
    const fs::path root(dir);
    if (!fs::is_directory(root)) throw io_error("'" + dir + "' is not a directory");
    fs::path tdir = root;
    const auto modules = root / "modules.json";
    if (fs::exists(modules)) {
        st.sentence_transformers = true;
        nlohmann::json mj;
        {
            std::ifstream in(modules, std::ios::binary);
            if (!in) throw io_error("cannot open '" + modules.string() + "'");
            try {
                mj = nlohmann::json::parse(in);
            } catch (const nlohmann::json::exception& e) {
                throw format_error("'" + modules.string() + "' is not valid JSON: " + e.what());
            }
        }
        if (!mj.is_array()) throw format_error("'" + modules.string() + "' is not a JSON array");
        bool have_transformer = false, have_pooling = false;
        for (const auto& m : mj) {
            if (!m.is_object() || !m.contains("type") || !m.at("type").is_string())
                throw format_error("'" + modules.string() + "' has a module without a type string: " + m.dump());
            const auto type = m.at("type").get<std::string>();
            const auto path = m.contains("path") && m.at("path").is_string() ? m.at("path").get<std::string>() : "";
            if (path.find("..") != std::string::npos || (!path.empty() && path.front() == '/'))
                throw format_error("'" + modules.string() + "' module path '" + path + "' leaves the directory");
            if (type == "sentence_transformers.models.Transformer") {
                if (have_transformer) throw format_error("'" + modules.string() + "' has two Transformer modules");
                have_transformer = true;
                tdir = root / path;
            } else if (type == "sentence_transformers.models.Pooling") {
                if (have_pooling) throw format_error("'" + modules.string() + "' has two Pooling modules");
                have_pooling = true;
                st.pooling = pooling_from(root / path / "config.json");
            } else if (type == "sentence_transformers.models.Normalize") {
                st.normalize = true;
            } else {
                throw format_error("'" + modules.string() + "' module '" + type +
                                   "' is not supported (Transformer, Pooling and Normalize are)");
            }
        }
        if (!have_transformer) throw format_error("'" + modules.string() + "' has no Transformer module");
        if (!have_pooling) st.pooling = pooling_type::none; // token embeddings, as sentence-transformers returns
        const auto sb = tdir / "sentence_bert_config.json";
        if (fs::exists(sb)) {
            const safetensors::config c(sb.string());
            st.max_seq_length = c.get_or<std::size_t>("max_seq_length", 0);
            if (st.max_seq_length == 1 || st.max_seq_length > (std::size_t(1) << 24))
                throw format_error("'" + sb.string() + "' max_seq_length = " + std::to_string(st.max_seq_length) +
                                   " is out of range (2.." + std::to_string(std::size_t(1) << 24) + ")");
            st_lower = c.get_or<bool>("do_lower_case", false);
        }
    }
    st.dir = tdir.string();
    st.weights_path = (tdir / "model.safetensors").string();
    if (!fs::exists(st.weights_path))
        throw io_error("'" + st.weights_path + "' is missing (only safetensors weights are read; convert "
                       "pytorch_model.bin once with torch)");
    const auto cfg = tdir / "config.json";
    if (!fs::exists(cfg)) throw io_error("'" + cfg.string() + "' is missing");
    st.gelu = gelu_from(safetensors::config(cfg.string()).get_or<std::string>("hidden_act", "gelu"));
    if (fs::exists(tdir / "tokenizer.json")) {
        st.tokenizer_path = (tdir / "tokenizer.json").string();
    } else if (fs::exists(tdir / "vocab.txt")) {
        st.tokenizer_path = (tdir / "vocab.txt").string();
        const auto tc = tdir / "tokenizer_config.json";
        st.lowercase = fs::exists(tc) ? safetensors::config(tc.string()).get_or<bool>("do_lower_case", true) : true;
    } // else: no tokenizer (ids only)
    if (st_lower) {
        // Python's str.lower() before tokenising is only reproduced when the tokenizer lower-cases anyway.
        bool tok_lower = st.lowercase;
        if (!st.tokenizer_path.empty() && fs::path(st.tokenizer_path).filename() == "tokenizer.json") {
            const auto tj = read_json(st.tokenizer_path);
            tok_lower = tj.contains("normalizer") && tj["normalizer"].is_object() &&
                        tj["normalizer"].value("lowercase", false);
        }
        if (!tok_lower)
            throw format_error("'" + dir + "/sentence_bert_config.json' sets do_lower_case for a cased tokenizer, "
                               "which is not supported");
    }
    return st;
}

/// Hyperparameters of a Hugging Face BERT config.json, as bert_hparams (arch "bert").
inline bert_hparams bert_hparams_from_config(const safetensors::config& c, pooling_type pooling) {
    using namespace bert_st_detail;
    const auto model_type = c.get_or<std::string>("model_type", "bert");
    if (model_type != "bert")
        throw format_error("config.json model_type '" + model_type + "' is not supported (bert)");
    const auto pos = c.get_or<std::string>("position_embedding_type", "absolute");
    if (pos != "absolute")
        throw format_error("config.json position_embedding_type '" + pos + "' is not supported (absolute)");
    bert_hparams h;
    h.arch = "bert";
    h.n_embd = dim(c, "hidden_size", bert_detail::dim_limit);
    h.n_layer = dim(c, "num_hidden_layers", 4096);
    h.n_head = dim(c, "num_attention_heads", 4096);
    h.n_head_kv = h.n_head;
    h.n_ff = dim(c, "intermediate_size", bert_detail::dim_limit);
    h.n_ctx_train = dim(c, "max_position_embeddings", std::uint64_t(1) << 24);
    h.n_vocab = dim(c, "vocab_size", std::uint64_t(1) << 31);
    h.n_token_types = c.has("type_vocab_size") ? dim(c, "type_vocab_size", 1024) : 2;
    if (h.n_embd % h.n_head != 0)
        throw format_error("config.json hidden_size = " + std::to_string(h.n_embd) +
                           " is not a multiple of num_attention_heads = " + std::to_string(h.n_head));
    h.head_dim = h.n_embd / h.n_head;
    h.n_rot = h.head_dim;
    h.norm_eps = bert_detail::checked_eps("layer_norm_eps", c.get_or<float>("layer_norm_eps", 1e-12f));
    h.rms_eps = h.norm_eps;
    h.pooling = pooling;
    return h;
}

/// The tensors of a BERT safetensors file under GGUF `bert` names.
inline std::map<std::string, gguf::tensor_info> bert_tensors_from_safetensors(const safetensors::file& f,
                                                                              std::size_t n_layer) {
    using namespace bert_st_detail;
    std::string pre;
    if (!f.find("embeddings.word_embeddings.weight") && f.find("bert.embeddings.word_embeddings.weight")) pre = "bert.";
    std::map<std::string, gguf::tensor_info> out;
    auto put = [&](const std::string& gguf_name, const std::string& hf, bool required) {
        const auto* t = f.find(pre + hf);
        if (!t) {
            if (required)
                throw format_error("'" + f.path() + "' has no tensor '" + pre + hf + "' (for " + gguf_name + ")");
            return;
        }
        out.emplace(gguf_name, as_gguf(*t));
    };
    // LayerNorm parameters: weight/bias, or gamma/beta in old TensorFlow-converted checkpoints
    auto put_norm = [&](const std::string& gguf_name, const std::string& hf) {
        const bool old = !f.find(pre + hf + ".weight") && f.find(pre + hf + ".gamma");
        put(gguf_name + ".weight", hf + (old ? ".gamma" : ".weight"), true);
        put(gguf_name + ".bias", hf + (old ? ".beta" : ".bias"), true);
    };
    auto put_linear = [&](const std::string& gguf_name, const std::string& hf) {
        put(gguf_name + ".weight", hf + ".weight", true);
        put(gguf_name + ".bias", hf + ".bias", false);
    };
    put("token_embd.weight", "embeddings.word_embeddings.weight", true);
    put("position_embd.weight", "embeddings.position_embeddings.weight", true);
    put("token_types.weight", "embeddings.token_type_embeddings.weight", false);
    put_norm("token_embd_norm", "embeddings.LayerNorm");
    for (std::size_t il = 0; il < n_layer; ++il) {
        const std::string g = "blk." + std::to_string(il) + ".", h = "encoder.layer." + std::to_string(il) + ".";
        put_linear(g + "attn_q", h + "attention.self.query");
        put_linear(g + "attn_k", h + "attention.self.key");
        put_linear(g + "attn_v", h + "attention.self.value");
        put_linear(g + "attn_output", h + "attention.output.dense");
        put_norm(g + "attn_output_norm", h + "attention.output.LayerNorm");
        put_linear(g + "ffn_up", h + "intermediate.dense");
        put_linear(g + "ffn_down", h + "output.dense");
        put_norm(g + "layer_output_norm", h + "output.LayerNorm");
    }
    if (f.find(pre + "encoder.layer." + std::to_string(n_layer) + ".attention.self.query.weight"))
        throw format_error("'" + f.path() + "' has more layers than config.json's num_hidden_layers = " +
                           std::to_string(n_layer));
    return out;
}

/// Token ids of `text` as sentence-transformers makes them: [CLS] wordpieces [SEP],
/// truncated to max_seq_length tokens (the wordpieces are cut, [SEP] kept, as
/// transformers' truncation does); 0 = no limit.
inline std::vector<std::int32_t> sentence_transformers_encode(const tokenizer::tokenizer& tok, std::string_view text,
                                                              std::size_t max_seq_length) {
    auto ids = tok.encode(text, true);
    if (max_seq_length >= 2 && ids.size() > max_seq_length) {
        const auto sep = ids.back();
        ids.resize(max_seq_length - 1);
        ids.push_back(sep);
    }
    return ids;
}

} // namespace archetype::arch

namespace archetype {

/// Loads the Transformer module of a sentence-transformers (or plain BertModel)
/// directory as encoder_model<Enc>. PoolingFromFile takes the Pooling module's
/// mode; the Encoder must be a post-norm LayerNorm GeluMLP with learned
/// positions whose GELU form matches config.json's hidden_act.
template <class Enc>
    requires EncoderModel<Enc>
encoder_model<Enc> load_sentence_transformers(const std::string& dir) {
    static_assert(detail::is_learned_positions<typename Enc::position>,
                  "archetype: BERT checkpoints have learned positions: use LearnedPositions<> (the default)");
    static_assert(Enc::placement == norm_placement::post && std::is_same_v<typename Enc::norm, LayerNorm>,
                  "archetype: BERT checkpoints use post-norm LayerNorm blocks (the Encoder default)");
    static_assert(!Enc::ffn::gated && requires { Enc::ffn::form; },
                  "archetype: BERT checkpoints use GeluMLP (GeluMLPWith<gelu_form::erf> for hidden_act \"gelu\")");
    const auto st = arch::read_sentence_transformers(dir);
    if (Enc::ffn::form != st.gelu)
        throw shape_error(std::string("the model type uses ") + (Enc::ffn::form == gelu_form::erf ? "erf" : "tanh") +
                          " GELU but '" + st.dir + "/config.json' hidden_act means the " +
                          (st.gelu == gelu_form::erf ? "erf form: use GeluMLPWith<gelu_form::erf>"
                                                     : "tanh form: use GeluMLP"));
    const safetensors::config cfg((std::filesystem::path(st.dir) / "config.json").string());
    auto hp = arch::bert_hparams_from_config(cfg, st.pooling);
    auto file = std::make_shared<const safetensors::file>(st.weights_path);
    auto tensors = arch::bert_tensors_from_safetensors(*file, hp.n_layer);
    return encoder_model<Enc>(std::move(hp), std::move(tensors), std::move(file));
}

} // namespace archetype
