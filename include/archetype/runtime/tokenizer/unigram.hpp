#pragma once
// Unigram language-model tokenizer as Hugging Face `tokenizers` defines it (model type
// "Unigram" in tokenizer.json: T5, ALBERT, XLM-R and other SentencePiece-unigram
// vocabularies re-saved by tokenizers). For each text between added tokens:
//  1. optionally NFC-normalised (an NFC normaliser in the file);
//  2. Metaspace: spaces become "▁"; a "▁" is prepended (unless the text starts with one)
//     on every text ("always"), on the text at the very start ("first"), or never; with
//     split = true the text is then cut before every "▁" (each "▁" starts a word);
//  3. each word is segmented by Viterbi over the vocabulary pieces: the segmentation with
//     the highest sum of piece scores (log probabilities), positions advanced one UTF-8
//     character at a time; a character no piece starts with is an unknown node scored
//     min(score) - 10 (tokenizers' K_UNK_PENALTY); ties keep the first candidate found
//     (shorter pieces first), as tokenizers' encode_optimized does;
//  4. consecutive unknown nodes are fused into one string (tokenizers always fuses them
//     for Unigram); a string that is no piece becomes <0xXX> tokens, one per byte, when
//     byte_fallback is set and every byte has its token, else the unknown token.
// Decoding: "▁" is a space, <0xXX> tokens are bytes, and one leading space is dropped when
// a prefix was added (the Metaspace decoder).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "archetype/core/error.hpp"
#include "archetype/runtime/tokenizer/metaspace.hpp"
#include "archetype/runtime/tokenizer/tokenizer.hpp"
#include "archetype/runtime/unicode.hpp"
#include "archetype/runtime/unicode_nfc.hpp"

namespace archetype::tokenizer {

class unigram_tokenizer final : public tokenizer {
public:
    enum class prefix { always, first, never };
    struct config {
        std::vector<std::string> tokens;
        std::vector<double> scores;        // per token (log probability)
        std::vector<std::int32_t> types;   // token_type per token (control / user_defined: matched whole)
        prefix prepend = prefix::always;
        bool split = true;                 // Metaspace split: one word per "▁"
        bool nfc = false;
        bool byte_fallback = false;
        std::int32_t bos = -1, eos = -1, unk = -1, pad = -1;
        bool add_bos = false, add_eos = false;
    };

    explicit unigram_tokenizer(config c)
        : tokens_(std::move(c.tokens)), prepend_(c.prepend), split_(c.split), nfc_(c.nfc),
          byte_fallback_(c.byte_fallback) {
        n_vocab_ = tokens_.size();
        if (c.types.size() != tokens_.size() || c.scores.size() != tokens_.size())
            throw format_error("unigram: " + std::to_string(c.types.size()) + " types and " +
                               std::to_string(c.scores.size()) + " scores for " + std::to_string(tokens_.size()) +
                               " tokens");
        if (c.unk < 0 || static_cast<std::size_t>(c.unk) >= tokens_.size())
            throw format_error("unigram: the unknown token id " + std::to_string(c.unk) + " is not a token");
        set_special_ids(c.bos, c.eos, c.unk, c.pad, c.add_bos, c.add_eos);
        types_.reserve(tokens_.size());
        for (auto t : c.types) types_.push_back(static_cast<token_type>(t));
        scores_ = std::move(c.scores);
        double min_score = std::numeric_limits<double>::infinity();
        for (std::size_t i = 0; i < tokens_.size(); ++i) {
            if (!std::isfinite(scores_[i]))
                throw format_error("unigram: token '" + tokens_[i] + "' has a score that is not finite");
            min_score = std::min(min_score, scores_[i]);
            const auto t = types_[i];
            if (t == token_type::control || t == token_type::user_defined)
                specials_.insert(tokens_[i], static_cast<std::int32_t>(i));
            // every piece is a key of the lookup (tokenizers' token_to_ids holds them all);
            // the lattice only ever sees text between added tokens
            to_id_.emplace(tokens_[i], static_cast<std::int32_t>(i));
            max_piece_ = std::max(max_piece_, tokens_[i].size());
        }
        unk_score_ = min_score - 10.0;
        bytes_ = metaspace::byte_tokens(to_id_);
    }

    std::vector<std::int32_t> encode(std::string_view text, bool add_special) const override {
        std::vector<std::int32_t> ids;
        if (add_special && adds_bos()) ids.push_back(bos_id());
        std::string norm, word;
        scratch sc;
        split_specials(specials_, text, [&](std::string_view frag) {
            if (frag.empty()) return;
            const bool at_start = frag.data() == text.data();
            if (nfc_) {
                norm = unicode::nfc(frag);
                frag = norm;
            }
            word.clear();
            const bool starts_with_space = frag[0] == ' ' || frag.substr(0, space_.size()) == space_;
            if (!starts_with_space && (prepend_ == prefix::always || (prepend_ == prefix::first && at_start)))
                word += space_;
            for (const char ch : frag) {
                if (ch == ' ') word += space_;
                else word += ch;
            }
            if (!split_) {
                encode_word(word, ids, sc);
                return;
            }
            // cut before every "▁" (tokenizers' SplitDelimiterBehavior::MergedWithNext)
            std::size_t start = 0;
            for (std::size_t i = space_.size(); i + space_.size() <= word.size();) {
                if (word.compare(i, space_.size(), space_) == 0) {
                    encode_word(std::string_view(word).substr(start, i - start), ids, sc);
                    start = i;
                    i += space_.size();
                } else {
                    ++i;
                }
            }
            encode_word(std::string_view(word).substr(start), ids, sc);
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

    std::string_view kind() const noexcept override { return "unigram"; }
    /// Never lossless in general: a prefix is dropped on decoding, NFC changes text, and
    /// without byte_fallback an unknown character is the unknown token.
    bool lossless() const noexcept override {
        return prepend_ == prefix::never && !nfc_ && byte_fallback_ && bytes_.complete();
    }

private:
    struct node {
        double score = 0;
        std::size_t start = 0;
        std::int32_t id = -1; // -1: not reached
    };

    struct scratch {
        std::vector<node> best;                                // best path ending at each byte
        std::vector<std::pair<std::size_t, std::size_t>> pieces; // [start, end) in reverse
    };

    /// Viterbi over the pieces of one word, then the fused / byte-fallback mapping.
    void encode_word(std::string_view w, std::vector<std::int32_t>& ids, scratch& sc) const {
        if (w.empty()) return;
        const std::size_t n = w.size();
        auto& best = sc.best;
        auto& pieces = sc.pieces;
        best.assign(n + 1, node{});
        best[0].id = 0; // reached, score 0
        for (std::size_t s = 0; s < n;) {
            const auto u = unicode::decode_utf8(w, s);
            const std::size_t clen = std::max<std::size_t>(1, std::min<std::size_t>(u.len, n - s));
            const double here = best[s].score;
            bool has_single = false;
            const std::size_t longest = std::min(max_piece_, n - s);
            for (std::size_t len = 1; len <= longest; ++len) {
                const auto it = to_id_.find(w.substr(s, len));
                if (it == to_id_.end()) continue;
                auto& t = best[s + len];
                const double cand = here + scores_[static_cast<std::size_t>(it->second)];
                if (t.id < 0 || cand > t.score) t = node{cand, s, it->second};
                if (len == clen) has_single = true;
            }
            if (!has_single) {
                auto& t = best[s + clen];
                const double cand = here + unk_score_;
                if (t.id < 0 || cand > t.score) t = node{cand, s, unk_id()};
            }
            s += clen;
        }
        // back from the end: pieces in reverse, runs of unknown nodes fused into one string
        pieces.clear();
        std::size_t end = n, unk_end = std::string_view::npos;
        while (end > 0) {
            const auto& nd = best[end];
            if (nd.id == unk_id()) {
                if (unk_end == std::string_view::npos) unk_end = end;
            } else {
                if (unk_end != std::string_view::npos) { pieces.emplace_back(end, unk_end); unk_end = std::string_view::npos; }
                pieces.emplace_back(nd.start, end);
            }
            end = nd.start;
        }
        if (unk_end != std::string_view::npos) pieces.emplace_back(0, unk_end);
        for (auto it = pieces.rbegin(); it != pieces.rend(); ++it) {
            const auto piece = w.substr(it->first, it->second - it->first);
            if (const auto f = to_id_.find(piece); f != to_id_.end()) {
                ids.push_back(f->second);
                continue;
            }
            bool bytes = byte_fallback_;
            for (std::size_t k = 0; bytes && k < piece.size(); ++k) bytes = bytes_.id[static_cast<unsigned char>(piece[k])] >= 0;
            if (bytes) for (const char ch : piece) ids.push_back(bytes_.id[static_cast<unsigned char>(ch)]);
            else ids.push_back(unk_id());
        }
    }

    const std::string space_{metaspace::space};
    std::vector<std::string> tokens_;
    std::vector<double> scores_;
    std::vector<token_type> types_;
    string_map<std::int32_t> to_id_;
    metaspace::byte_tokens bytes_;
    byte_trie specials_;
    std::size_t max_piece_ = 0;
    double unk_score_ = 0;
    prefix prepend_;
    bool split_, nfc_, byte_fallback_;
};

} // namespace archetype::tokenizer
