#pragma once
// SentencePiece-style BPE (GGUF tokenizer.ggml.model = "llama", also Gemma's files), as
// llama.cpp's llm_tokenizer_spm does it (src/llama-vocab.cpp):
//  1. CONTROL, USER_DEFINED and UNKNOWN tokens are cut out of the text first, whole, in
//     llama.cpp's order (ordered_specials: longest text first). Gemma's user-defined
//     tokens "\n\n", runs of 2..31 spaces or tabs, HTML tags are cut out this way, so 32
//     spaces are the 31-space token and one space left to the text after it;
//  2. spaces become U+2581 "▁"; with add_space_prefix one "▁" goes in front of each
//     stretch of text that follows a special token or starts the text (Llama) — Gemma
//     files say false;
//  3. the text starts as one symbol per code point (invalid UTF-8 as llama.cpp cuts it: a
//     byte's high bits give the length, unchecked, so a stray lead byte takes the next
//     bytes with it; found by fuzz/fuzz_tokenizer_spm.cpp); adjacent symbols whose joined text
//     is a token (of any type, as llama.cpp's text-to-id map has them) merge, the
//     highest-scoring join first (leftmost on ties). No limit on a piece's length or the
//     number of merges;
//  4. a symbol that is not a token is written as its UTF-8 bytes through the <0xXX>
//     byte tokens (byte fallback), or as unk when the file has none.
// Gemma's scores fall strictly with position among its normal tokens, so ranking by
// score is ranking by position, as Hugging Face's GemmaTokenizer merges do.
#include <algorithm>
#include <array>
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
#include "archetype/runtime/tokenizer/tokenizer.hpp"
#include "archetype/runtime/unicode.hpp"

namespace archetype::tokenizer {

inline constexpr std::string_view spm_space = "\xE2\x96\x81"; // U+2581

class spm_tokenizer final : public tokenizer {
public:
    struct config {
        std::vector<std::string> tokens;
        std::vector<float> scores;        // empty: all 0
        std::vector<std::int32_t> types;  // empty: all normal
        std::int32_t bos = -1, eos = -1, unk = -1, pad = -1;
        bool add_bos = true, add_eos = false, add_space_prefix = true;
    };

    explicit spm_tokenizer(config c)
        : tokens_(std::move(c.tokens)), scores_(std::move(c.scores)), add_bos_(c.add_bos), add_eos_(c.add_eos),
          add_space_prefix_(c.add_space_prefix) {
        n_vocab_ = tokens_.size();
        if (scores_.empty()) scores_.assign(tokens_.size(), 0.0f);
        if (scores_.size() != tokens_.size())
            throw format_error("scores has " + std::to_string(scores_.size()) + " entries for " +
                               std::to_string(tokens_.size()) + " tokens");
        if (!c.types.empty() && c.types.size() != tokens_.size())
            throw format_error("token_type has " + std::to_string(c.types.size()) + " entries for " +
                               std::to_string(tokens_.size()) + " tokens");
        types_.assign(tokens_.size(), token_type::normal);
        for (std::size_t i = 0; i < c.types.size(); ++i) types_[i] = static_cast<token_type>(c.types[i]);
        set_special_ids(c.bos, c.eos, c.unk, c.pad, add_bos_, add_eos_);

        byte_id_.fill(-1);
        to_id_.reserve(tokens_.size());
        std::vector<std::int32_t> special_ids;
        for (std::size_t i = 0; i < tokens_.size(); ++i) {
            const auto id = static_cast<std::int32_t>(i);
            const auto& t = tokens_[i];
            // llama.cpp's text -> id map holds every token; of equal texts the last wins.
            to_id_.insert_or_assign(t, id);
            switch (types_[i]) {
            case token_type::control: case token_type::user_defined: case token_type::unknown:
                special_ids.push_back(id);
                break;
            case token_type::byte: {
                const int b = parse_byte_token(t);
                if (b < 0) throw format_error("byte token " + std::to_string(i) + " '" + t.substr(0, 40) +
                                              "' is not of the form <0xXX>");
                byte_id_[static_cast<std::size_t>(b)] = id;
                break;
            }
            default:
                break;
            }
        }
        specials_.build(std::move(special_ids), [&](std::int32_t id) -> const std::string& {
            return tokens_[static_cast<std::size_t>(id)];
        });
    }

    std::vector<std::int32_t> encode(std::string_view text, bool add_special) const override {
        std::vector<std::int32_t> ids;
        if (add_special && add_bos_) ids.push_back(bos_);
        std::vector<detail::symbol> syms;
        std::string norm;
        bool after_special = true; // the start counts as following a special token (llama.cpp)
        specials_.split(text, [&](std::string_view frag) {
            norm.clear();
            if (add_space_prefix_ && after_special) norm += spm_space;
            norm += escape(frag);
            encode_fragment(norm, syms, ids);
            after_special = false;
        }, [&](std::int32_t id) { ids.push_back(id); after_special = true; });
        if (add_special && add_eos_) ids.push_back(eos_);
        return ids;
    }

    std::string decode(std::span<const std::int32_t> ids) const override {
        std::string out;
        bool after_special = true;
        for (auto id : ids) {
            std::string piece = token_to_piece(id);
            const auto ty = types_[static_cast<std::size_t>(id)];
            // The prefix space the encoder put before each stretch of text that starts the
            // text or follows a special token is not part of the text.
            if (add_space_prefix_ && after_special && ty == token_type::normal && !piece.empty() && piece[0] == ' ')
                piece.erase(0, 1);
            // (unk is left out: it is far more often a piece without a token than "<unk>" typed in)
            after_special = ty == token_type::control || ty == token_type::user_defined;
            out += piece;
        }
        return out;
    }

    std::string token_to_piece(std::int32_t id) const override {
        check_id(id);
        const auto& t = tokens_[static_cast<std::size_t>(id)];
        switch (types_[static_cast<std::size_t>(id)]) {
        case token_type::byte: return std::string(1, static_cast<char>(parse_byte_token(t)));
        case token_type::control: case token_type::user_defined: return t;
        default: {
            std::string out;
            for (std::size_t i = 0; i < t.size();) {
                if (t.compare(i, spm_space.size(), spm_space) == 0) { out += ' '; i += spm_space.size(); }
                else out += t[i++];
            }
            return out;
        }
        }
    }

    std::string_view kind() const noexcept override { return "spm"; }
    /// Byte fallback keeps every byte and a normal "▁" token brings spaces back (without
    /// one, a space falls back to the bytes of "▁" and decodes as "▁"); only a literal "▁"
    /// in the text comes back as a space.
    bool lossless() const noexcept override {
        const auto it = to_id_.find(spm_space);
        return byte_fallback() && it != to_id_.end() &&
               types_[static_cast<std::size_t>(it->second)] == token_type::normal;
    }
    bool byte_fallback() const noexcept {
        for (auto b : byte_id_)
            if (b < 0) return false;
        return true;
    }

private:
    static std::string escape(std::string_view s) {
        std::string out;
        out.reserve(s.size());
        for (char ch : s) {
            if (ch == ' ') out += spm_space;
            else out += ch;
        }
        return out;
    }
    static int parse_byte_token(std::string_view t) noexcept {
        if (t.size() != 6 || t.substr(0, 3) != "<0x" || t[5] != '>') return -1;
        auto hex = [](char ch) {
            return ch >= '0' && ch <= '9' ? ch - '0' : ch >= 'A' && ch <= 'F' ? ch - 'A' + 10
                   : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10 : -1;
        };
        const int h = hex(t[3]), l = hex(t[4]);
        return h < 0 || l < 0 ? -1 : h * 16 + l;
    }

    void encode_fragment(std::string_view s, std::vector<detail::symbol>& syms, std::vector<std::int32_t>& ids) const {
        syms.clear();
        for (std::size_t i = 0; i < s.size();) {
            // llama.cpp's unicode_len_utf8: the length a lead byte announces, not checked
            // (so "\xE4ab" is one symbol, written as three byte tokens), cut at the end.
            static constexpr std::uint8_t lead_len[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
            const std::size_t len =
                std::min<std::size_t>(lead_len[static_cast<unsigned char>(s[i]) >> 4], s.size() - i);
            detail::symbol sym;
            sym.start = i;
            sym.len = len;
            sym.prev = static_cast<std::int64_t>(syms.size()) - 1;
            sym.next = -1;
            if (!syms.empty()) syms.back().next = static_cast<std::int64_t>(syms.size());
            syms.push_back(sym);
            i += len;
        }
        detail::merge_symbols<float>(syms, [&](const detail::symbol& a, const detail::symbol& b, float& p,
                                               std::int32_t& id) {
            const auto it = to_id_.find(s.substr(a.start, a.len + b.len));
            if (it == to_id_.end()) return false;
            p = scores_[static_cast<std::size_t>(it->second)];
            id = it->second;
            return true;
        });
        for (std::int64_t i = syms.empty() ? -1 : 0; i >= 0; i = syms[static_cast<std::size_t>(i)].next) {
            const auto& sym = syms[static_cast<std::size_t>(i)];
            const auto piece = s.substr(sym.start, sym.len);
            const auto it = to_id_.find(piece);
            if (it != to_id_.end()) {
                ids.push_back(it->second);
                continue;
            }
            for (char ch : piece) {
                const auto b = byte_id_[static_cast<unsigned char>(ch)];
                if (b >= 0) ids.push_back(b);
                else if (unk_ >= 0) {
                    ids.push_back(unk_);
                    break;
                } else {
                    throw argument_error("text piece '" + std::string(piece) +
                                         "' has no token, and the vocabulary has neither byte tokens nor unk");
                }
            }
        }
    }

    std::vector<std::string> tokens_;
    std::vector<float> scores_;
    std::vector<token_type> types_;
    string_map<std::int32_t> to_id_;
    std::array<std::int32_t, 256> byte_id_{};
    ordered_specials specials_;
    bool add_bos_, add_eos_, add_space_prefix_;
};

} // namespace archetype::tokenizer
