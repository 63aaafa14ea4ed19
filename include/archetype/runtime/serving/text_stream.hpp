#pragma once
// The text a request streams, made safe to send piece by piece: token pieces are bytes
// (a byte-level BPE token may hold half of a UTF-8 character, a random model emits any
// bytes at all), and a stop string may arrive split over several tokens. text_stream
// takes the bytes of each new token and gives back the text that is settled:
//   - well-formed UTF-8 only: an invalid byte becomes U+FFFD (as Python's
//     bytes.decode(errors="replace") and Hugging Face's decoders do, one per maximal
//     invalid subpart), and an incomplete character at the end is held back until its
//     next bytes come (or the stream ends: then it too becomes U+FFFD), so that a JSON
//     encoder never sees a broken character;
//   - no byte of a possible stop string: the longest tail that is a prefix of some stop
//     string is held back until the next bytes decide it; a complete stop string ends
//     the stream, and neither it nor anything after it is given out (OpenAI's `stop`).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace archetype::serving {

namespace detail {
/// Length of the well-formed UTF-8 character at s[i] (1..4), 0 when s[i] starts an
/// invalid sequence, -1 when it is a valid start cut short by the end of s.
inline int utf8_char_length(std::string_view s, std::size_t i) noexcept {
    const auto b = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
    const unsigned c = b(i);
    if (c < 0x80) return 1;
    int n;
    unsigned lo = 0x80, hi = 0xBF; // the allowed range of the second byte (RFC 3629's table)
    if (c >= 0xC2 && c <= 0xDF) n = 2;
    else if (c >= 0xE0 && c <= 0xEF) {
        n = 3;
        if (c == 0xE0) lo = 0xA0;
        if (c == 0xED) hi = 0x9F; // no surrogates
    } else if (c >= 0xF0 && c <= 0xF4) {
        n = 4;
        if (c == 0xF0) lo = 0x90;
        if (c == 0xF4) hi = 0x8F;
    } else
        return 0;
    for (int k = 1; k < n; ++k) {
        if (i + std::size_t(k) >= s.size()) return -1;
        const unsigned d = b(i + std::size_t(k));
        if (k == 1 ? (d < lo || d > hi) : (d < 0x80 || d > 0xBF)) return 0;
    }
    return n;
}
} // namespace detail

inline constexpr std::string_view replacement_character = "\xEF\xBF\xBD";

/// Well-formed UTF-8 from any bytes, each maximal invalid subpart replaced by U+FFFD.
/// final = false: an incomplete character at the end is left in `rest` (its bytes), not replaced.
inline std::string sanitize_utf8(std::string_view s, bool final, std::string* rest = nullptr) {
    std::string out;
    out.reserve(s.size());
    std::size_t i = 0;
    while (i < s.size()) {
        const int n = detail::utf8_char_length(s, i);
        if (n > 0) {
            out.append(s.substr(i, std::size_t(n)));
            i += std::size_t(n);
        } else if (n < 0 && !final) {
            if (rest) rest->assign(s.substr(i));
            return out;
        } else {
            out.append(replacement_character);
            // skip the maximal subpart: the start byte and the continuation bytes it accepted
            std::size_t j = i + 1;
            while (j < s.size() && j < i + 4 && (static_cast<unsigned char>(s[j]) & 0xC0) == 0x80 &&
                   detail::utf8_char_length(s.substr(0, j + 1), i) < 0)
                ++j;
            i = j;
        }
    }
    if (rest) rest->clear();
    return out;
}

/// Whether s is well-formed UTF-8.
inline bool is_valid_utf8(std::string_view s) noexcept {
    for (std::size_t i = 0; i < s.size();) {
        const int n = detail::utf8_char_length(s, i);
        if (n <= 0) return false;
        i += std::size_t(n);
    }
    return true;
}

class text_stream {
public:
    explicit text_stream(std::vector<std::string> stops = {}) : stops_(std::move(stops)) {
        stops_.erase(std::remove(stops_.begin(), stops_.end(), std::string()), stops_.end());
    }

    /// Adds a token's bytes; returns the text settled by them (possibly empty).
    std::string push(std::string_view bytes) {
        if (stopped_) return {};
        raw_ += bytes;
        std::string rest;
        held_ += sanitize_utf8(raw_, false, &rest);
        raw_ = std::move(rest);
        return settle(false);
    }
    /// Ends the stream: everything still held back (an incomplete character as U+FFFD,
    /// a partial stop-string match as text).
    std::string finish() {
        if (stopped_) return {};
        held_ += sanitize_utf8(raw_, true);
        raw_.clear();
        return settle(true);
    }
    /// Whether a stop string has appeared (the stream gives nothing more).
    bool stopped() const noexcept { return stopped_; }
    /// The stop string that ended the stream (empty while none has).
    const std::string& matched_stop() const noexcept { return matched_; }

private:
    std::string settle(bool final) {
        // a complete stop string: everything before the earliest one, nothing after
        std::size_t first = std::string::npos;
        for (const auto& s : stops_) {
            const std::size_t p = held_.find(s);
            if (p < first) {
                first = p;
                matched_ = s;
            }
        }
        if (first != std::string::npos) {
            stopped_ = true;
            std::string out = held_.substr(0, first);
            held_.clear();
            return out;
        }
        std::size_t keep = 0; // the longest tail of held_ that begins some stop string
        if (!final)
            for (const auto& s : stops_)
                for (std::size_t k = std::min(s.size() - 1, held_.size()); k > keep; --k)
                    if (held_.compare(held_.size() - k, k, s, 0, k) == 0) {
                        keep = k;
                        break;
                    }
        // never cut a character: a held tail that starts inside one grows to its start
        while (keep < held_.size() && (static_cast<unsigned char>(held_[held_.size() - keep]) & 0xC0) == 0x80) ++keep;
        std::string out = held_.substr(0, held_.size() - keep);
        held_.erase(0, held_.size() - keep);
        return out;
    }

    std::vector<std::string> stops_;
    std::string raw_;  // bytes of an incomplete character
    std::string held_; // valid text that may begin a stop string
    std::string matched_;
    bool stopped_ = false;
};

} // namespace archetype::serving
