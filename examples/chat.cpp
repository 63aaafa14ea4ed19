// chat: a multi-turn conversation with a decoder GGUF, through the file's own chat
// template (archetype/runtime/chat_template.hpp) and the library's sampler.
//
// Each turn appends the user's message, renders the whole conversation with the
// template, prefills it into a fresh sequence and samples the reply until the end of
// the turn (EOS or the template family's end-of-turn token). Re-prefilling the whole
// conversation keeps the example short; an application would keep the sequence and
// feed only the new tokens.
//
//   ./build/examples/chat              writes a tiny random-weight llama GGUF with a
//                                      byte-level vocabulary and the ChatML template, runs
//                                      two scripted turns and checks that each rendered
//                                      prompt is the ChatML text of the conversation so
//                                      far (the replies are random bytes)
//   ./build/examples/chat model.gguf   chats with your file: one user message per line
//                                      of standard input, until end of input
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "archetype/models/architectures.hpp"
#include "archetype/models/decoder_model.hpp"
#include "archetype/runtime/chat_tokens.hpp"
#include "archetype/runtime/decoder_session.hpp"
#include "archetype/runtime/sampling.hpp"
#include "archetype/runtime/tokenizer/bpe.hpp"
#include "archetype/runtime/tokenizer/load.hpp"
#include "tiny_decoder.hpp"

namespace chat = archetype::chat;

namespace {
constexpr std::size_t max_reply = 24, n_ctx = 2048;

/// The tiny model: 256 byte tokens (GPT-2's byte-to-character map) and two control
/// tokens, <|im_start|> (256) and <|im_end|> (257, also EOS), with ChatML.
void write_tiny_chat_model(const std::string& path) {
    examples::tiny_decoder m;
    m.n_vocab = 258;
    m.n_ctx = n_ctx;
    const auto cp = archetype::tokenizer::gpt2_byte_to_cp();
    for (char32_t c : cp) {
        std::string u; // the code point in UTF-8 (all are below U+0800)
        if (c < 0x80) u += char(c);
        else u += char(0xC0 | (c >> 6)), u += char(0x80 | (c & 0x3F));
        m.vocab.push_back(u);
        m.vocab_types.push_back(1); // normal
    }
    m.vocab.push_back("<|im_start|>");
    m.vocab.push_back("<|im_end|>");
    m.vocab_types.push_back(3); // control
    m.vocab_types.push_back(3);
    m.merges = {"a b"};
    m.eos = 257;
    m.chat_template = "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + "
                      "'<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}"
                      "{% endif %}";
    m.randomise(11);
    m.write(path);
}

template <class A>
int converse(const archetype::gguf::file& file, const std::string& path, bool scripted) {
    const auto model = archetype::load_model<A>(path);
    const auto tok = archetype::tokenizer::load_tokenizer(file);
    const auto tmpl = chat::recognise(file.get_or<std::string>("tokenizer.chat_template", ""));
    const chat::render_options ro = chat::options_for(*tok); // the vocabulary's BOS / EOS texts
    const std::vector<std::int32_t> stop = chat::stop_tokens(*tok, tmpl);

    auto sess = archetype::session(model, {.n_threads = 2, .max_sequences = 1, .n_ctx = n_ctx});
    archetype::sampler smp({.temperature = 0.7f, .top_k = 40, .top_p = 0.95f, .min_p = 0.05f, .repeat_penalty = 1.f, .repeat_last_n = 64, .seed = 1});
    std::vector<chat::message> conversation;
    std::string expected; // scripted: the ChatML text of the conversation so far
    const std::vector<std::string> script = {"What is the capital of France?", "And of Germany?"};
    int failures = 0;
    for (std::size_t turn = 0;; ++turn) {
        std::string user;
        if (scripted) {
            if (turn == script.size()) break;
            user = script[turn];
        } else if (!std::getline(std::cin, user)) {
            break;
        }
        conversation.push_back({"user", user});
        const std::string prompt = chat::render(tmpl, conversation, ro);
        if (scripted) {
            expected += "<|im_start|>user\n" + user + "<|im_end|>\n<|im_start|>assistant\n";
            if (prompt != expected) {
                std::fprintf(stderr, "turn %zu: rendered prompt differs from the ChatML text:\n%s\n", turn, prompt.c_str());
                ++failures;
            }
        }
        const auto ids = chat::prompt_tokens(*tok, tmpl, conversation, ro);
        if (ids.size() + max_reply >= n_ctx) {
            std::fprintf(stderr, "the conversation no longer fits the context\n");
            break;
        }
        sess.remove_sequence(0);
        std::vector<float> logits(sess.n_vocab());
        sess.prefill(0, ids, logits.data(), archetype::logits_rows::last);
        std::vector<std::int32_t> reply;
        while (reply.size() < max_reply) {
            const std::int32_t t = smp.sample(logits);
            if (std::find(stop.begin(), stop.end(), t) != stop.end()) break;
            reply.push_back(t);
            sess.decode(0, t, logits.data());
        }
        const std::string text = tok->decode(reply);
        std::printf("user:      %s\nassistant: %s\n", user.c_str(), text.c_str());
        conversation.push_back({"assistant", text});
        if (scripted) expected += text + "<|im_end|>\n";
    }
    return failures == 0 ? 0 : 1;
}
} // namespace

int main(int argc, char** argv) {
    namespace fs = std::filesystem;
    const bool own_model = argc < 2;
    const std::string path = own_model ? (fs::temp_directory_path() / "archetype_chat.gguf").string() : argv[1];
    if (own_model) write_tiny_chat_model(path);
    int rc = 1;
    try {
        const auto file = archetype::gguf::file::open(path);
        rc = archetype::with_architecture<archetype::default_architectures>(file, [&]<class A>(std::type_identity<A>) {
            if constexpr (archetype::DecoderType<typename A::model>) {
                return converse<A>(file, path, own_model);
            } else {
                std::fprintf(stderr, "error: '%s' is not a decoder model\n", std::string(A::gguf_name).c_str());
                return 1;
            }
        });
    } catch (const std::exception& e) {
        std::fprintf(stderr, "error: %s\n", e.what());
    }
    if (own_model) fs::remove(path);
    return rc;
}
