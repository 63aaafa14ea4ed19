#pragma once
// Seeded random-weight GGUF decoders (`llama`, `mellum` or `olmoe` layout) written with
// archetype's GGUF writer, for property tests and benchmarks. Weights are
// uniform in [-scale, scale] from a counter-based generator (splitmix64 of
// seed, tensor index and element index), so any size streams without holding
// the model in memory. Norm weights are 1 + 0.05 u.
#include <cstdint>
#include <string>
#include <vector>

#include "archetype/io/gguf_writer.hpp"
#include "archetype/kernels/quant/quantize.hpp"
#include "archetype/runtime/tokenizer/bpe.hpp"

namespace random_decoder {

struct spec {
    std::string arch = "llama";
    std::size_t n_vocab = 128, n_embd = 64, n_layer = 2, n_head = 4, n_head_kv = 2, n_ff = 96, n_ctx = 1024;
    std::uint64_t seed = 1;
    std::size_t n_expert = 0, n_expert_used = 0; // mellum, olmoe: MoE (0 = 1 expert)
    std::size_t window = 0;                      // mellum: sliding window
    std::vector<bool> swa_pattern;               // mellum: per layer
    bool tied = false;                           // no output.weight
    bool qk_norm = false;                        // mellum writes attn_{q,k}_norm
    float scale = 0.1f;
    std::size_t n_pos = 0;                       // > 0: position_embd.weight with n_pos rows
    std::size_t rel_buckets = 0;                 // > 0: blk.0.attn_rel_b.weight [n_head, rel_buckets]
    bool rel_bias_every_layer = false;           // ... and one per layer
    /// Type of the weight matrices (not the norms): F32, or a type quant::quantize_row
    /// makes (Q8_0, Q4_0, Q4_1, ...), each row quantised from the same floats.
    archetype::ggml_type matrix_type = archetype::ggml_type::F32;
    /// A GPT-2 byte-level vocabulary (tokenizer.ggml.model "gpt2", no merges): ids 0..255
    /// the bytes, then <|endoftext|> (EOS), <|im_start|>, <|im_end|> and control fillers up
    /// to n_vocab (>= 259), so that text round-trips and a ChatML conversation renders.
    bool byte_vocab = false;
};

inline std::uint64_t splitmix(std::uint64_t x) {
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}
/// Uniform in [-1, 1).
inline float uniform(std::uint64_t seed, std::uint64_t tensor, std::uint64_t i) {
    const std::uint64_t r = splitmix(seed * 0x100000001B3ull ^ splitmix(tensor * 0x9E3779B97F4A7C15ull + i));
    return float(double(r >> 40) / double(1ull << 23) - 1.0);
}

inline void write(const spec& s, const std::string& path) {
    using archetype::ggml_type;
    archetype::gguf::writer w;
    const std::string a = s.arch + ".";
    const std::size_t hd = s.n_embd / s.n_head, kv = hd * s.n_head_kv;
    w.set("general.architecture", s.arch);
    w.set("general.name", "random-" + s.arch);
    w.set("general.file_type", std::uint32_t(0));
    w.set(a + "vocab_size", std::uint32_t(s.n_vocab));
    w.set(a + "context_length", std::uint32_t(s.n_ctx));
    w.set(a + "embedding_length", std::uint32_t(s.n_embd));
    w.set(a + "block_count", std::uint32_t(s.n_layer));
    w.set(a + "feed_forward_length", std::uint32_t(s.n_ff));
    w.set(a + "attention.head_count", std::uint32_t(s.n_head));
    w.set(a + "attention.head_count_kv", std::uint32_t(s.n_head_kv));
    w.set(a + "rope.dimension_count", std::uint32_t(hd));
    w.set(a + "rope.freq_base", 10000.f);
    w.set(a + "attention.layer_norm_rms_epsilon", 1e-5f);
    const bool mellum = s.arch == "mellum", olmoe = s.arch == "olmoe", moe = mellum || olmoe;
    const std::size_t E = std::max<std::size_t>(1, s.n_expert);
    if (moe) {
        w.set(a + "expert_feed_forward_length", std::uint32_t(s.n_ff));
        w.set(a + "expert_count", std::uint32_t(E));
        w.set(a + "expert_used_count", std::uint32_t(s.n_expert == 0 ? 1 : s.n_expert_used));
        if (s.window) {
            w.set(a + "attention.sliding_window", std::uint32_t(s.window));
            std::vector<bool> pat = s.swa_pattern;
            if (pat.empty()) pat.assign(s.n_layer, true);
            w.set(a + "attention.sliding_window_pattern", pat);
        }
    }
    if (s.byte_vocab) {
        if (s.n_vocab < 259) throw archetype::argument_error("byte_vocab needs n_vocab >= 259");
        const auto cp = archetype::tokenizer::gpt2_byte_to_cp();
        std::vector<std::string> tokens;
        std::vector<std::int32_t> types;
        for (std::size_t b = 0; b < 256; ++b) {
            std::string t;
            const char32_t c = cp[b];
            if (c < 0x80) t += char(c);
            else if (c < 0x800) t += char(0xC0 | (c >> 6)), t += char(0x80 | (c & 0x3F));
            else t += char(0xE0 | (c >> 12)), t += char(0x80 | ((c >> 6) & 0x3F)), t += char(0x80 | (c & 0x3F));
            tokens.push_back(t);
            types.push_back(1);
        }
        for (const char* sp : {"<|endoftext|>", "<|im_start|>", "<|im_end|>"}) tokens.push_back(sp), types.push_back(3);
        while (tokens.size() < s.n_vocab) tokens.push_back("<|extra_" + std::to_string(tokens.size()) + "|>"), types.push_back(3);
        w.set("tokenizer.ggml.model", "gpt2");
        w.set("tokenizer.ggml.pre", "default");
        w.set("tokenizer.ggml.tokens", tokens);
        w.set("tokenizer.ggml.token_type", types);
        w.set("tokenizer.ggml.merges", std::vector<std::string>{});
        w.set("tokenizer.ggml.eos_token_id", std::uint32_t(256));
        w.set("tokenizer.ggml.bos_token_id", std::uint32_t(256));
        w.set("tokenizer.ggml.add_bos_token", false);
    } else {
        w.set("tokenizer.ggml.model", "no_vocab");
    }
    std::uint64_t index = 0;
    // norm: 1 + 0.05 u; f32: kept F32 when the matrices are quantised (the router, as llama-quantize keeps it)
    auto tensor = [&](const std::string& name, std::vector<std::uint64_t> ne, bool norm = false, bool f32 = false) {
        const std::uint64_t id = index++;
        const std::uint64_t seed = s.seed;
        const float sc = s.scale;
        if (!norm && !f32 && ne.size() >= 2 && s.matrix_type != ggml_type::F32) {
            const ggml_type t = s.matrix_type;
            const std::size_t cols = ne[0];
            w.add_tensor(name, t, ne, [id, seed, sc, t, cols](std::byte* dst, std::size_t n_bytes) {
                const auto tr = archetype::traits_of(t);
                const std::size_t row_bytes = cols / tr.block_size * tr.type_size;
                std::vector<float> row(cols);
                for (std::size_t r = 0; r < n_bytes / row_bytes; ++r) {
                    for (std::size_t i = 0; i < cols; ++i) row[i] = sc * uniform(seed, id, r * cols + i);
                    archetype::quant::quantize_row(t, row.data(), dst + r * row_bytes, cols);
                }
            });
            return;
        }
        w.add_tensor(name, ggml_type::F32, ne, [id, seed, sc, norm](std::byte* dst, std::size_t n_bytes) {
            auto* f = reinterpret_cast<float*>(dst);
            for (std::size_t i = 0; i < n_bytes / 4; ++i) {
                const float u = uniform(seed, id, i);
                f[i] = norm ? 1.f + 0.05f * u : sc * u;
            }
        });
    };
    tensor("token_embd.weight", {s.n_embd, s.n_vocab});
    for (std::size_t il = 0; il < s.n_layer; ++il) {
        const std::string b = "blk." + std::to_string(il) + ".";
        tensor(b + "attn_norm.weight", {s.n_embd}, true);
        tensor(b + "attn_q.weight", {s.n_embd, s.n_embd});
        tensor(b + "attn_k.weight", {s.n_embd, kv});
        tensor(b + "attn_v.weight", {s.n_embd, kv});
        if (s.qk_norm) { // OLMoE normalises the whole projection, Mellum each head
            tensor(b + "attn_q_norm.weight", {olmoe ? s.n_embd : hd}, true);
            tensor(b + "attn_k_norm.weight", {olmoe ? kv : hd}, true);
        }
        tensor(b + "attn_output.weight", {s.n_embd, s.n_embd});
        tensor(b + "ffn_norm.weight", {s.n_embd}, true);
        if (moe) {
            tensor(b + "ffn_gate_inp.weight", {s.n_embd, E}, false, true);
            tensor(b + "ffn_gate_exps.weight", {s.n_embd, s.n_ff, E});
            tensor(b + "ffn_up_exps.weight", {s.n_embd, s.n_ff, E});
            tensor(b + "ffn_down_exps.weight", {s.n_ff, s.n_embd, E});
        } else {
            tensor(b + "ffn_gate.weight", {s.n_embd, s.n_ff});
            tensor(b + "ffn_up.weight", {s.n_embd, s.n_ff});
            tensor(b + "ffn_down.weight", {s.n_ff, s.n_embd});
        }
    }
    tensor("output_norm.weight", {s.n_embd}, true);
    if (!s.tied) tensor("output.weight", {s.n_embd, s.n_vocab});
    // optional position tensors last, so the other tensors keep their values
    if (s.n_pos) tensor("position_embd.weight", {s.n_embd, s.n_pos});
    if (s.rel_buckets)
        for (std::size_t il = 0; il < (s.rel_bias_every_layer ? s.n_layer : 1); ++il)
            tensor("blk." + std::to_string(il) + ".attn_rel_b.weight", {s.n_head, s.rel_buckets}, true);
    w.write(path);
}

} // namespace random_decoder
