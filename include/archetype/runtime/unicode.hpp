#pragma once
// The little Unicode the tokenizers need: UTF-8 decoding that never fails (a bad byte
// is reported as one invalid unit, so hostile text cannot crash or loop), general
// category classes for GPT-2's pre-tokenizer regex (\p{L}, \p{N}, \s), and what BERT's
// normalizer does (lower-casing, NFD without nonspacing marks, CJK and punctuation
// tests). Tables come from Python's unicodedata (unicode_tables.hpp, generated).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <string>
#include <string_view>

#include "archetype/runtime/unicode_tables.hpp"

namespace archetype::unicode {

/// One decoded UTF-8 unit: a code point and its length in bytes. An invalid or
/// truncated sequence (overlong, surrogate, > U+10FFFF, stray continuation byte) is
/// one byte long with valid == false and cp set to that byte's value.
struct utf8_unit {
    char32_t cp;
    std::uint8_t len;
    bool valid;
};

inline utf8_unit decode_utf8(std::string_view s, std::size_t pos) noexcept {
    const auto b0 = static_cast<unsigned char>(s[pos]);
    if (b0 < 0x80) return {b0, 1, true};
    const utf8_unit bad{b0, 1, false};
    int n;
    char32_t cp;
    if ((b0 & 0xE0) == 0xC0) { n = 2; cp = b0 & 0x1Fu; }
    else if ((b0 & 0xF0) == 0xE0) { n = 3; cp = b0 & 0x0Fu; }
    else if ((b0 & 0xF8) == 0xF0) { n = 4; cp = b0 & 0x07u; }
    else return bad;
    if (pos + static_cast<std::size_t>(n) > s.size()) return bad;
    for (int i = 1; i < n; ++i) {
        const auto b = static_cast<unsigned char>(s[pos + static_cast<std::size_t>(i)]);
        if ((b & 0xC0) != 0x80) return bad;
        cp = (cp << 6) | (b & 0x3Fu);
    }
    // Overlong forms, surrogates and code points past U+10FFFF are not UTF-8.
    static constexpr char32_t min_cp[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < min_cp[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return bad;
    return {cp, static_cast<std::uint8_t>(n), true};
}

/// Length of the UTF-8 sequence that starts with byte b (1 for a byte that cannot start one).
inline std::size_t utf8_len(unsigned char b) noexcept {
    if (b < 0x80) return 1;
    if ((b & 0xE0) == 0xC0) return 2;
    if ((b & 0xF0) == 0xE0) return 3;
    if ((b & 0xF8) == 0xF0) return 4;
    return 1;
}

inline void append_utf8(std::string& out, char32_t cp) {
    if (cp < 0x80) {
        out += static_cast<char>(cp);
    } else if (cp < 0x800) {
        out += static_cast<char>(0xC0 | (cp >> 6));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        out += static_cast<char>(0xE0 | (cp >> 12));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
        out += static_cast<char>(0xF0 | (cp >> 18));
        out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    }
}

/// True when s is entirely valid UTF-8.
inline bool is_valid_utf8(std::string_view s) noexcept {
    for (std::size_t i = 0; i < s.size();) {
        const auto u = decode_utf8(s, i);
        if (!u.valid) return false;
        i += u.len;
    }
    return true;
}

/// General-category classes (see unicode_tables.hpp). `other` covers Cc, Cf, Cs, Co;
/// `unassigned` is Cn as of the tables' Unicode version (newer emoji among them, which
/// tokenizers built on newer tables treat as ordinary symbols).
enum class category : std::uint8_t {
    other = 0, letter = 1, mark_nonspacing = 2, mark_other = 3, number = 4,
    punctuation = 5, symbol = 6, separator = 7, unassigned = 8
};

inline category category_of(char32_t cp) noexcept {
    if (cp > 0x10FFFF) return category::unassigned;
    const auto& runs = tables::category_runs;
    const std::uint32_t key = (static_cast<std::uint32_t>(cp) << 8) | 0xFFu;
    const auto* it = std::upper_bound(std::begin(runs), std::end(runs), key);
    // runs[0] starts at code point 0, so `it` is never begin().
    return static_cast<category>(*(it - 1) & 0xFFu);
}

inline bool is_letter(char32_t cp) noexcept { return category_of(cp) == category::letter; }
inline bool is_number(char32_t cp) noexcept { return category_of(cp) == category::number; }
inline bool is_punctuation(char32_t cp) noexcept { return category_of(cp) == category::punctuation; }

/// The White_Space property (what \s matches in Oniguruma's Unicode mode and what
/// Rust's char::is_whitespace tests).
inline bool is_whitespace(char32_t cp) noexcept {
    return (cp >= 0x09 && cp <= 0x0D) || cp == 0x20 || cp == 0x85 || cp == 0xA0 || cp == 0x1680 ||
           (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F ||
           cp == 0x205F || cp == 0x3000;
}

/// Simple lower-case mapping (one code point to one).
inline char32_t to_lower(char32_t cp) noexcept {
    if (cp < 0x80) return (cp >= 'A' && cp <= 'Z') ? cp + 32 : cp;
    const auto& runs = tables::lower_runs;
    const auto* it = std::upper_bound(std::begin(runs), std::end(runs), static_cast<std::uint32_t>(cp),
                                      [](std::uint32_t v, const tables::lower_run& r) { return v < r.first; });
    if (it == std::begin(runs)) return cp;
    const auto& r = *(it - 1);
    const std::uint32_t off = static_cast<std::uint32_t>(cp) - r.first;
    if (off % r.stride != 0 || off / r.stride >= r.count) return cp;
    return static_cast<char32_t>(static_cast<std::int64_t>(cp) + r.delta);
}

/// Full lower-casing of one code point appended to out (U+0130 becomes "i" + U+0307,
/// as Rust's char::to_lowercase and Python's str.lower() do).
inline void append_lower(std::u32string& out, char32_t cp) {
    if (cp == 0x130) {
        out += U'i';
        out += char32_t(0x307);
        return;
    }
    out += to_lower(cp);
}

inline constexpr char32_t hangul_s_base = 0xAC00, hangul_l_base = 0x1100, hangul_v_base = 0x1161,
                          hangul_t_base = 0x11A7;
inline constexpr char32_t hangul_count = 11172, hangul_t_count = 28, hangul_n_count = 588;

/// Appends the canonical decomposition (NFD) of cp with nonspacing marks removed:
/// what BERT's strip_accents leaves of one code point ("é" -> "e", "가" -> jamo).
inline void append_stripped(std::u32string& out, char32_t cp) {
    if (cp >= hangul_s_base && cp < hangul_s_base + hangul_count) {
        const char32_t s = cp - hangul_s_base;
        out += hangul_l_base + s / hangul_n_count;
        out += hangul_v_base + (s % hangul_n_count) / hangul_t_count;
        if (s % hangul_t_count) out += hangul_t_base + s % hangul_t_count;
        return;
    }
    if (category_of(cp) == category::mark_nonspacing) return;
    if (cp < 0xC0) {
        out += cp;
        return;
    }
    const auto& runs = tables::strip_runs;
    const auto* it = std::upper_bound(std::begin(runs), std::end(runs), static_cast<std::uint32_t>(cp),
                                      [](std::uint32_t v, const tables::strip_run& r) { return v < r.first; });
    if (it != std::begin(runs)) {
        const auto& r = *(it - 1);
        if (static_cast<std::uint32_t>(cp) - r.first < r.count) {
            if (r.to) out += static_cast<char32_t>(r.to);
            return;
        }
    }
    for (const auto& m : tables::strip_multis)
        if (m.cp == cp) {
            for (char32_t c : m.to)
                if (c) out += c;
            return;
        }
    out += cp;
}

/// The CJK ideograph blocks BERT surrounds with spaces (same ranges as BERT's
/// _is_chinese_char: Hangul, kana and fullwidth forms are not among them).
inline bool is_cjk_ideograph(char32_t cp) noexcept {
    return (cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0x3400 && cp <= 0x4DBF) ||
           (cp >= 0x20000 && cp <= 0x2A6DF) || (cp >= 0x2A700 && cp <= 0x2B73F) ||
           (cp >= 0x2B740 && cp <= 0x2B81F) || (cp >= 0x2B820 && cp <= 0x2CEAF) ||
           (cp >= 0xF900 && cp <= 0xFAFF) || (cp >= 0x2F800 && cp <= 0x2FA1F);
}

} // namespace archetype::unicode
