#pragma once
// A tiny random-weight BERT written with the library's GGUF writer (llama.cpp's
// `bert` architecture), so that the examples run without a download. It carries
// a WordPiece vocabulary of a few dozen words, stored as llama.cpp stores BERT
// vocabularies ("▁" marks a word start, control tokens are [PAD] [UNK] [CLS]
// [SEP]), so archetype's tokenizer can read text for it like for a real model.
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "archetype/io/gguf_writer.hpp"

namespace examples {

struct tiny_encoder {
    std::size_t n_embd = 32, n_layer = 2, n_head = 4, n_ff = 64, n_pos = 64;
    std::vector<std::string> words = {"the", "a",     "cat",  "dog",   "sat",  "ran",   "on",   "in",
                                      "mat", "park",  "sun",  "is",    "hot",  "cold",  "today", "model",
                                      "runs", "fast", "slow", "small", "big",  "house", "tree", "."};

    void write(const std::string& path, std::uint32_t seed) const {
        std::vector<std::string> tokens = {"[PAD]", "[UNK]", "[CLS]", "[SEP]"};
        std::vector<std::int32_t> types(tokens.size(), 3); // control
        for (const auto& w : words) {
            tokens.push_back("\xE2\x96\x81" + w); // U+2581: the start of a word
            types.push_back(1);                  // normal
        }
        const std::size_t E = n_embd, V = tokens.size();

        archetype::gguf::writer g;
        g.set("general.architecture", "bert");
        g.set("general.name", "tiny-random-bert");
        g.set("bert.context_length", std::uint32_t(n_pos));
        g.set("bert.embedding_length", std::uint32_t(E));
        g.set("bert.block_count", std::uint32_t(n_layer));
        g.set("bert.feed_forward_length", std::uint32_t(n_ff));
        g.set("bert.attention.head_count", std::uint32_t(n_head));
        g.set("bert.attention.layer_norm_epsilon", 1e-12f);
        g.set("bert.pooling_type", std::uint32_t(1)); // mean
        g.set("tokenizer.ggml.model", "bert");
        g.set("tokenizer.ggml.tokens", tokens);
        g.set("tokenizer.ggml.token_type", types);
        g.set("tokenizer.ggml.padding_token_id", std::uint32_t(0));
        g.set("tokenizer.ggml.unknown_token_id", std::uint32_t(1));
        g.set("tokenizer.ggml.bos_token_id", std::uint32_t(2)); // [CLS]
        g.set("tokenizer.ggml.eos_token_id", std::uint32_t(3)); // [SEP]

        std::mt19937 rng(seed);
        std::normal_distribution<float> nd(0.f, 1.f);
        // ne = {cols, rows}: rows x cols floats, row-major (llama.cpp's layout)
        auto tensor = [&](const std::string& name, std::vector<std::uint64_t> ne, float scale, float offset = 0.f) {
            std::size_t n = 1;
            for (auto d : ne) n *= d;
            std::vector<float> v(n);
            for (auto& x : v) x = offset + scale * nd(rng);
            g.add_tensor(name, archetype::ggml_type::F32, std::move(ne), std::move(v));
        };
        tensor("token_embd.weight", {E, V}, 1.f);
        tensor("position_embd.weight", {E, n_pos}, 0.1f);
        tensor("token_embd_norm.weight", {E}, 0.1f, 1.f);
        tensor("token_embd_norm.bias", {E}, 0.1f);
        for (std::size_t il = 0; il < n_layer; ++il) {
            const std::string b = "blk." + std::to_string(il) + ".";
            for (const char* m : {"attn_q", "attn_k", "attn_v", "attn_output"}) {
                tensor(b + m + ".weight", {E, E}, 0.2f);
                tensor(b + m + ".bias", {E}, 0.1f);
            }
            tensor(b + "attn_output_norm.weight", {E}, 0.1f, 1.f);
            tensor(b + "attn_output_norm.bias", {E}, 0.1f);
            tensor(b + "ffn_up.weight", {E, n_ff}, 0.2f);
            tensor(b + "ffn_up.bias", {n_ff}, 0.1f);
            tensor(b + "ffn_down.weight", {n_ff, E}, 0.15f);
            tensor(b + "ffn_down.bias", {E}, 0.1f);
            tensor(b + "layer_output_norm.weight", {E}, 0.1f, 1.f);
            tensor(b + "layer_output_norm.bias", {E}, 0.1f);
        }
        g.write(path);
    }
};

} // namespace examples
