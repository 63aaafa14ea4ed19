#pragma once
// A Hugging Face tokenizer.json, the tokenizer of a checkpoint directory:
//  - model "WordPiece": load_wordpiece (BERT, MiniLM);
//  - model "BPE" with a byte-level pre-tokenizer (GPT-2, Llama 3, Qwen 2, SmolLM,
//    StarCoder, OLMo, ...): bpe_tokenizer with the file's own split patterns
//    (`Split{Regex, "Isolated"}` steps, `Digits`, `ByteLevel{use_regex}`), merges (as
//    "a b" strings or [a, b] pairs), `ignore_merges`, the added tokens (special ones as
//    control tokens, others as user-defined; both are cut out of the text first, as HF
//    does) and the BOS/EOS its post-processor adds (TemplateProcessing, RobertaProcessing,
//    or a Sequence holding one).
//  - model "BPE" in SentencePiece style (Llama 2, Mistral, Gemma 2, Phi-3): spaces as
//    "▁" by the Prepend + Replace normaliser or a Metaspace pre-tokenizer (split off),
//    byte_fallback: spm_bpe_tokenizer.
//  - model "Unigram" (T5, ALBERT, XLM-R re-saved by tokenizers) with a Metaspace
//    pre-tokenizer: unigram_tokenizer (Viterbi over the piece scores).
// The NFC normaliser is applied (unicode::nfc). Whatever else the file asks for — other
// normalisers, a pre-tokenizer step or split behaviour not listed, a subword prefix — is
// a format_error naming it, never ignored. BOS/EOS ids: the post-processor's tokens; else tokenizer_config.json's
// bos_token / eos_token beside the file; else config.json's bos_token_id / eos_token_id.
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "archetype/core/error.hpp"
#include "archetype/runtime/tokenizer/bpe.hpp"
#include "archetype/runtime/tokenizer/bpe_pre.hpp"
#include "archetype/runtime/tokenizer/load.hpp"
#include "archetype/runtime/tokenizer/spm_bpe.hpp"
#include "archetype/runtime/tokenizer/tokenizer.hpp"
#include "archetype/runtime/tokenizer/unigram.hpp"
#include "archetype/runtime/unicode.hpp"

namespace archetype::tokenizer {

namespace detail::tj {
using json = nlohmann::json;

inline json read_json(const std::filesystem::path& p) {
    std::ifstream in(p, std::ios::binary);
    if (!in) throw io_error("cannot open '" + p.string() + "'");
    std::stringstream ss;
    ss << in.rdbuf();
    try {
        return json::parse(ss.str());
    } catch (const std::exception& e) {
        throw format_error("'" + p.string() + "' is not valid JSON: " + e.what());
    }
}

inline std::string type_of(const json& j) {
    return j.is_object() && j.contains("type") && j["type"].is_string() ? j["type"].get<std::string>() : "";
}

// One pre-tokenizer step as split patterns; sets `byte_level` when it is ByteLevel.
inline void add_step(const json& step, std::vector<std::string>& patterns, bool& byte_level, const std::string& where) {
    const auto t = type_of(step);
    if (t == "Sequence") {
        for (const auto& s : step.at("pretokenizers")) add_step(s, patterns, byte_level, where);
    } else if (t == "ByteLevel") {
        if (step.value("add_prefix_space", false))
            throw format_error(where + ": ByteLevel add_prefix_space=true is not supported");
        byte_level = true;
        if (step.value("use_regex", true)) patterns.emplace_back(detail::pre::gpt2_re);
    } else if (t == "Split") {
        const auto& pat = step.at("pattern");
        std::string p;
        if (pat.contains("Regex")) p = pat["Regex"].get<std::string>();
        else if (pat.contains("String")) {
            // A literal: every character escaped.
            for (const char c : pat["String"].get<std::string>()) {
                if (std::string_view("\\^$.|?*+()[]{}").find(c) != std::string_view::npos) p += '\\';
                p += c;
            }
        } else throw format_error(where + ": Split pattern is neither Regex nor String");
        const auto behavior = step.value("behavior", std::string("Isolated"));
        if (behavior != "Isolated")
            throw format_error(where + ": Split behavior '" + behavior + "' is not supported (only Isolated)");
        if (step.value("invert", false)) throw format_error(where + ": Split invert=true is not supported");
        patterns.push_back(std::move(p));
    } else if (t == "Digits") {
        patterns.emplace_back(step.value("individual_digits", false) ? R"(\p{N})" : R"(\p{N}+)");
    } else {
        throw format_error(where + ": pre_tokenizer '" + (t.empty() ? step.dump().substr(0, 60) : t) +
                           "' is not supported with a BPE model");
    }
}

inline std::int32_t id_of(const std::vector<std::string>& tokens, const std::string& s) {
    for (std::size_t i = 0; i < tokens.size(); ++i)
        if (tokens[i] == s) return static_cast<std::int32_t>(i);
    return -1;
}

inline std::string token_text(const json& v) {
    if (v.is_string()) return v.get<std::string>();
    if (v.is_object() && v.contains("content") && v["content"].is_string()) return v["content"].get<std::string>();
    return "";
}

inline std::int32_t first_id(const json& v) {
    if (v.is_number_integer()) return v.get<std::int32_t>();
    if (v.is_array() && !v.empty() && v[0].is_number_integer()) return v[0].get<std::int32_t>();
    return -1;
}

// The SentencePiece style of a BPE file, or nothing when it is byte-level: Llama 2's
// Prepend("▁") + Replace(" ", "▁") normaliser (the prefix on every text between added
// tokens), or a Metaspace pre-tokenizer with split = false (prefix by prepend_scheme).
inline std::optional<spm_bpe_tokenizer::prefix> sentencepiece_style(const json& j, const std::string& where) {
    const json none;
    const auto& n = j.contains("normalizer") ? j["normalizer"] : none;
    const auto& pt = j.contains("pre_tokenizer") ? j["pre_tokenizer"] : none;
    const std::string space = "\xE2\x96\x81";
    if (type_of(pt) == "Metaspace") {
        if (!n.is_null()) throw format_error(where + ": normalizer '" + type_of(n) + "' with a Metaspace pre-tokenizer is not supported");
        if (pt.value("replacement", space) != space) throw format_error(where + ": Metaspace replacement other than U+2581");
        if (pt.value("split", false)) throw format_error(where + ": Metaspace split=true is not supported");
        const auto scheme = pt.contains("prepend_scheme") ? pt["prepend_scheme"].get<std::string>()
                                                          : (pt.value("add_prefix_space", true) ? "always" : "never");
        if (scheme == "always") return spm_bpe_tokenizer::prefix::metaspace_always;
        if (scheme == "first") return spm_bpe_tokenizer::prefix::metaspace_first;
        if (scheme == "never") return spm_bpe_tokenizer::prefix::never;
        throw format_error(where + ": Metaspace prepend_scheme '" + scheme + "' is not supported");
    }
    if (type_of(n) != "Sequence") return std::nullopt;
    bool prepend = false, replace = false;
    std::string other;
    for (const auto& step : n.at("normalizers")) {
        const auto t = type_of(step);
        if (t == "Prepend" && step.value("prepend", std::string()) == space) prepend = true;
        else if (t == "Replace" && step.at("pattern").value("String", std::string()) == " " &&
                 step.value("content", std::string()) == space) replace = true;
        else other = t;
    }
    if (!prepend && !replace) return std::nullopt; // not SentencePiece-style: the byte-level path decides
    if (!other.empty()) throw format_error(where + ": normalizer step '" + other + "' is not supported");
    if (!replace) throw format_error(where + ": a SentencePiece-style normalizer without Replace(' ', U+2581)");
    if (!pt.is_null()) throw format_error(where + ": pre_tokenizer '" + type_of(pt) + "' after a SentencePiece normalizer");
    return prepend ? spm_bpe_tokenizer::prefix::every_text : spm_bpe_tokenizer::prefix::never;
}

// BOS/EOS the post-processor adds to a single sequence.
inline void post_processor_specials(const json& pp, const std::vector<std::string>& tokens, std::int32_t& bos,
                                    std::int32_t& eos, bool& add_bos, bool& add_eos, const std::string& where) {
    const auto t = type_of(pp);
    if (pp.is_null() || t == "ByteLevel") return;
    if (t == "Sequence") {
        for (const auto& p : pp.at("processors")) post_processor_specials(p, tokens, bos, eos, add_bos, add_eos, where);
        return;
    }
    auto special_id = [&](const std::string& name) {
        const auto id = id_of(tokens, name);
        if (id < 0) throw format_error(where + ": post_processor token '" + name + "' is not in the vocabulary");
        return id;
    };
    if (t == "TemplateProcessing") {
        const auto& single = pp.at("single");
        bool seen_a = false;
        for (const auto& piece : single) {
            if (piece.contains("Sequence")) { seen_a = true; continue; }
            const auto name = piece.at("SpecialToken").at("id").get<std::string>();
            if (!seen_a) { bos = special_id(name); add_bos = true; }
            else { eos = special_id(name); add_eos = true; }
        }
        return;
    }
    if (t == "RobertaProcessing" || t == "BertProcessing") {
        bos = special_id(pp.at("cls").at(0).get<std::string>());
        eos = special_id(pp.at("sep").at(0).get<std::string>());
        add_bos = add_eos = true;
        return;
    }
    throw format_error(where + ": post_processor '" + t + "' is not supported");
}
struct specials {
    std::int32_t bos = -1, eos = -1;
    bool add_bos = false, add_eos = false;
};
// BOS/EOS: the post-processor's tokens; else tokenizer_config.json's bos_token / eos_token
// beside the file; else config.json's bos_token_id / eos_token_id.
inline specials special_ids(const json& j, const std::filesystem::path& p, const std::vector<std::string>& tokens,
                            const std::string& where) {
    specials sp;
    if (j.contains("post_processor"))
        post_processor_specials(j["post_processor"], tokens, sp.bos, sp.eos, sp.add_bos, sp.add_eos, where);
    const auto dir = p.parent_path();
    if (std::filesystem::exists(dir / "tokenizer_config.json")) {
        const auto tc = read_json(dir / "tokenizer_config.json");
        if (sp.bos < 0 && tc.contains("bos_token")) sp.bos = id_of(tokens, token_text(tc["bos_token"]));
        if (sp.eos < 0 && tc.contains("eos_token")) sp.eos = id_of(tokens, token_text(tc["eos_token"]));
    }
    if (std::filesystem::exists(dir / "config.json")) {
        const auto cfg = read_json(dir / "config.json");
        if (sp.bos < 0 && cfg.contains("bos_token_id")) sp.bos = first_id(cfg["bos_token_id"]);
        if (sp.eos < 0 && cfg.contains("eos_token_id")) sp.eos = first_id(cfg["eos_token_id"]);
    }
    return sp;
}

// A Unigram model: vocab [[piece, score], ...] (the id is the position), unk_id,
// byte_fallback; normaliser none or NFC; pre-tokenizer Metaspace (any prepend_scheme,
// split or not). Added tokens either name a vocabulary entry by its id or extend it.
inline std::unique_ptr<tokenizer> load_unigram(const json& j, const std::filesystem::path& p, const std::string& where) {
    const auto& m = j.at("model");
    unigram_tokenizer::config c;
    const auto& vocab = m.at("vocab");
    if (!vocab.is_array() || vocab.empty()) throw format_error(where + ": Unigram vocab is not a non-empty array");
    if (vocab.size() > (std::size_t(1) << 24)) throw format_error(where + ": Unigram vocab has more than 2^24 pieces");
    for (const auto& e : vocab) {
        if (!e.is_array() || e.size() != 2 || !e[0].is_string() || !e[1].is_number())
            throw format_error(where + ": Unigram vocab entry " + e.dump().substr(0, 60) + " is not [piece, score]");
        c.tokens.push_back(e[0].get<std::string>());
        c.scores.push_back(e[1].get<double>());
    }
    c.types.assign(c.tokens.size(), static_cast<std::int32_t>(token_type::normal));
    for (const auto& t : j.value("added_tokens", json::array())) {
        const auto id = detail::json_int(t.at("id"), where + ": added token id");
        const auto content = t.at("content").get<std::string>();
        if (id < 0 || id > (1 << 24)) throw format_error(where + ": added token id " + std::to_string(id) + " out of range");
        const auto u = static_cast<std::size_t>(id);
        if (u < c.tokens.size() && c.tokens[u] != content)
            throw format_error(where + ": added token '" + content + "' has id " + std::to_string(id) + ", which is '" +
                               c.tokens[u] + "'");
        if (u > c.tokens.size())
            throw format_error(where + ": added token '" + content + "' has id " + std::to_string(id) +
                               " beyond the next free id " + std::to_string(c.tokens.size()));
        if (u == c.tokens.size()) {
            c.tokens.push_back(content);
            c.scores.push_back(0.0);
            c.types.push_back(0);
        }
        c.types[u] = static_cast<std::int32_t>(t.value("special", false) ? token_type::control : token_type::user_defined);
    }
    if (!m.contains("unk_id") || m["unk_id"].is_null())
        throw format_error(where + ": a Unigram model without unk_id is not supported");
    c.unk = static_cast<std::int32_t>(detail::json_int(m["unk_id"], where + ": unk_id"));
    c.byte_fallback = m.value("byte_fallback", false);
    const json none;
    const auto& n = j.contains("normalizer") ? j["normalizer"] : none;
    if (!n.is_null()) {
        if (type_of(n) != "NFC")
            throw format_error(where + ": normalizer '" + type_of(n) + "' is not supported with a Unigram model (NFC is)");
        c.nfc = true;
    }
    const auto& pt = j.contains("pre_tokenizer") ? j["pre_tokenizer"] : none;
    if (type_of(pt) != "Metaspace")
        throw format_error(where + ": pre_tokenizer '" + (pt.is_null() ? std::string("none") : type_of(pt)) +
                           "' is not supported with a Unigram model (Metaspace is)");
    if (pt.value("replacement", std::string("\xE2\x96\x81")) != "\xE2\x96\x81")
        throw format_error(where + ": Metaspace replacement other than U+2581");
    c.split = pt.value("split", true);
    const auto scheme = pt.contains("prepend_scheme") ? pt["prepend_scheme"].get<std::string>()
                                                      : (pt.value("add_prefix_space", true) ? "always" : "never");
    if (scheme == "always") c.prepend = unigram_tokenizer::prefix::always;
    else if (scheme == "first") c.prepend = unigram_tokenizer::prefix::first;
    else if (scheme == "never") c.prepend = unigram_tokenizer::prefix::never;
    else throw format_error(where + ": Metaspace prepend_scheme '" + scheme + "' is not supported");
    const auto sp = special_ids(j, p, c.tokens, where);
    c.bos = sp.bos;
    c.eos = sp.eos;
    c.add_bos = sp.add_bos;
    c.add_eos = sp.add_eos;
    return std::make_unique<unigram_tokenizer>(std::move(c));
}
} // namespace detail::tj

/// The tokenizer of a Hugging Face tokenizer.json (see the top of this file).
inline std::unique_ptr<tokenizer> load_tokenizer_json(const std::string& path) {
    namespace tj = detail::tj;
    const std::filesystem::path p(path);
    const auto j = tj::read_json(p);
    const std::string where = "'" + path + "'";
    try {
        const auto& m = j.at("model");
        const auto mtype = tj::type_of(m);
        if (mtype == "WordPiece") return load_wordpiece(path);
        if (mtype == "Unigram") return tj::load_unigram(j, p, where);
        if (mtype != "BPE")
            throw format_error(where + ": model type '" + mtype + "' is not supported (BPE, WordPiece, Unigram)");
        for (const char* k : {"continuing_subword_prefix", "end_of_word_suffix"})
            if (m.contains(k) && !m[k].is_null() && !m[k].get<std::string>().empty())
                throw format_error(where + ": BPE " + k + " is not supported");
        if (m.contains("dropout") && !m["dropout"].is_null() && m["dropout"].get<double>() != 0.0)
            throw format_error(where + ": BPE dropout is not supported");

        bpe_tokenizer::config c;
        const auto& vocab = m.at("vocab");
        std::size_t n = vocab.size();
        for (const auto& t : j.value("added_tokens", tj::json::array())) {
            const auto id = detail::json_int(t.at("id"), where + ": added token id");
            if (id < 0 || id > (1 << 24)) throw format_error(where + ": added token id " + std::to_string(id) + " out of range");
            n = std::max(n, static_cast<std::size_t>(id) + 1);
        }
        c.tokens.assign(n, std::string());
        c.types.assign(n, static_cast<std::int32_t>(token_type::normal));
        std::vector<bool> seen(n, false);
        auto place = [&](std::int64_t id, const std::string& tok) {
            if (id < 0 || static_cast<std::size_t>(id) >= n)
                throw format_error(where + ": token '" + tok + "' has id " + std::to_string(id) + " out of 0.." +
                                   std::to_string(n - 1));
            if (seen[static_cast<std::size_t>(id)] && c.tokens[static_cast<std::size_t>(id)] != tok)
                throw format_error(where + ": id " + std::to_string(id) + " is both '" +
                                   c.tokens[static_cast<std::size_t>(id)] + "' and '" + tok + "'");
            seen[static_cast<std::size_t>(id)] = true;
            c.tokens[static_cast<std::size_t>(id)] = tok;
        };
        for (const auto& [tok, idv] : vocab.items()) place(detail::json_int(idv, where + ": the id of token '" + tok + "'"), tok);
        for (const auto& t : j.value("added_tokens", tj::json::array())) {
            const auto id = detail::json_int(t.at("id"), where + ": added token id");
            place(id, t.at("content").get<std::string>());
            c.types[static_cast<std::size_t>(id)] = static_cast<std::int32_t>(
                t.value("special", false) ? token_type::control : token_type::user_defined);
        }
        for (std::size_t i = 0; i < n; ++i)
            if (!seen[i]) throw format_error(where + ": no token has id " + std::to_string(i));

        for (const auto& mg : m.at("merges")) {
            if (mg.is_string()) c.merges.push_back(mg.get<std::string>());
            else if (mg.is_array() && mg.size() == 2) c.merges.push_back(mg[0].get<std::string>() + " " + mg[1].get<std::string>());
            else throw format_error(where + ": merge " + mg.dump().substr(0, 60) + " is neither 'a b' nor [a, b]");
        }
        c.ignore_merges = m.value("ignore_merges", false);

        const auto sp = tj::special_ids(j, p, c.tokens, where);
        c.bos = sp.bos;
        c.eos = sp.eos;
        c.add_bos = sp.add_bos;
        c.add_eos = sp.add_eos;

        if (const auto style = tj::sentencepiece_style(j, where)) {
            spm_bpe_tokenizer::config s;
            s.tokens = std::move(c.tokens);
            s.types = std::move(c.types);
            s.merges = std::move(c.merges);
            s.prepend = *style;
            s.fuse_unk = m.value("fuse_unk", false);
            s.ignore_merges = c.ignore_merges;
            const auto unk = m.contains("unk_token") && m["unk_token"].is_string() ? m["unk_token"].get<std::string>() : "";
            s.unk = unk.empty() ? -1 : tj::id_of(s.tokens, unk);
            s.bos = c.bos; s.eos = c.eos; s.add_bos = c.add_bos; s.add_eos = c.add_eos;
            return std::make_unique<spm_bpe_tokenizer>(std::move(s));
        }
        if (m.value("byte_fallback", false))
            throw format_error(where + ": byte_fallback with a byte-level pre-tokenizer is not supported");

        bool byte_level = false;
        std::vector<std::string> patterns;
        if (j.contains("pre_tokenizer") && !j["pre_tokenizer"].is_null())
            tj::add_step(j["pre_tokenizer"], patterns, byte_level, where);
        if (!byte_level)
            throw format_error(where + ": a BPE model without a ByteLevel pre-tokenizer is not supported");
        const std::string gpt2(detail::pre::gpt2_re);
        if (patterns.size() == 1 && patterns[0] == gpt2) c.pre = bpe_pre::gpt2;
        else if (patterns.size() == 2 && patterns[0] == R"(\p{N})" && patterns[1] == gpt2) c.pre = bpe_pre::smollm;
        else if (patterns.empty()) throw format_error(where + ": the pre-tokenizer splits nothing");
        else { c.pre = bpe_pre::patterns; c.patterns = std::move(patterns); }

        if (j.contains("normalizer") && !j["normalizer"].is_null()) {
            const auto t = tj::type_of(j["normalizer"]);
            if (t != "NFC") throw format_error(where + ": normalizer '" + t + "' is not supported with a BPE model (NFC is)");
            c.nfc = true;
        }

        return std::make_unique<bpe_tokenizer>(std::move(c));
    } catch (const nlohmann::json::exception& e) {
        throw format_error(where + ": unexpected tokenizer.json layout: " + e.what());
    }
}

} // namespace archetype::tokenizer
