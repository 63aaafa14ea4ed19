#pragma once
// GPT-2-style byte-level BPE (GGUF tokenizer.ggml.model = "gpt2"), as Hugging Face's
// ByteLevel pre-tokenizer + BPE model do it:
//  1. special tokens (CONTROL and USER_DEFINED) are cut out of the text first (from a
//     GGUF file as llama.cpp does it, ordered_specials; from tokenizer.json leftmost-longest);
//  2. the pre-tokenizer splits the rest into words: GPT-2's regex
//       's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
//     written out by hand over code points (the common case, kept fast), for "smollm"
//     (SmolLM/SmolLM2, StarCoder) each \p{N} code point split off first, like the
//     tokenizer.json's Digits(individual_digits) step; any other list of split patterns
//     (bpe_pre.hpp: Llama 3, Qwen 2, ...) through split_regex;
//  3. each word's bytes map to GPT-2's printable byte alphabet, one symbol per byte,
//     and merges apply by rank — unless `ignore_merges` is set and the whole word is a
//     token (Llama 3), which is then taken as it is.
#include <array>
#include <optional>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "archetype/core/error.hpp"
#include "archetype/runtime/tokenizer/merge.hpp"
#include "archetype/runtime/tokenizer/split_regex.hpp"
#include "archetype/runtime/tokenizer/tokenizer.hpp"
#include "archetype/runtime/unicode.hpp"
#include "archetype/runtime/unicode_nfc.hpp"

namespace archetype::tokenizer {

/// GPT-2's bytes_to_unicode: printable bytes stand for themselves, the others are
/// shifted to U+0100... so every byte is one visible code point.
inline std::array<char32_t, 256> gpt2_byte_to_cp() {
    std::array<char32_t, 256> m{};
    char32_t next = 256;
    for (int b = 0; b < 256; ++b) {
        const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
        m[static_cast<std::size_t>(b)] = printable ? static_cast<char32_t>(b) : next++;
    }
    return m;
}

enum class bpe_pre { gpt2, smollm, patterns };

/// Splits text into GPT-2 pre-tokenizer words (byte ranges of text).
inline void gpt2_split(std::string_view text, std::vector<std::pair<std::size_t, std::size_t>>& out) {
    using namespace unicode;
    // Decode once: code points, their byte offsets; invalid bytes count as "other".
    std::vector<char32_t> cps;
    std::vector<std::size_t> off;
    cps.reserve(text.size());
    off.reserve(text.size() + 1);
    for (std::size_t i = 0; i < text.size();) {
        const auto u = decode_utf8(text, i);
        cps.push_back(u.valid ? u.cp : char32_t(0xFFFFFFFF));
        off.push_back(i);
        i += u.len;
    }
    off.push_back(text.size());
    const std::size_t n = cps.size();
    auto cls = [&](std::size_t i) -> int { // 1 letter, 2 number, 3 space, 0 other
        const char32_t c = cps[i];
        if (c == 0xFFFFFFFF) return 0;
        if (is_whitespace(c)) return 3;
        const auto k = category_of(c);
        return k == category::letter ? 1 : k == category::number ? 2 : 0;
    };
    auto emit = [&](std::size_t a, std::size_t b) { out.emplace_back(off[a], off[b] - off[a]); };
    std::size_t i = 0;
    while (i < n) {
        const char32_t c = cps[i];
        // Contractions, case-sensitive as in GPT-2's pattern.
        if (c == '\'' && i + 1 < n) {
            const char32_t d = cps[i + 1];
            if (d == 's' || d == 't' || d == 'm' || d == 'd') { emit(i, i + 2); i += 2; continue; }
            if (i + 2 < n) {
                const char32_t e = cps[i + 2];
                if ((d == 'r' && e == 'e') || (d == 'v' && e == 'e') || (d == 'l' && e == 'l')) {
                    emit(i, i + 3); i += 3; continue;
                }
            }
        }
        // " ?" prefix: one U+0020 joins a following letter/number/other run.
        std::size_t j = i;
        if (c == ' ' && i + 1 < n && cls(i + 1) != 3) j = i + 1;
        const int k = cls(j);
        if (k != 3) {
            std::size_t e = j + 1;
            while (e < n && cls(e) == k) ++e;
            emit(i, e);
            i = e;
            continue;
        }
        // Whitespace: \s+(?!\S) leaves the last space of a run that precedes a
        // non-space (it then prefixes the next word); a single one falls to \s+.
        std::size_t e = i + 1;
        while (e < n && cls(e) == 3) ++e;
        if (e < n && e - i >= 2) --e;
        emit(i, e);
        i = e;
    }
}

class bpe_tokenizer final : public tokenizer {
public:
    struct config {
        std::vector<std::string> tokens;      // in GPT-2's byte alphabet (specials raw)
        std::vector<std::int32_t> types;      // token_type per token (empty: all normal)
        std::vector<std::string> merges;      // "left right", best first
        bpe_pre pre = bpe_pre::gpt2;
        std::vector<std::string> patterns;    // for bpe_pre::patterns: applied in turn
        bool ignore_merges = false;           // a word that is a token skips the merges
        bool nfc = false;                     // NFC-normalise text between special tokens
        std::int32_t bos = -1, eos = -1, unk = -1, pad = -1;
        bool add_bos = false, add_eos = false;
        /// Cut special-token text out as llama.cpp does (GGUF files; ordered_specials:
        /// CONTROL, USER_DEFINED and UNKNOWN tokens, longest first) instead of Hugging
        /// Face's leftmost-longest match of CONTROL and USER_DEFINED tokens (tokenizer.json).
        bool llama_specials = false;
    };

    explicit bpe_tokenizer(config c)
        : tokens_(std::move(c.tokens)), pre_(c.pre), add_bos_(c.add_bos), add_eos_(c.add_eos),
          ignore_merges_(c.ignore_merges), nfc_(c.nfc), llama_specials_(c.llama_specials) {
        n_vocab_ = tokens_.size();
        if (pre_ == bpe_pre::patterns) {
            if (c.patterns.empty()) throw format_error("a pattern pre-tokenizer needs at least one pattern");
            for (const auto& p : c.patterns) patterns_.emplace_back(p);
        }
        if (!c.types.empty() && c.types.size() != tokens_.size())
            throw format_error("token_type has " + std::to_string(c.types.size()) + " entries for " +
                               std::to_string(tokens_.size()) + " tokens");
        types_.resize(tokens_.size(), token_type::normal);
        for (std::size_t i = 0; i < c.types.size(); ++i) types_[i] = static_cast<token_type>(c.types[i]);
        set_special_ids(c.bos, c.eos, c.unk, c.pad, add_bos_, add_eos_);

        to_id_.reserve(tokens_.size());
        std::vector<std::int32_t> ordered;
        for (std::size_t i = 0; i < tokens_.size(); ++i) {
            const auto t = types_[i];
            if (t == token_type::control || t == token_type::user_defined) specials_.insert(tokens_[i], static_cast<std::int32_t>(i));
            else to_id_.emplace(tokens_[i], static_cast<std::int32_t>(i));
            if (t == token_type::control || t == token_type::user_defined || t == token_type::unknown)
                ordered.push_back(static_cast<std::int32_t>(i));
        }
        if (llama_specials_)
            ordered_.build(std::move(ordered), [&](std::int32_t id) -> const std::string& {
                return tokens_[static_cast<std::size_t>(id)];
            });
        byte_cp_ = gpt2_byte_to_cp();
        // Some vocabularies (SmolLM2's) lack a few bytes (C0 controls, 0xC0/0xC1, 0xF5+);
        // Hugging Face's BPE without unk_token drops such bytes, and so do we.
        for (int b = 0; b < 256; ++b) {
            std::string s;
            unicode::append_utf8(s, byte_cp_[static_cast<std::size_t>(b)]);
            const auto it = to_id_.find(s);
            byte_id_[static_cast<std::size_t>(b)] = it == to_id_.end() ? -1 : it->second;
            if (it == to_id_.end()) all_bytes_ = false;
            cp_byte_.emplace(byte_cp_[static_cast<std::size_t>(b)], static_cast<unsigned char>(b));
        }
        merges_.emplace(c.merges, [&](const std::string& t) {
            const auto it = to_id_.find(t);
            return it == to_id_.end() ? std::int32_t(-1) : it->second;
        });
    }

    std::vector<std::int32_t> encode(std::string_view text, bool add_special) const override {
        std::vector<std::int32_t> ids;
        if (add_special && add_bos_) ids.push_back(bos_);
        std::vector<std::pair<std::size_t, std::size_t>> words;
        std::vector<detail::symbol> syms;
        std::string normalised;
        const auto on_text = [&](std::string_view frag) {
            words.clear();
            if (nfc_) {
                normalised = unicode::nfc(frag);
                frag = normalised;
            }
            if (pre_ == bpe_pre::smollm) {
                // Each \p{N} code point becomes its own piece first.
                std::size_t start = 0;
                for (std::size_t i = 0; i < frag.size();) {
                    const auto u = unicode::decode_utf8(frag, i);
                    if (u.valid && unicode::is_number(u.cp)) {
                        if (i > start) split_offset(frag, start, i, words);
                        words.emplace_back(i, u.len);
                        start = i + u.len;
                    }
                    i += u.len;
                }
                if (start < frag.size()) split_offset(frag, start, frag.size(), words);
            } else if (pre_ == bpe_pre::patterns) {
                split_text(frag, patterns_, words);
            } else {
                gpt2_split(frag, words);
            }
            for (const auto& [s, n] : words) encode_word(frag.substr(s, n), syms, ids);
        };
        const auto on_special = [&](std::int32_t id) { ids.push_back(id); };
        if (llama_specials_) ordered_.split(text, on_text, on_special);
        else split_specials(specials_, text, on_text, on_special);
        if (add_special && add_eos_) ids.push_back(eos_);
        return ids;
    }

    std::string decode(std::span<const std::int32_t> ids) const override {
        std::string out;
        for (auto id : ids) out += token_to_piece(id);
        return out;
    }

    std::string token_to_piece(std::int32_t id) const override {
        check_id(id);
        const auto& t = tokens_[static_cast<std::size_t>(id)];
        const auto ty = types_[static_cast<std::size_t>(id)];
        if (ty == token_type::control || ty == token_type::user_defined) return t;
        std::string out;
        for (std::size_t i = 0; i < t.size();) {
            const auto u = unicode::decode_utf8(t, i);
            const auto it = u.valid ? cp_byte_.find(u.cp) : cp_byte_.end();
            if (it != cp_byte_.end()) out += static_cast<char>(it->second);
            else out.append(t, i, u.len); // not in the byte alphabet: as written
            i += u.len;
        }
        return out;
    }

    std::string_view kind() const noexcept override { return "bpe"; }
    /// True when every byte has a token (else text with a missing byte loses it).
    bool lossless() const noexcept override { return all_bytes_; }

private:
    static void split_offset(std::string_view frag, std::size_t a, std::size_t b,
                             std::vector<std::pair<std::size_t, std::size_t>>& words) {
        const std::size_t first = words.size();
        gpt2_split(frag.substr(a, b - a), words);
        for (std::size_t i = first; i < words.size(); ++i) words[i].first += a;
    }

    void encode_word(std::string_view w, std::vector<detail::symbol>& syms, std::vector<std::int32_t>& ids) const {
        syms.clear();
        if (ignore_merges_) {
            std::string mapped;
            for (const char ch : w) unicode::append_utf8(mapped, byte_cp_[static_cast<unsigned char>(ch)]);
            if (const auto it = to_id_.find(mapped); it != to_id_.end()) {
                ids.push_back(it->second);
                return;
            }
        }
        for (std::size_t i = 0; i < w.size(); ++i) {
            const auto id = byte_id_[static_cast<unsigned char>(w[i])];
            if (id < 0) continue; // dropped; its neighbours become adjacent, as in HF
            detail::push_symbol(syms, i, 1, id);
        }
        merges_->merge_into(syms, ids);
    }

    std::vector<std::string> tokens_;
    std::vector<token_type> types_;
    string_map<std::int32_t> to_id_;
    std::optional<detail::rank_merges> merges_;
    std::unordered_map<char32_t, unsigned char> cp_byte_;
    std::array<char32_t, 256> byte_cp_{};
    std::array<std::int32_t, 256> byte_id_{};
    byte_trie specials_;
    ordered_specials ordered_;
    bpe_pre pre_;
    std::vector<split_regex> patterns_;
    bool add_bos_, add_eos_, ignore_merges_, nfc_, llama_specials_;
    bool all_bytes_ = true;
};

} // namespace archetype::tokenizer
