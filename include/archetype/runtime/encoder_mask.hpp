#pragma once
// Attention masks of an encoder batch, at run time: which key each query may
// see. A packed batch holds several sequences one after another; a query sees
// only keys of its own sequence (a block-diagonal mask) and, inside it, the
// keys its mask policy allows by position. The encoder never builds the
// n_tokens x n_tokens matrix: it runs attention per sequence block. The matrix
// form exists only for printing (`archetype mask`) and for tests.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "archetype/core/error.hpp"
#include "archetype/policies/mask.hpp"

namespace archetype {

/// A mask chosen at run time; each kind defers to its policy's visible() rule.
enum class mask_kind { causal, window, symmetric, bidirectional };

inline constexpr std::optional<mask_kind> mask_kind_from_name(std::string_view s) noexcept {
    if (s == "causal") return mask_kind::causal;
    if (s == "window") return mask_kind::window;
    if (s == "symmetric") return mask_kind::symmetric;
    if (s == "bidirectional") return mask_kind::bidirectional;
    return std::nullopt;
}

/// Whether a query at position q sees a key at position k (same sequence).
inline constexpr bool mask_visible(mask_kind kind, pos_t q, pos_t k, std::int64_t window) noexcept {
    switch (kind) {
    case mask_kind::causal: return Causal::visible(q, k, window);
    case mask_kind::window: return SlidingWindow<>::visible(q, k, window);
    case mask_kind::symmetric: return SymmetricWindow<>::visible(q, k, window);
    case mask_kind::bidirectional: return Bidirectional::visible(q, k, window);
    }
    return false;
}

/// Largest n that format_mask prints (the text grows as n^2).
inline constexpr std::size_t max_printed_mask = 1024;

/// The mask of one sequence of n tokens in llama.cpp's debug layout: a title,
/// a legend, a header of key indices, then `i:` and one cell per key, `0` for
/// "can attend" and `∞` for "masked".
inline std::string format_mask(mask_kind kind, std::size_t n, std::int64_t window) {
    if (n == 0 || n > max_printed_mask)
        throw argument_error("mask size " + std::to_string(n) + " is not in 1.." + std::to_string(max_printed_mask));
    if ((kind == mask_kind::window || kind == mask_kind::symmetric) && window < 1)
        throw argument_error("window " + std::to_string(window) + " must be at least 1");
    auto digits = [](std::size_t v) { std::size_t d = 1; while (v >= 10) { v /= 10; ++d; } return d; };
    const std::size_t cell = digits(n - 1);                    // width of a column
    const std::size_t label = cell < 2 ? 2 : cell;             // width of a row index
    // Right-aligns s (shown columns wide) in w columns. Appending (not
    // `" " + str`) also avoids GCC 12's false -Wrestrict on string concatenation.
    auto put = [](std::string& out, std::string_view s, std::size_t w, std::size_t shown) {
        out += ' ';
        out.append(w > shown ? w - shown : 0, ' ');
        out.append(s);
    };
    std::string out = "=== Attention mask ===\n'0' = can attend, '\xE2\x88\x9E' = masked\n"
                      "Rows = query tokens, Columns = key/value tokens\n\n";
    out += std::string(label + 2, ' ');
    for (std::size_t j = 0; j < n; ++j) put(out, std::to_string(j), cell, digits(j));
    out += '\n';
    for (std::size_t i = 0; i < n; ++i) {
        out.append(label - digits(i), ' ');
        out += std::to_string(i);
        out += ": ";
        for (std::size_t j = 0; j < n; ++j) {
            const bool v = mask_visible(kind, pos_t(i), pos_t(j), window);
            put(out, v ? "0" : "\xE2\x88\x9E", cell, 1); // U+221E is one column wide
        }
        out += '\n';
    }
    return out;
}

/// Where each sequence of a packed batch starts: sequence s is tokens
/// [offsets[s], offsets[s+1]) of the batch, at positions 0.. within itself.
struct packed_layout {
    std::vector<std::size_t> offsets{0};
    std::size_t n_sequences() const noexcept { return offsets.size() - 1; }
    std::size_t n_tokens() const noexcept { return offsets.back(); }
    std::size_t length(std::size_t s) const noexcept { return offsets[s + 1] - offsets[s]; }
    void add(std::size_t len) { offsets.push_back(offsets.back() + len); }
    /// Sequence holding batch token t.
    std::size_t sequence_of(std::size_t t) const noexcept {
        std::size_t lo = 0, hi = n_sequences();
        while (hi - lo > 1) {
            const std::size_t mid = (lo + hi) / 2;
            (offsets[mid] <= t ? lo : hi) = mid;
        }
        return lo;
    }
    /// The block-diagonal rule: batch token q sees batch token k.
    bool visible(mask_kind kind, std::size_t q, std::size_t k, std::int64_t window) const noexcept {
        const std::size_t s = sequence_of(q);
        if (k < offsets[s] || k >= offsets[s + 1]) return false;
        return mask_visible(kind, pos_t(q - offsets[s]), pos_t(k - offsets[s]), window);
    }
};

} // namespace archetype
