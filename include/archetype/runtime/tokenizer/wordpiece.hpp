#pragma once
// BERT's WordPiece, as Hugging Face's BertNormalizer + BertPreTokenizer + WordPiece do it:
//  1. special tokens ([CLS], [SEP], [PAD], [MASK], [UNK]) are cut out of the raw text;
//  2. normalise: drop NUL, U+FFFD and control characters, whitespace becomes ' ', CJK
//     ideographs get a space on each side, then (uncased models) NFD without
//     nonspacing marks and lower-casing;
//  3. split on whitespace, each punctuation character (Unicode P* or ASCII punctuation)
//     its own word;
//  4. greedy longest-match WordPiece, continuation pieces prefixed "##"; a word longer
//     than max_chars code points, or one that cannot be covered, becomes [UNK].
// add_special wraps the ids in [CLS] ... [SEP]. No truncation here: a model's length
// limit is the caller's business.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "archetype/core/error.hpp"
#include "archetype/runtime/tokenizer/tokenizer.hpp"
#include "archetype/runtime/unicode.hpp"
#include "archetype/runtime/unicode_nfc.hpp"

namespace archetype::tokenizer {

class wordpiece_tokenizer final : public tokenizer {
public:
    struct config {
        std::vector<std::string> tokens;
        std::vector<std::string> specials = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"};
        std::string unk = "[UNK]", cls = "[CLS]", sep = "[SEP]", pad = "[PAD]";
        std::string prefix = "##";
        std::size_t max_chars = 100;
        bool lowercase = true, strip_accents = true, clean_text = true, handle_cjk = true;
        /// llama.cpp's WPM normaliser (GGUF `bert` files): a code point's canonical
        /// decomposition is cut to its first code point and every mark (\p{M}) dropped
        /// ("기" -> "ᄀ", where BERT keeps all the jamo), and its CJK ranges (0x2B920..,
        /// not 0x2B820..). Set max_chars to SIZE_MAX as well: llama.cpp has no word limit.
        bool llama_normaliser = false;
    };

    explicit wordpiece_tokenizer(config c)
        : tokens_(std::move(c.tokens)), prefix_(std::move(c.prefix)), max_chars_(c.max_chars), lowercase_(c.lowercase),
          strip_accents_(c.strip_accents), clean_text_(c.clean_text), handle_cjk_(c.handle_cjk),
          llama_(c.llama_normaliser) {
        n_vocab_ = tokens_.size();
        to_id_.reserve(tokens_.size());
        for (std::size_t i = 0; i < tokens_.size(); ++i) {
            to_id_.try_emplace(tokens_[i], static_cast<std::int32_t>(i));
            max_token_bytes_ = std::max(max_token_bytes_, tokens_[i].size());
        }
        auto find = [&](const std::string& t, bool required) -> std::int32_t {
            const auto it = to_id_.find(t);
            if (it != to_id_.end()) return it->second;
            if (required) throw format_error("WordPiece vocabulary lacks the token '" + t + "'");
            return -1;
        };
        unk_ = find(c.unk, true);
        cls_ = find(c.cls, false);
        sep_ = find(c.sep, false);
        pad_ = find(c.pad, false);
        bos_ = cls_;
        eos_ = sep_;
        for (const auto& s : c.specials) {
            const auto id = find(s, false);
            if (id >= 0) {
                specials_.insert(s, id);
                is_special_.push_back(id);
            }
        }
    }

    std::vector<std::int32_t> encode(std::string_view text, bool add_special) const override {
        std::vector<std::int32_t> ids;
        if (add_special && cls_ >= 0) ids.push_back(cls_);
        scratch buf;
        split_specials(specials_, text, [&](std::string_view frag) {
            normalize(frag, buf.norm);
            words(buf, ids);
        }, [&](std::int32_t id) { ids.push_back(id); });
        if (add_special && sep_ >= 0) ids.push_back(sep_);
        return ids;
    }

    /// Words joined by spaces, "##" pieces glued to the previous one, then HF's
    /// clean-up of spaces before punctuation and contractions.
    std::string decode(std::span<const std::int32_t> ids) const override {
        std::string out;
        for (auto id : ids) {
            const std::string t = token_to_piece(id);
            if (!prefix_.empty() && t.compare(0, prefix_.size(), prefix_) == 0) out += t.substr(prefix_.size());
            else {
                if (!out.empty()) out += ' ';
                out += t;
            }
        }
        static constexpr std::pair<std::string_view, std::string_view> fixes[] = {
            {" .", "."}, {" ?", "?"}, {" !", "!"}, {" ,", ","}, {" ' ", "'"}, {" n't", "n't"}, {" 'm", "'m"},
            {" do not", " don't"}, {" 's", "'s"}, {" 've", "'ve"}, {" 're", "'re"}};
        for (const auto& [from, to] : fixes) {
            std::string r;
            std::size_t pos = 0;
            for (std::size_t f; (f = out.find(from, pos)) != std::string::npos; pos = f + from.size())
                r.append(out, pos, f - pos).append(to);
            r.append(out, pos);
            out = std::move(r);
        }
        return out;
    }

    std::string token_to_piece(std::int32_t id) const override {
        check_id(id);
        return tokens_[static_cast<std::size_t>(id)];
    }
    std::string_view kind() const noexcept override { return "wordpiece"; }
    bool lossless() const noexcept override { return false; }
    std::int32_t cls_id() const noexcept { return cls_; }
    std::int32_t sep_id() const noexcept { return sep_; }

private:
    void normalize(std::string_view s, std::u32string& out) const {
        using namespace unicode;
        out.clear();
        out.reserve(s.size());
        std::u32string tmp;
        std::vector<char32_t> dec;
        for (std::size_t i = 0; i < s.size();) {
            // ASCII (most of most text): no decomposition, no mark, no CJK; the control
            // characters are Cc, which clean_text drops (tab, newline, CR become spaces).
            if (const auto b = static_cast<unsigned char>(s[i]); b < 0x80) {
                ++i;
                char32_t c = b;
                if (clean_text_) {
                    if ((b >= 0x09 && b <= 0x0D) || b == ' ') c = ' '; // White_Space
                    else if (b < 0x20 || b == 0x7F) continue;
                }
                out += lowercase_ && b >= 'A' && b <= 'Z' ? char32_t(b + ('a' - 'A')) : c;
                continue;
            }
            const auto u = decode_utf8(s, i);
            i += u.len;
            // Invalid bytes were U+FFFD in HF's (lossy) decoding, which clean_text drops.
            char32_t c = u.valid ? u.cp : char32_t(0xFFFD);
            if (clean_text_) {
                if (c == 0 || c == 0xFFFD) continue;
                if (c == '\t' || c == '\n' || c == '\r' || is_whitespace(c)) c = ' ';
                // Cc/Cf/Cs/Co go; unassigned code points stay (HF's newer tables
                // know them as symbols, and they become [UNK]).
                else if (category_of(c) == category::other) continue;
            }
            tmp.clear();
            if (strip_accents_ && llama_) {
                dec.clear();
                unicode::detail::nfc::decompose(c, dec);
                const auto k = category_of(dec[0]);
                if (k != category::mark_nonspacing && k != category::mark_other) tmp += dec[0];
            } else if (strip_accents_) {
                append_stripped(tmp, c);
            } else {
                tmp += c;
            }
            for (char32_t d : tmp) {
                const bool cjk = handle_cjk_ && (llama_ ? is_llama_chinese(d) : is_cjk_ideograph(d));
                if (cjk) out += U' ';
                if (lowercase_) append_lower(out, d);
                else out += d;
                if (cjk) out += U' ';
            }
        }
    }

    /// llama.cpp's is_chinese_char (llm_tokenizer_wpm_session): BERT's ranges, but the
    /// extension block from 0x2B920 (as its comment says Hugging Face's Rust code has it).
    static bool is_llama_chinese(char32_t c) noexcept {
        return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) || (c >= 0x20000 && c <= 0x2A6DF) ||
               (c >= 0x2A700 && c <= 0x2B73F) || (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B920 && c <= 0x2CEAF) ||
               (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
    }

    static bool is_bert_punct(char32_t c) noexcept {
        if ((c >= 33 && c <= 47) || (c >= 58 && c <= 64) || (c >= 91 && c <= 96) || (c >= 123 && c <= 126)) return true;
        return unicode::is_punctuation(c);
    }

    /// Buffers one encode call reuses from word to word (no allocation per word).
    struct scratch {
        std::u32string norm;       ///< the normalised fragment
        std::vector<std::size_t> off; ///< byte offset of each code point of a word in utf8
        std::string utf8, key;     ///< the word in UTF-8; the candidate piece looked up
    };

    static bool is_space(char32_t c) noexcept {
        return c == ' ' || (c >= 0x09 && c <= 0x0D) || (c >= 0x80 && unicode::is_whitespace(c));
    }
    static bool is_split(char32_t c) noexcept { return is_space(c) || is_bert_punct(c); }

    void words(scratch& buf, std::vector<std::int32_t>& ids) const {
        const std::u32string_view s = buf.norm;
        std::size_t i = 0;
        while (i < s.size()) {
            if (is_space(s[i])) { ++i; continue; }
            if (is_bert_punct(s[i])) { word(s.substr(i, 1), buf, ids); ++i; continue; }
            std::size_t e = i;
            while (e < s.size() && !is_split(s[e])) ++e;
            word(s.substr(i, e - i), buf, ids);
            i = e;
        }
    }

    void word(std::u32string_view w, scratch& buf, std::vector<std::int32_t>& ids) const {
        if (w.size() > max_chars_) {
            ids.push_back(unk_);
            return;
        }
        auto& off = buf.off;
        auto& utf8 = buf.utf8;
        auto& key = buf.key;
        off.clear();
        utf8.clear();
        for (char32_t c : w) {
            off.push_back(utf8.size());
            if (c < 0x80) utf8 += static_cast<char>(c);
            else unicode::append_utf8(utf8, c);
        }
        off.push_back(utf8.size());
        const std::size_t first = ids.size();
        for (std::size_t start = 0; start < w.size();) {
            std::int32_t found = -1;
            // Candidates longer than the longest token cannot match: start below them.
            std::size_t end = w.size();
            const std::size_t room = max_token_bytes_ - (start > 0 ? std::min(prefix_.size(), max_token_bytes_) : 0);
            while (end > start + 1 && off[end] - off[start] > room) --end;
            for (; end > start; --end) {
                key.clear();
                if (start > 0) key += prefix_;
                key.append(utf8, off[start], off[end] - off[start]);
                const auto it = to_id_.find(key);
                if (it != to_id_.end()) {
                    found = it->second;
                    break;
                }
            }
            if (found < 0) {
                ids.resize(first);
                ids.push_back(unk_);
                return;
            }
            ids.push_back(found);
            start = end;
        }
    }

    std::vector<std::string> tokens_;
    string_map<std::int32_t> to_id_;
    std::vector<std::int32_t> is_special_;
    byte_trie specials_;
    std::string prefix_;
    std::size_t max_chars_;
    std::size_t max_token_bytes_ = 0;
    std::int32_t cls_ = -1, sep_ = -1;
    bool lowercase_, strip_accents_, clean_text_, handle_cjk_, llama_;
};

} // namespace archetype::tokenizer
