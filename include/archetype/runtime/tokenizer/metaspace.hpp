#pragma once
// What the SentencePiece-style tokenizers of tokenizer.json files share (spm_bpe.hpp:
// BPE pieces; unigram.hpp: Unigram pieces): spaces spelled "▁" (U+2581) in the pieces,
// <0xXX> byte tokens for byte fallback, and decoding that turns both back into text.
#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>

#include "archetype/runtime/tokenizer/tokenizer.hpp"

namespace archetype::tokenizer::metaspace {

/// The space of the pieces, U+2581 LOWER ONE EIGHTH BLOCK.
inline constexpr std::string_view space = "\xE2\x96\x81";

/// The <0xXX> tokens of a vocabulary, both ways.
struct byte_tokens {
    std::array<std::int32_t, 256> id{}; // id of "<0xXX>", -1 when the vocabulary lacks it
    std::unordered_map<std::int32_t, unsigned char> byte_of;

    /// From a piece -> id map (find(name) -> iterator with ->second).
    template <class Map>
    explicit byte_tokens(const Map& to_id) {
        static constexpr char hex[] = "0123456789ABCDEF";
        for (int b = 0; b < 256; ++b) {
            const std::string name = std::string("<0x") + hex[b >> 4] + hex[b & 15] + ">";
            const auto it = to_id.find(name);
            id[static_cast<std::size_t>(b)] = it == to_id.end() ? -1 : it->second;
            if (it != to_id.end()) byte_of.emplace(it->second, static_cast<unsigned char>(b));
        }
    }
    byte_tokens() { id.fill(-1); }
    /// Every byte has its token (so no character is ever unknown).
    bool complete() const noexcept {
        for (auto b : id)
            if (b < 0) return false;
        return true;
    }
};

/// The text of token `id` (piece `t` of type `ty`): its byte for a <0xXX> token, the piece
/// as written for control / user-defined tokens, else the piece with "▁" as spaces.
inline std::string piece_text(const byte_tokens& bytes, std::int32_t id, const std::string& t, token_type ty) {
    if (const auto b = bytes.byte_of.find(id); b != bytes.byte_of.end()) return std::string(1, static_cast<char>(b->second));
    if (ty == token_type::control || ty == token_type::user_defined) return t;
    std::string out;
    for (std::size_t i = 0; i < t.size();) {
        if (t.compare(i, space.size(), space) == 0) {
            out += ' ';
            i += space.size();
        } else {
            out += t[i++];
        }
    }
    return out;
}

/// Decoded text with the one leading space a prepended "▁" became dropped (the Strip /
/// Metaspace decoders) when the tokenizer adds one.
inline std::string drop_prefix_space(std::string text, bool prefix_added) {
    if (prefix_added && !text.empty() && text[0] == ' ') text.erase(0, 1);
    return text;
}

} // namespace archetype::tokenizer::metaspace
