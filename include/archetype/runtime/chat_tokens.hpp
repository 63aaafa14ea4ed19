#pragma once
// A chat template meets a tokenizer: the render options the tokenizer's special tokens
// give (bos_token / eos_token, as transformers passes them to the template), the token
// ids of a rendered conversation, and the ids that end the model's turn. One place for
// the rule that a template which writes the BOS text itself (Gemma, Llama 3, Mistral)
// gets no second BOS from the tokenizer.
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "archetype/runtime/chat_template.hpp"
#include "archetype/runtime/tokenizer/tokenizer.hpp"

namespace archetype::chat {

/// Render options with the tokenizer's BOS and EOS texts (empty when it has none).
inline render_options options_for(const tokenizer::tokenizer& tok) {
    render_options o;
    if (tok.bos_id() >= 0) o.bos_token = tok.token_to_piece(tok.bos_id());
    if (tok.eos_id() >= 0) o.eos_token = tok.token_to_piece(tok.eos_id());
    return o;
}

/// The conversation rendered with `o` and encoded: the tokenizer adds its BOS (when its
/// vocabulary does) unless the rendered text already begins with the BOS text.
inline std::vector<std::int32_t> prompt_tokens(const tokenizer::tokenizer& tok, const chat_template& tp,
                                               std::span<const message> msgs, const render_options& o) {
    const std::string text = render(tp, msgs, o);
    const bool has_bos = !o.bos_token.empty() && std::string_view(text).starts_with(o.bos_token);
    return tok.encode(text, !has_bos);
}

/// EOS and every end-of-turn text of the family that is one token of this vocabulary.
inline std::vector<std::int32_t> stop_tokens(const tokenizer::tokenizer& tok, const chat_template& tp) {
    std::vector<std::int32_t> stop;
    if (tok.eos_id() >= 0) stop.push_back(tok.eos_id());
    for (const auto& t : end_of_turn(tp))
        if (const auto ids = tok.encode(t, false); ids.size() == 1) stop.push_back(ids[0]);
    return stop;
}

} // namespace archetype::chat
