#pragma once
// SentencePiece-style BPE as Hugging Face tokenizer.json writes it (Llama 2, Mistral,
// Gemma 2, Phi-3 checkpoints): model BPE with byte_fallback over UTF-8 characters, spaces
// spelled "▁", and merges by rank — unlike spm.hpp (GGUF `llama` vocabularies), which
// joins by piece score. For each text between added tokens:
//  1. spaces become "▁" and a "▁" is prepended: by the Prepend + Replace normaliser of
//     Llama 2's file, on every such text; or by a Metaspace pre-tokenizer, unless the text
//     already starts with one, on every text ("always"), only on the text at the very
//     start ("first"), or never;
//  2. the whole text is one word: each character is a symbol (its token), or, when the
//     vocabulary lacks it, one <0xXX> token per UTF-8 byte (byte fallback), or the unknown
//     token (consecutive unknowns fused when fuse_unk);
//  3. adjacent symbols merge by the rank of their pair in the merges list.
// Decoding undoes it: "▁" is a space, <0xXX> tokens are bytes, and the one leading space
// the prefix added is dropped (the Strip decoder).
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "archetype/core/error.hpp"
#include "archetype/runtime/tokenizer/merge.hpp"
#include "archetype/runtime/tokenizer/metaspace.hpp"
#include "archetype/runtime/tokenizer/tokenizer.hpp"
#include "archetype/runtime/unicode.hpp"

namespace archetype::tokenizer {

class spm_bpe_tokenizer final : public tokenizer {
public:
    enum class prefix { every_text, metaspace_always, metaspace_first, never };
    struct config {
        std::vector<std::string> tokens;
        std::vector<std::int32_t> types;   // token_type per token (control / user_defined: matched whole)
        std::vector<std::string> merges;   // "left right", best first
        prefix prepend = prefix::every_text;
        bool fuse_unk = true, ignore_merges = false;
        std::int32_t bos = -1, eos = -1, unk = -1, pad = -1;
        bool add_bos = false, add_eos = false;
    };

    explicit spm_bpe_tokenizer(config c)
        : tokens_(std::move(c.tokens)), prepend_(c.prepend), fuse_unk_(c.fuse_unk), ignore_merges_(c.ignore_merges) {
        n_vocab_ = tokens_.size();
        if (c.types.size() != tokens_.size())
            throw format_error("token_type has " + std::to_string(c.types.size()) + " entries for " +
                               std::to_string(tokens_.size()) + " tokens");
        types_.reserve(tokens_.size());
        for (auto t : c.types) types_.push_back(static_cast<token_type>(t));
        set_special_ids(c.bos, c.eos, c.unk, c.pad, c.add_bos, c.add_eos);
        for (std::size_t i = 0; i < tokens_.size(); ++i) {
            const auto t = types_[i];
            if (t == token_type::control || t == token_type::user_defined) specials_.insert(tokens_[i], static_cast<std::int32_t>(i));
            else to_id_.emplace(tokens_[i], static_cast<std::int32_t>(i));
        }
        bytes_ = metaspace::byte_tokens(to_id_);
        merges_.emplace(c.merges, [&](const std::string& t) {
            const auto it = to_id_.find(t);
            return it == to_id_.end() ? std::int32_t(-1) : it->second;
        });
    }

    std::vector<std::int32_t> encode(std::string_view text, bool add_special) const override {
        std::vector<std::int32_t> ids;
        if (add_special && adds_bos()) ids.push_back(bos_id());
        std::vector<detail::symbol> syms;
        std::string word;
        split_specials(specials_, text, [&](std::string_view frag) {
            if (frag.empty()) return; // Prepend leaves an empty text empty
            const bool at_start = frag.data() == text.data();
            word.clear();
            const bool metaspace = prepend_ == prefix::metaspace_always || (prepend_ == prefix::metaspace_first && at_start);
            const bool starts_with_space = frag[0] == ' ' || frag.substr(0, space_.size()) == space_;
            if (prepend_ == prefix::every_text || (metaspace && !starts_with_space)) word += space_;
            for (const char ch : frag) {
                if (ch == ' ') word += space_;
                else word += ch;
            }
            encode_word(word, syms, ids);
        }, [&](std::int32_t id) { ids.push_back(id); });
        if (add_special && adds_eos()) ids.push_back(eos_id());
        return ids;
    }

    std::string decode(std::span<const std::int32_t> ids) const override {
        std::string out;
        for (auto id : ids) out += token_to_piece(id);
        return metaspace::drop_prefix_space(std::move(out), prepend_ != prefix::never);
    }

    std::string token_to_piece(std::int32_t id) const override {
        check_id(id);
        const auto i = static_cast<std::size_t>(id);
        return metaspace::piece_text(bytes_, id, tokens_[i], types_[i]);
    }

    std::string_view kind() const noexcept override { return "spm-bpe"; }
    /// Every byte has a <0xXX> token (else a character the vocabulary lacks becomes unk)
    /// and no prefix is added (decoding drops one leading space, which a text may have had).
    bool lossless() const noexcept override { return bytes_.complete() && prepend_ == prefix::never; }

private:
    void encode_word(const std::string& w, std::vector<detail::symbol>& syms, std::vector<std::int32_t>& ids) const {
        if (w.empty()) return;
        if (ignore_merges_)
            if (const auto it = to_id_.find(w); it != to_id_.end()) { ids.push_back(it->second); return; }
        syms.clear();
        auto push = [&](std::size_t start, std::size_t len, std::int32_t id) { detail::push_symbol(syms, start, len, id); };
        for (std::size_t i = 0; i < w.size();) {
            const auto u = unicode::decode_utf8(w, i);
            const auto it = u.valid ? to_id_.find(std::string_view(w).substr(i, u.len)) : to_id_.end();
            if (it != to_id_.end()) {
                push(i, u.len, it->second);
            } else {
                bool all = true;
                for (std::size_t k = 0; k < u.len; ++k) all = all && bytes_.id[static_cast<unsigned char>(w[i + k])] >= 0;
                if (all) {
                    for (std::size_t k = 0; k < u.len; ++k) push(i + k, 1, bytes_.id[static_cast<unsigned char>(w[i + k])]);
                } else if (unk_id() >= 0) {
                    if (fuse_unk_ && !syms.empty() && syms.back().id == unk_id() && syms.back().start + syms.back().len == i)
                        syms.back().len += u.len;
                    else push(i, u.len, unk_id());
                } else {
                    throw format_error("text has a character the vocabulary cannot express (no byte tokens, no unk)");
                }
            }
            i += u.len;
        }
        merges_->merge_into(syms, ids);
    }

    const std::string space_{metaspace::space};
    std::vector<std::string> tokens_;
    std::vector<token_type> types_;
    string_map<std::int32_t> to_id_;
    std::optional<detail::rank_merges> merges_;
    metaspace::byte_tokens bytes_;
    byte_trie specials_;
    prefix prepend_;
    bool fuse_unk_, ignore_merges_;
};

} // namespace archetype::tokenizer
