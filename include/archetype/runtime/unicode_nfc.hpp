#pragma once
// Unicode normalisation form C (UAX #15): full canonical decomposition, canonical
// ordering of combining marks, canonical composition — what Hugging Face's NFC normaliser
// (Qwen 2's tokenizer.json) applies before pre-tokenising. Data from
// unicode_nfc_tables.hpp (tools/reference/make_nfc_tables.py); Hangul by formula. Bytes
// that are not valid UTF-8 pass through unchanged and block composition across them.
#include <algorithm>
#include <cstdint>
#include <iterator>
#include <string>
#include <string_view>
#include <vector>

#include "archetype/runtime/unicode.hpp"
#include "archetype/runtime/unicode_nfc_tables.hpp"

namespace archetype::unicode {

namespace detail::nfc {
inline constexpr char32_t raw_byte = 0x80000000u; // an invalid byte, kept as it was

inline std::uint8_t combining_class(char32_t cp) noexcept {
    if (cp < 0x300 || cp > 0x10FFFF) return 0;
    const auto& runs = nfc_tables::combining_runs;
    const std::uint32_t key = (static_cast<std::uint32_t>(cp) << 8) | 0xFFu;
    const auto* it = std::upper_bound(std::begin(runs), std::end(runs), key);
    return static_cast<std::uint8_t>(*(it - 1) & 0xFFu);
}

inline void decompose(char32_t cp, std::vector<char32_t>& out) {
    if (cp >= hangul_s_base && cp < hangul_s_base + hangul_count) {
        const char32_t s = cp - hangul_s_base;
        out.push_back(hangul_l_base + s / hangul_n_count);
        out.push_back(hangul_v_base + (s % hangul_n_count) / hangul_t_count);
        if (s % hangul_t_count) out.push_back(hangul_t_base + s % hangul_t_count);
        return;
    }
    const auto& d = nfc_tables::decompositions;
    const auto* it = std::lower_bound(std::begin(d), std::end(d), cp,
                                      [](const nfc_tables::decomposition& e, char32_t c) { return e.cp < c; });
    if (it == std::end(d) || it->cp != cp) { out.push_back(cp); return; }
    decompose(it->first, out);
    if (it->second) decompose(it->second, out);
}

inline char32_t compose(char32_t a, char32_t b) noexcept {
    if (a >= hangul_l_base && a < hangul_l_base + 19 && b >= hangul_v_base && b < hangul_v_base + 21)
        return hangul_s_base + ((a - hangul_l_base) * 21 + (b - hangul_v_base)) * hangul_t_count;
    if (a >= hangul_s_base && a < hangul_s_base + hangul_count && (a - hangul_s_base) % hangul_t_count == 0 &&
        b > hangul_t_base && b < hangul_t_base + hangul_t_count)
        return a + (b - hangul_t_base);
    if (a > 0x10FFFF || b > 0x10FFFF) return 0;
    const std::uint64_t key = (static_cast<std::uint64_t>(a) << 21) | b;
    const auto& c = nfc_tables::compositions;
    const auto* it = std::lower_bound(std::begin(c), std::end(c), key,
                                      [](const nfc_tables::composition& e, std::uint64_t k) { return e.key < k; });
    return it != std::end(c) && it->key == key ? it->composite : 0;
}
} // namespace detail::nfc

/// `text` in normalisation form C.
inline std::string nfc(std::string_view text) {
    namespace d = detail::nfc;
    // Code points below U+0300 are never changed by NFC and never combine with what
    // precedes them; a text of only those is already NFC.
    bool simple = true;
    for (std::size_t i = 0; i < text.size() && simple;) {
        const auto u = decode_utf8(text, i);
        if (!u.valid || u.cp >= 0x300) simple = false;
        i += u.len;
    }
    if (simple) return std::string(text);

    std::vector<char32_t> buf;
    buf.reserve(text.size());
    for (std::size_t i = 0; i < text.size();) {
        const auto u = decode_utf8(text, i);
        if (u.valid) d::decompose(u.cp, buf);
        else buf.push_back(d::raw_byte | static_cast<unsigned char>(text[i]));
        i += u.len;
    }
    // Canonical ordering: a stable sort of each run of non-starters by class.
    for (std::size_t i = 0; i < buf.size();) {
        if (d::combining_class(buf[i]) == 0) { ++i; continue; }
        std::size_t e = i;
        while (e < buf.size() && d::combining_class(buf[e]) != 0) ++e;
        std::stable_sort(buf.begin() + static_cast<std::ptrdiff_t>(i), buf.begin() + static_cast<std::ptrdiff_t>(e),
                         [](char32_t a, char32_t b) { return d::combining_class(a) < d::combining_class(b); });
        i = e;
    }
    // Canonical composition: a mark joins the last starter unless a mark of the same or a
    // higher class, or a starter, stands between them.
    std::size_t out = 0, starter = static_cast<std::size_t>(-1);
    int last_class = -1;
    for (std::size_t i = 0; i < buf.size(); ++i) {
        const char32_t c = buf[i];
        const int cls = d::combining_class(c);
        if (starter != static_cast<std::size_t>(-1) && (last_class < cls || last_class == 0)) {
            if (const char32_t comp = d::compose(buf[starter], c)) {
                buf[starter] = comp;
                continue;
            }
        }
        if (cls == 0) starter = (c & d::raw_byte) ? static_cast<std::size_t>(-1) : out;
        last_class = (c & d::raw_byte) ? 256 : cls;
        buf[out++] = c;
    }
    buf.resize(out);
    std::string s;
    s.reserve(text.size());
    for (const char32_t c : buf) {
        if (c & d::raw_byte) s.push_back(static_cast<char>(c & 0xFFu));
        else append_utf8(s, c);
    }
    return s;
}

} // namespace archetype::unicode
