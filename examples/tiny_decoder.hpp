#pragma once
// A tiny random-weight decoder written with the library's GGUF writer, so that
// the examples run without a download. The weights stay in memory too, for the
// examples that check the library against a plain scalar forward pass.
//
// Layout as llama.cpp writes it: a matrix tensor with ne = {cols, rows} holds
// rows x cols floats, row-major; y[r] = sum_c W[r * cols + c] * x[c].
#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "archetype/io/gguf_writer.hpp"

namespace examples {

struct tiny_decoder {
    std::string arch = "llama";
    std::size_t n_vocab = 64, n_embd = 32, n_layer = 2, n_head = 4, n_head_kv = 2, n_ff = 48, n_ctx = 128;
    float rope_base = 10000.f, eps = 1e-5f;
    std::map<std::string, std::vector<float>> w;            // tensor name -> values
    std::map<std::string, std::vector<std::uint64_t>> ne;   // tensor name -> GGUF shape
    std::map<std::string, std::uint32_t> extra_u32;         // more metadata keys
    std::map<std::string, float> extra_f32;
    std::map<std::string, std::vector<float>> extra_f32_array;
    /// head_count_kv per layer (written as the array key when not empty; 0 marks a layer
    /// without attention, as hybrids' files do)
    std::vector<std::uint32_t> head_count_kv_per_layer;
    // A vocabulary (empty: the file says no_vocab): a byte-level BPE ("gpt2") with
    // these tokens, token types and merges, and a chat template if not empty.
    std::vector<std::string> vocab, merges;
    std::vector<std::int32_t> vocab_types;
    std::int32_t bos = -1, eos = -1;
    std::string chat_template;

    std::size_t head_dim() const { return n_embd / n_head; }

    /// Seeded random weights for every tensor of a llama-shaped decoder.
    void randomise(std::uint32_t seed) {
        std::mt19937 rng(seed);
        std::normal_distribution<float> nd(0.f, 1.f);
        auto tensor = [&](const std::string& name, std::vector<std::uint64_t> shape, float scale, float offset = 0.f) {
            std::size_t n = 1;
            for (auto d : shape) n *= d;
            std::vector<float> v(n);
            for (auto& x : v) x = offset + scale * nd(rng);
            w[name] = std::move(v);
            ne[name] = std::move(shape);
        };
        const std::size_t E = n_embd, kv = head_dim() * n_head_kv;
        tensor("token_embd.weight", {E, n_vocab}, 1.f);
        for (std::size_t il = 0; il < n_layer; ++il) {
            const std::string b = "blk." + std::to_string(il) + ".";
            tensor(b + "attn_norm.weight", {E}, 0.2f, 1.f);
            tensor(b + "attn_q.weight", {E, E}, 0.25f);
            tensor(b + "attn_k.weight", {E, kv}, 0.25f);
            tensor(b + "attn_v.weight", {E, kv}, 0.25f);
            tensor(b + "attn_output.weight", {E, E}, 0.25f);
            tensor(b + "ffn_norm.weight", {E}, 0.2f, 1.f);
            tensor(b + "ffn_gate.weight", {E, n_ff}, 0.25f);
            tensor(b + "ffn_up.weight", {E, n_ff}, 0.25f);
            tensor(b + "ffn_down.weight", {n_ff, E}, 0.2f);
        }
        tensor("output_norm.weight", {E}, 0.2f, 1.f);
        tensor("output.weight", {E, n_vocab}, 0.25f);
    }

    void write(const std::string& path) const {
        archetype::gguf::writer g;
        const std::string a = arch + ".";
        g.set("general.architecture", arch);
        g.set("general.name", "tiny-random-" + arch);
        g.set(a + "vocab_size", std::uint32_t(n_vocab));
        g.set(a + "context_length", std::uint32_t(n_ctx));
        g.set(a + "embedding_length", std::uint32_t(n_embd));
        g.set(a + "block_count", std::uint32_t(n_layer));
        g.set(a + "feed_forward_length", std::uint32_t(n_ff));
        g.set(a + "attention.head_count", std::uint32_t(n_head));
        if (head_count_kv_per_layer.empty()) g.set(a + "attention.head_count_kv", std::uint32_t(n_head_kv));
        else g.set(a + "attention.head_count_kv", head_count_kv_per_layer);
        g.set(a + "rope.freq_base", rope_base);
        g.set(a + "attention.layer_norm_rms_epsilon", eps);
        for (const auto& [k, v] : extra_u32) g.set(a + k, v);
        for (const auto& [k, v] : extra_f32) g.set(a + k, v);
        for (const auto& [k, v] : extra_f32_array) g.set(a + k, v);
        if (vocab.empty()) {
            g.set("tokenizer.ggml.model", "no_vocab");
        } else {
            g.set("tokenizer.ggml.model", "gpt2");
            g.set("tokenizer.ggml.tokens", vocab);
            g.set("tokenizer.ggml.token_type", vocab_types);
            g.set("tokenizer.ggml.merges", merges);
            if (bos >= 0) g.set("tokenizer.ggml.bos_token_id", std::uint32_t(bos));
            if (eos >= 0) g.set("tokenizer.ggml.eos_token_id", std::uint32_t(eos));
        }
        if (!chat_template.empty()) g.set("tokenizer.chat_template", chat_template);
        for (const auto& [name, v] : w) g.add_tensor(name, archetype::ggml_type::F32, ne.at(name), v);
        g.write(path);
    }
};

} // namespace examples
