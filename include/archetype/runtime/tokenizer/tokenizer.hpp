#pragma once
// The interface every tokenizer kind implements, and what they share: the vocabulary
// with GGUF's token types, and leftmost-longest matching of special-token text.
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "archetype/core/error.hpp"

namespace archetype::tokenizer {

/// GGUF's tokenizer.ggml.token_type values (llama.cpp's llama_token_type).
enum class token_type : std::int32_t {
    undefined = 0, normal = 1, unknown = 2, control = 3, user_defined = 4, unused = 5, byte = 6
};

class tokenizer {
public:
    virtual ~tokenizer() = default;

    /// Token ids of `text`. add_special: the BOS/EOS (or [CLS]/[SEP]) the model's file
    /// asks for. Text of special tokens ("<|im_start|>", "<bos>", "[SEP]") is always
    /// recognised, as Hugging Face tokenizers do by default. Invalid UTF-8 is encoded
    /// byte by byte where the vocabulary can express bytes, never an error.
    virtual std::vector<std::int32_t> encode(std::string_view text, bool add_special) const = 0;
    /// Text of the ids; special tokens appear as their text.
    virtual std::string decode(std::span<const std::int32_t> ids) const = 0;
    /// The bytes one token stands for (a byte token gives its byte).
    virtual std::string token_to_piece(std::int32_t id) const = 0;
    /// "spm", "bpe", "wordpiece", "rwkv".
    virtual std::string_view kind() const noexcept = 0;
    /// Whether decode(encode(s, false)) == s for every valid UTF-8 s.
    virtual bool lossless() const noexcept = 0;

    std::size_t n_vocab() const noexcept { return n_vocab_; }
    /// -1 when the model has none.
    std::int32_t bos_id() const noexcept { return bos_; }
    std::int32_t eos_id() const noexcept { return eos_; }
    std::int32_t unk_id() const noexcept { return unk_; }
    std::int32_t pad_id() const noexcept { return pad_; }
    /// Whether encode(text, true) starts with bos_id() (the file's add_bos_token, or the
    /// tokenizer type's default).
    bool adds_bos() const noexcept { return adds_bos_; }
    bool adds_eos() const noexcept { return adds_eos_; }

protected:
    void check_id(std::int32_t id) const {
        if (id < 0 || static_cast<std::size_t>(id) >= n_vocab_)
            throw argument_error("token id " + std::to_string(id) + " is outside the vocabulary of " +
                                 std::to_string(n_vocab_) + " tokens");
    }
    void check_special_id(std::int32_t id, std::string_view what) const {
        if (id != -1 && (id < 0 || static_cast<std::size_t>(id) >= n_vocab_))
            throw format_error(std::string(what) + " " + std::to_string(id) + " is outside the vocabulary of " +
                               std::to_string(n_vocab_) + " tokens");
    }

    /// Sets the special ids read from the file (after n_vocab_) and checks them:
    /// each inside the vocabulary or -1, and present when the file asks to add it.
    void set_special_ids(std::int32_t bos, std::int32_t eos, std::int32_t unk, std::int32_t pad, bool add_bos,
                         bool add_eos) {
        bos_ = bos; eos_ = eos; unk_ = unk; pad_ = pad;
        adds_bos_ = add_bos; adds_eos_ = add_eos;
        check_special_id(bos_, "bos_token_id");
        check_special_id(eos_, "eos_token_id");
        check_special_id(unk_, "unknown_token_id");
        check_special_id(pad_, "padding_token_id");
        if (add_bos && bos_ < 0) throw format_error("add_bos_token is set but the file has no bos_token_id");
        if (add_eos && eos_ < 0) throw format_error("add_eos_token is set but the file has no eos_token_id");
    }

    std::size_t n_vocab_ = 0;
    std::int32_t bos_ = -1, eos_ = -1, unk_ = -1, pad_ = -1;
    bool adds_bos_ = false, adds_eos_ = false;
};

/// Hash of strings that also looks up string_views without building a string.
struct string_hash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
};
template <class V> using string_map = std::unordered_map<std::string, V, string_hash, std::equal_to<>>;

/// A byte trie for leftmost-longest matching (special tokens; RWKV's whole vocabulary).
/// The root has a direct table; deeper nodes keep sibling lists (vocabularies are sparse).
class byte_trie {
public:
    byte_trie() { root_.fill(-1); }

    /// Adds key -> id (a later insert of the same key keeps the first id).
    void insert(std::string_view key, std::int32_t id) {
        if (key.empty()) return;
        auto b0 = static_cast<unsigned char>(key[0]);
        if (root_[b0] < 0) {
            root_[b0] = static_cast<std::int32_t>(nodes_.size());
            nodes_.push_back({});
        }
        std::int32_t n = root_[b0];
        for (std::size_t i = 1; i < key.size(); ++i) {
            const auto b = static_cast<unsigned char>(key[i]);
            std::int32_t c = nodes_[static_cast<std::size_t>(n)].child;
            while (c >= 0 && nodes_[static_cast<std::size_t>(c)].byte != b) c = nodes_[static_cast<std::size_t>(c)].sibling;
            if (c < 0) {
                c = static_cast<std::int32_t>(nodes_.size());
                node nn;
                nn.byte = b;
                nn.sibling = nodes_[static_cast<std::size_t>(n)].child;
                nodes_.push_back(nn);
                nodes_[static_cast<std::size_t>(n)].child = c;
            }
            n = c;
        }
        if (nodes_[static_cast<std::size_t>(n)].id < 0) nodes_[static_cast<std::size_t>(n)].id = id;
        ++size_;
    }

    /// Longest key that starts at text[pos]: {length, id}, or {0, -1}.
    std::pair<std::size_t, std::int32_t> longest(std::string_view text, std::size_t pos) const noexcept {
        std::pair<std::size_t, std::int32_t> best{0, -1};
        if (pos >= text.size()) return best;
        std::int32_t n = root_[static_cast<unsigned char>(text[pos])];
        std::size_t i = pos + 1;
        while (n >= 0) {
            const auto& nd = nodes_[static_cast<std::size_t>(n)];
            if (nd.id >= 0) best = {i - pos, nd.id};
            if (i >= text.size()) break;
            const auto b = static_cast<unsigned char>(text[i]);
            std::int32_t c = nd.child;
            while (c >= 0 && nodes_[static_cast<std::size_t>(c)].byte != b) c = nodes_[static_cast<std::size_t>(c)].sibling;
            n = c;
            ++i;
        }
        return best;
    }
    /// Calls f(length, id) for every key that starts at text[pos], shortest first.
    template <class F> void for_each_prefix(std::string_view text, std::size_t pos, F&& f) const {
        if (pos >= text.size()) return;
        std::int32_t n = root_[static_cast<unsigned char>(text[pos])];
        std::size_t i = pos + 1;
        while (n >= 0) {
            const auto& nd = nodes_[static_cast<std::size_t>(n)];
            if (nd.id >= 0) f(i - pos, nd.id);
            if (i >= text.size()) break;
            const auto b = static_cast<unsigned char>(text[i]);
            std::int32_t c = nd.child;
            while (c >= 0 && nodes_[static_cast<std::size_t>(c)].byte != b) c = nodes_[static_cast<std::size_t>(c)].sibling;
            n = c;
            ++i;
        }
    }
    bool empty() const noexcept { return size_ == 0; }

private:
    struct node {
        std::int32_t child = -1, sibling = -1, id = -1;
        unsigned char byte = 0;
    };
    std::array<std::int32_t, 256> root_;
    std::vector<node> nodes_;
    std::size_t size_ = 0;
};

/// Cuts text at special-token matches (leftmost-longest, as Hugging Face's added
/// vocabulary does): on_text(view) for the plain stretches, on_special(id) for matches.
template <class OnText, class OnSpecial>
void split_specials(const byte_trie& specials, std::string_view text, OnText&& on_text, OnSpecial&& on_special) {
    if (specials.empty()) {
        if (!text.empty()) on_text(text);
        return;
    }
    std::size_t start = 0, i = 0;
    while (i < text.size()) {
        const auto [len, id] = specials.longest(text, i);
        if (len == 0) {
            ++i;
            continue;
        }
        if (i > start) on_text(text.substr(start, i - start));
        on_special(id);
        i += len;
        start = i;
    }
    if (start < text.size()) on_text(text.substr(start));
}

/// Special-token text cut out of the text as llama.cpp does it (tokenizer_st_partition in
/// src/llama-vocab.cpp), for the tokenizers read from GGUF files: the special tokens in
/// order of decreasing text length, each cutting every leftmost non-overlapping
/// occurrence of its text out of the stretches of plain text the ones before it left.
/// This is leftmost-longest matching wherever no two occurrences overlap partially; where
/// they do, the longer token wins wherever it is (tokens "ab", "bcd" on "abcd": "a", "bcd").
/// A trie finds which special texts occur at all, so only those are searched for.
class ordered_specials {
public:
    /// ids: the special tokens (llama.cpp: CONTROL, USER_DEFINED and UNKNOWN) in ascending
    /// order; text_of(id) their texts. Ranked by std::sort on text length, as llama.cpp does
    /// (ties among equal lengths fall as std::sort leaves them, the same order as llama.cpp
    /// built with the same standard library).
    template <class TextOf>
    void build(std::vector<std::int32_t> ids, TextOf&& text_of) {
        std::sort(ids.begin(), ids.end(), [&](std::int32_t a, std::int32_t b) {
            return text_of(a).size() > text_of(b).size();
        });
        order_ = std::move(ids);
        texts_.clear();
        trie_ = byte_trie();
        for (std::size_t r = 0; r < order_.size(); ++r) {
            texts_.emplace_back(text_of(order_[r]));
            // The trie maps a text to its rank; of equal texts the first in order wins.
            trie_.insert(texts_.back(), static_cast<std::int32_t>(r));
        }
    }
    bool empty() const noexcept { return trie_.empty(); }

    /// on_text(view) for the plain stretches, on_special(id) for the cut-out tokens, in order.
    template <class OnText, class OnSpecial>
    void split(std::string_view text, OnText&& on_text, OnSpecial&& on_special) const {
        if (text.empty()) return;
        std::vector<std::int32_t> present; // ranks of the special texts that occur
        if (!trie_.empty()) {
            std::vector<bool> seen(order_.size(), false);
            for (std::size_t i = 0; i < text.size(); ++i)
                trie_.for_each_prefix(text, i, [&](std::size_t, std::int32_t r) {
                    if (!seen[static_cast<std::size_t>(r)]) {
                        seen[static_cast<std::size_t>(r)] = true;
                        present.push_back(r);
                    }
                });
        }
        if (present.empty()) {
            on_text(text);
            return;
        }
        std::sort(present.begin(), present.end());
        struct piece {
            std::size_t off, len;
            std::int32_t id; // -1: plain text
        };
        std::vector<piece> cur{{0, text.size(), -1}}, next;
        for (const auto r : present) {
            const std::string_view t = texts_[static_cast<std::size_t>(r)];
            const auto id = order_[static_cast<std::size_t>(r)];
            next.clear();
            for (const auto& p : cur) {
                if (p.id >= 0) {
                    next.push_back(p);
                    continue;
                }
                const std::string_view s = text.substr(0, p.off + p.len);
                std::size_t start = p.off;
                for (std::size_t m; (m = s.find(t, start)) != std::string_view::npos; start = m + t.size()) {
                    if (m > start) next.push_back({start, m - start, -1});
                    next.push_back({m, t.size(), id});
                }
                if (start < p.off + p.len) next.push_back({start, p.off + p.len - start, -1});
            }
            cur.swap(next);
        }
        for (const auto& p : cur) {
            if (p.id >= 0) on_special(p.id);
            else on_text(text.substr(p.off, p.len));
        }
    }

private:
    byte_trie trie_;
    std::vector<std::int32_t> order_;
    std::vector<std::string> texts_;
};

} // namespace archetype::tokenizer
