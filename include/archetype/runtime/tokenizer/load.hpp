#pragma once
// Building a tokenizer from what a model ships: GGUF metadata (tokenizer.ggml.*), a
// BERT vocab.txt or tokenizer.json, an RWKV vocabulary file.
#include <cstdint>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "archetype/core/error.hpp"
#include "archetype/io/gguf.hpp"
#include "archetype/runtime/tokenizer/bpe.hpp"
#include "archetype/runtime/tokenizer/bpe_pre.hpp"
#include "archetype/runtime/tokenizer/rwkv_trie.hpp"
#include "archetype/runtime/tokenizer/spm.hpp"
#include "archetype/runtime/tokenizer/tokenizer.hpp"
#include "archetype/runtime/tokenizer/wordpiece.hpp"

namespace archetype::tokenizer {

namespace detail {
inline std::int32_t gguf_id(const gguf::file& f, std::string_view key) {
    return f.has(key) ? f.get<std::int32_t>(key) : -1;
}

/// A JSON integer, checked: a float such as 7e76 converted to an integer would be
/// undefined behaviour, so anything but an integer is a format_error naming `what`.
inline std::int64_t json_int(const nlohmann::json& v, const std::string& what) {
    if (!v.is_number_integer())
        throw format_error(what + " = " + v.dump().substr(0, 40) + " is not an integer");
    return v.get<std::int64_t>();
}
} // namespace detail

/// The tokenizer a GGUF file describes, chosen by tokenizer.ggml.model:
/// "llama" (SentencePiece, also Gemma's), "gpt2" (byte-level BPE; the pre-tokenizer by
/// tokenizer.ggml.pre, bpe_pre.hpp), "bert" (WordPiece in llama.cpp's spelling: word
/// starts carry "▁", continuations are bare). Anything else is a format_error naming it.
inline std::unique_ptr<tokenizer> load_tokenizer(const gguf::file& f) {
    const auto model = f.get<std::string>("tokenizer.ggml.model");
    auto tokens = f.get<std::vector<std::string>>("tokenizer.ggml.tokens");
    auto types = f.get_or<std::vector<std::int32_t>>("tokenizer.ggml.token_type", {});
    const auto bos = detail::gguf_id(f, "tokenizer.ggml.bos_token_id");
    const auto eos = detail::gguf_id(f, "tokenizer.ggml.eos_token_id");
    const auto unk = detail::gguf_id(f, "tokenizer.ggml.unknown_token_id");
    const auto pad = detail::gguf_id(f, "tokenizer.ggml.padding_token_id");
    if (model == "llama") {
        spm_tokenizer::config c;
        c.tokens = std::move(tokens);
        c.types = std::move(types);
        c.scores = f.get_or<std::vector<float>>("tokenizer.ggml.scores", {});
        c.bos = bos; c.eos = eos; c.unk = unk; c.pad = pad;
        c.add_bos = f.get_or<bool>("tokenizer.ggml.add_bos_token", true);
        c.add_eos = f.get_or<bool>("tokenizer.ggml.add_eos_token", false);
        c.add_space_prefix = f.get_or<bool>("tokenizer.ggml.add_space_prefix", true);
        return std::make_unique<spm_tokenizer>(std::move(c));
    }
    if (model == "gpt2") {
        const auto pre = f.get_or<std::string>("tokenizer.ggml.pre", "default");
        bpe_tokenizer::config c;
        const auto* rule = bpe_pre_by_name(pre);
        if (!rule)
            throw format_error("tokenizer.ggml.pre '" + pre + "' is not supported (docs/tokenizers.md lists the "
                               "pre-tokenizers archetype knows)");
        if (rule->gpt2_fast_path) c.pre = bpe_pre::gpt2;
        else if (rule->digits_then_gpt2) c.pre = bpe_pre::smollm;
        else {
            c.pre = bpe_pre::patterns;
            c.patterns.assign(rule->patterns.begin(), rule->patterns.end());
        }
        c.ignore_merges = rule->ignore_merges;
        c.tokens = std::move(tokens);
        c.types = std::move(types);
        c.merges = f.get<std::vector<std::string>>("tokenizer.ggml.merges");
        c.bos = bos; c.eos = eos; c.unk = unk; c.pad = pad;
        c.add_bos = f.get_or<bool>("tokenizer.ggml.add_bos_token", rule->add_bos);
        c.add_eos = f.get_or<bool>("tokenizer.ggml.add_eos_token", false);
        c.llama_specials = true;
        return std::make_unique<bpe_tokenizer>(std::move(c));
    }
    if (model == "bert") {
        wordpiece_tokenizer::config c;
        c.tokens.reserve(tokens.size());
        for (std::size_t i = 0; i < tokens.size(); ++i) {
            auto& t = tokens[i];
            const bool control = i < types.size() && types[i] == static_cast<std::int32_t>(token_type::control);
            if (control) c.tokens.push_back(std::move(t));
            else if (t.rfind(spm_space, 0) == 0) c.tokens.push_back(t.substr(spm_space.size()));
            else c.tokens.push_back("##" + t);
        }
        auto name = [&](std::int32_t id, const std::string& fallback) {
            return id >= 0 && static_cast<std::size_t>(id) < c.tokens.size() ? c.tokens[static_cast<std::size_t>(id)] : fallback;
        };
        c.unk = name(unk, "[UNK]");
        c.cls = name(bos, "[CLS]");
        c.sep = name(detail::gguf_id(f, "tokenizer.ggml.seperator_token_id") >= 0
                         ? detail::gguf_id(f, "tokenizer.ggml.seperator_token_id") : eos, "[SEP]");
        c.pad = name(pad, "[PAD]");
        // As llama.cpp reads the file: its CONTROL / USER_DEFINED / UNKNOWN tokens are the
        // specials, its normaliser, no limit on the length of a word.
        c.specials.clear();
        for (std::size_t i = 0; i < types.size() && i < c.tokens.size(); ++i) {
            const auto ty = static_cast<token_type>(types[i]);
            if (ty == token_type::control || ty == token_type::user_defined || ty == token_type::unknown)
                c.specials.push_back(c.tokens[i]);
        }
        c.llama_normaliser = true;
        c.max_chars = static_cast<std::size_t>(-1);
        return std::make_unique<wordpiece_tokenizer>(std::move(c));
    }
    throw format_error("tokenizer.ggml.model '" + model + "' is not supported (supported: llama, gpt2, bert)");
}

/// WordPiece from a BERT vocab.txt (one token per line, id = line number) or a
/// Hugging Face tokenizer.json with a WordPiece model (normaliser settings, special
/// tokens and the continuation prefix are read from it). `lowercase` applies to
/// vocab.txt only (tokenizer_config.json's do_lower_case).
inline std::unique_ptr<wordpiece_tokenizer> load_wordpiece(const std::string& path, bool lowercase = true) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw io_error("cannot open '" + path + "'");
    std::stringstream ss;
    ss << in.rdbuf();
    const std::string text = ss.str();
    wordpiece_tokenizer::config c;
    const auto first = text.find_first_not_of(" \t\r\n");
    if (first != std::string::npos && text[first] == '{') {
        nlohmann::json j;
        try {
            j = nlohmann::json::parse(text);
        } catch (const std::exception& e) {
            throw format_error("'" + path + "' is not valid JSON: " + e.what());
        }
        try {
            const auto& m = j.at("model");
            if (m.at("type").get<std::string>() != "WordPiece")
                throw format_error("'" + path + "' has model type '" + m.at("type").get<std::string>() +
                                   "', expected WordPiece");
            const auto& vocab = m.at("vocab");
            c.tokens.assign(vocab.size(), std::string());
            std::vector<bool> seen(vocab.size(), false);
            for (const auto& [tok, idv] : vocab.items()) {
                const auto id = detail::json_int(idv, "'" + path + "': the id of token '" + tok + "'");
                if (id < 0 || static_cast<std::size_t>(id) >= vocab.size() || seen[static_cast<std::size_t>(id)])
                    throw format_error("'" + path + "': token '" + tok + "' has id " + std::to_string(id) +
                                       ", ids must be 0.." + std::to_string(vocab.size() - 1) + " once each");
                seen[static_cast<std::size_t>(id)] = true;
                c.tokens[static_cast<std::size_t>(id)] = tok;
            }
            c.unk = m.value("unk_token", std::string("[UNK]"));
            c.prefix = m.value("continuing_subword_prefix", std::string("##"));
            if (m.contains("max_input_chars_per_word")) {
                const auto n = detail::json_int(m["max_input_chars_per_word"], "'" + path + "': max_input_chars_per_word");
                if (n < 1 || n > (1 << 20))
                    throw format_error("'" + path + "': max_input_chars_per_word = " + std::to_string(n) +
                                       " is out of range (1..1048576)");
                c.max_chars = static_cast<std::size_t>(n);
            }
            if (j.contains("normalizer") && j["normalizer"].is_object() &&
                j["normalizer"].value("type", std::string()) == "BertNormalizer") {
                const auto& n = j["normalizer"];
                c.lowercase = n.value("lowercase", true);
                c.clean_text = n.value("clean_text", true);
                c.handle_cjk = n.value("handle_chinese_chars", true);
                c.strip_accents = n.contains("strip_accents") && !n["strip_accents"].is_null()
                                      ? n["strip_accents"].get<bool>() : c.lowercase;
            }
            if (j.contains("added_tokens")) {
                c.specials.clear();
                for (const auto& t : j["added_tokens"]) c.specials.push_back(t.at("content").get<std::string>());
            }
        } catch (const nlohmann::json::exception& e) {
            throw format_error("'" + path + "': unexpected tokenizer.json layout: " + e.what());
        }
    } else {
        std::size_t pos = 0;
        while (pos < text.size()) {
            auto nl = text.find('\n', pos);
            if (nl == std::string::npos) nl = text.size();
            std::string t = text.substr(pos, nl - pos);
            if (!t.empty() && t.back() == '\r') t.pop_back();
            c.tokens.push_back(std::move(t));
            pos = nl + 1;
        }
        c.lowercase = lowercase;
        c.strip_accents = lowercase;
    }
    return std::make_unique<wordpiece_tokenizer>(std::move(c));
}

/// The RWKV world tokenizer from rwkv_vocab_v20230424.txt.
inline std::unique_ptr<rwkv_tokenizer> load_rwkv_world(const std::string& path) {
    return std::make_unique<rwkv_tokenizer>(read_rwkv_vocab(path));
}

} // namespace archetype::tokenizer
