#pragma once
// Seeded random RWKV-5.2 / RWKV-6 models, written in rwkv.cpp's .bin format (in
// memory) or as a llama.cpp `rwkv6` GGUF (with archetype's GGUF writer). Both
// formats of one spec hold exactly the same weights: every value is a hash of
// (seed, tensor, element), so the tests can compare the two loaders and the
// benchmarks can write GBs without holding them in memory.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <stdexcept>
#include <utility>
#include <string>
#include <vector>

#include "archetype/core/dtype.hpp"
#include "archetype/core/half.hpp"
#include "archetype/io/gguf_writer.hpp"

namespace rwkv_test {

struct model_spec {
    int version = 6;
    std::size_t C = 64, N = 16, L = 2, V = 96, F = 128, DM = 8, DD = 16;
    bool f16 = false; // big matrices in F16 (as rwkv.cpp FP16 files and F16 GGUFs)
    std::uint64_t seed = 1;
    std::size_t H() const { return C / N; }
};

enum class kind { ln_w, ln_b, unit, matrix, lora, decay_raw, decay_mult, bonus };

inline float uniform(std::uint64_t seed, std::uint64_t id, std::uint64_t i) {
    std::uint64_t z = seed * 0x9E3779B97F4A7C15ull + id * 0xBF58476D1CE4E5B9ull + i * 0x94D049BB133111EBull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return float(double(z >> 40) / double(1ull << 24)) * 2.f - 1.f; // [-1, 1)
}

inline float value(const model_spec& s, std::uint64_t id, std::uint64_t i, kind k, std::size_t cols) {
    const float x = uniform(s.seed, id, i);
    switch (k) {
    case kind::ln_w: return 1.f + 0.2f * x;
    case kind::ln_b: return 0.1f * x;
    case kind::unit: return 0.5f + 0.5f * x;
    case kind::matrix: return x * 1.7f / std::sqrt(float(cols));
    case kind::lora: return 0.3f * x / std::sqrt(float(cols));
    case kind::decay_raw: return -3.5f + 2.5f * x;
    case kind::decay_mult: return std::exp(-std::exp(-3.5f + 2.5f * x));
    case kind::bonus: return 0.5f * x;
    }
    return 0.f;
}

/// One tensor of the model in rwkv.cpp naming; `id` seeds its values.
struct tensor_spec {
    std::string name;             // rwkv.cpp name
    std::vector<std::uint64_t> ne; // rwkv.cpp ne
    kind k;
    std::uint64_t id;
    bool big_matrix; // F16 when spec.f16
    std::size_t cols() const { return std::size_t(ne[0]); }
    std::size_t n() const {
        std::size_t n = 1;
        for (auto d : ne) n *= std::size_t(d);
        return n;
    }
};

inline std::vector<tensor_spec> tensors(const model_spec& s) {
    std::vector<tensor_spec> t;
    std::uint64_t id = 0;
    auto add = [&](std::string name, std::vector<std::uint64_t> ne, kind k, bool big = false) {
        t.push_back({std::move(name), std::move(ne), k, ++id, big});
    };
    const std::uint64_t C = s.C, N = s.N, H = s.H();
    add("emb.weight", {C, s.V}, kind::matrix, true);
    for (std::size_t l = 0; l < s.L; ++l) {
        const std::string p = "blocks." + std::to_string(l) + ".";
        add(p + "ln1.weight", {C}, kind::ln_w);
        add(p + "ln1.bias", {C}, kind::ln_b);
        add(p + "ln2.weight", {C}, kind::ln_w);
        add(p + "ln2.bias", {C}, kind::ln_b);
        if (l == 0) {
            add(p + "ln0.weight", {C}, kind::ln_w);
            add(p + "ln0.bias", {C}, kind::ln_b);
        }
        if (s.version == 6) {
            for (const char* m : {"x", "w", "k", "v", "r", "g"}) add(p + "att.time_maa_" + m, {C}, kind::unit);
            add(p + "att.time_maa_w1", {C, 5 * s.DM}, kind::lora);
            add(p + "att.time_maa_w2", {s.DM, C, 5}, kind::lora);
            add(p + "att.time_decay", {1, N, H}, kind::decay_raw);
            add(p + "att.time_decay_w1", {C, s.DD}, kind::lora);
            add(p + "att.time_decay_w2", {s.DD, C}, kind::lora);
        } else {
            add(p + "att.time_decay", {1, N, H}, kind::decay_mult);
            for (const char* m : {"k", "v", "r", "g"}) add(p + "att.time_mix_" + m, {C}, kind::unit);
        }
        add(p + "att.time_faaaa", {1, N, H}, kind::bonus);
        for (const char* m : {"receptance", "key", "value", "gate", "output"})
            add(p + "att." + m + ".weight", {C, C}, kind::matrix, true);
        add(p + "att.ln_x.weight", {C}, kind::ln_w);
        add(p + "att.ln_x.bias", {C}, kind::ln_b);
        if (s.version == 6) {
            add(p + "ffn.time_maa_k", {C}, kind::unit);
            add(p + "ffn.time_maa_r", {C}, kind::unit);
        } else {
            add(p + "ffn.time_mix_k", {C}, kind::unit);
            add(p + "ffn.time_mix_r", {C}, kind::unit);
        }
        add(p + "ffn.key.weight", {C, s.F}, kind::matrix, true);
        add(p + "ffn.receptance.weight", {C, C}, kind::matrix, true);
        add(p + "ffn.value.weight", {s.F, C}, kind::matrix, true);
    }
    add("ln_out.weight", {C}, kind::ln_w);
    add("ln_out.bias", {C}, kind::ln_b);
    add("head.weight", {C, s.V}, kind::matrix, true);
    return t;
}

inline void put_i32(std::vector<std::byte>& out, std::int32_t v) {
    const auto* p = reinterpret_cast<const std::byte*>(&v);
    out.insert(out.end(), p, p + 4);
}

/// The model as an rwkv.cpp .bin file (version 101).
inline std::vector<std::byte> make_bin(const model_spec& s) {
    std::vector<std::byte> out;
    for (std::int32_t v : {0x67676d66, 101, std::int32_t(s.V), std::int32_t(s.C), std::int32_t(s.L), s.f16 ? 1 : 0})
        put_i32(out, v);
    for (const auto& t : tensors(s)) {
        const bool half = s.f16 && t.big_matrix;
        put_i32(out, std::int32_t(t.ne.size()));
        put_i32(out, std::int32_t(t.name.size()));
        put_i32(out, half ? 1 : 0);
        for (auto d : t.ne) put_i32(out, std::int32_t(d));
        for (char c : t.name) out.push_back(std::byte(c));
        for (std::size_t i = 0; i < t.n(); ++i) {
            const float v = value(s, t.id, i, t.k, t.cols());
            if (half) {
                const std::uint16_t h = archetype::fp32_to_fp16(v);
                const auto* p = reinterpret_cast<const std::byte*>(&h);
                out.insert(out.end(), p, p + 2);
            } else {
                const auto* p = reinterpret_cast<const std::byte*>(&v);
                out.insert(out.end(), p, p + 4);
            }
        }
    }
    return out;
}

/// The same weights as a llama.cpp rwkv6 GGUF (v6 only), filled at write time.
inline archetype::gguf::writer make_gguf(const model_spec& s) {
    using archetype::ggml_type;
    archetype::gguf::writer w;
    w.set("general.architecture", std::string("rwkv6"));
    w.set("general.name", std::string("random rwkv6"));
    w.set("rwkv6.context_length", std::uint32_t(1048576));
    w.set("rwkv6.embedding_length", std::uint32_t(s.C));
    w.set("rwkv6.block_count", std::uint32_t(s.L));
    w.set("rwkv6.attention.layer_norm_epsilon", 1e-5f);
    w.set("rwkv6.rescale_every_n_layers", std::uint32_t(0));
    w.set("rwkv6.wkv.head_size", std::uint32_t(s.N));
    w.set("rwkv6.time_mix_extra_dim", std::uint32_t(s.DM));
    w.set("rwkv6.time_decay_extra_dim", std::uint32_t(s.DD));
    w.set("rwkv6.feed_forward_length", std::uint32_t(s.F));
    w.set("rwkv6.attention.head_count", std::uint32_t(0));
    w.set("general.file_type", std::uint32_t(s.f16 ? 1 : 0));
    w.set("tokenizer.ggml.model", std::string("rwkv"));
    std::vector<std::string> toks;
    std::vector<std::int32_t> types;
    for (std::size_t i = 0; i < s.V; ++i) {
        toks.push_back("t" + std::to_string(i));
        types.push_back(1);
    }
    w.set("tokenizer.ggml.tokens", toks);
    w.set("tokenizer.ggml.token_type", types);

    const auto all = tensors(s);
    auto P = [&](const std::string& n) -> tensor_spec {
        for (const auto& t : all)
            if (t.name == n) return t;
        throw std::runtime_error("no tensor " + n);
    };
    // each callback owns copies of its source tensors' specs (values are recomputed at write time)
    auto emit = [&](const std::string& gname, std::vector<std::uint64_t> ne, std::vector<tensor_spec> parts,
                    bool half) {
        w.add_tensor(gname, half ? ggml_type::F16 : ggml_type::F32, std::move(ne),
                     [spec = s, parts = std::move(parts), half](std::byte* dst, std::size_t) {
                         std::size_t o = 0;
                         for (const auto& t : parts)
                             for (std::size_t i = 0; i < t.n(); ++i, ++o) {
                                 const float v = value(spec, t.id, i, t.k, t.cols());
                                 if (half) {
                                     const std::uint16_t h = archetype::fp32_to_fp16(v);
                                     std::memcpy(dst + 2 * o, &h, 2);
                                 } else {
                                     std::memcpy(dst + 4 * o, &v, 4);
                                 }
                             }
                     });
    };
    const std::uint64_t C = s.C;
    emit("token_embd.weight", {C, s.V}, {P("emb.weight")}, s.f16);
    emit("token_embd_norm.weight", {C}, {P("blocks.0.ln0.weight")}, false);
    emit("token_embd_norm.bias", {C}, {P("blocks.0.ln0.bias")}, false);
    for (std::size_t l = 0; l < s.L; ++l) {
        const std::string p = "blocks." + std::to_string(l) + ".", g = "blk." + std::to_string(l) + ".";
        emit(g + "attn_norm.weight", {C}, {P(p + "ln1.weight")}, false);
        emit(g + "attn_norm.bias", {C}, {P(p + "ln1.bias")}, false);
        emit(g + "attn_norm_2.weight", {C}, {P(p + "ln2.weight")}, false);
        emit(g + "attn_norm_2.bias", {C}, {P(p + "ln2.bias")}, false);
        emit(g + "time_mix_lerp_x.weight", {C}, {P(p + "att.time_maa_x")}, false);
        emit(g + "time_mix_lerp_fused.weight", {C, 1, 1, 5},
             {P(p + "att.time_maa_w"), P(p + "att.time_maa_k"), P(p + "att.time_maa_v"), P(p + "att.time_maa_r"),
              P(p + "att.time_maa_g")},
             false);
        emit(g + "time_mix_w1.weight", {C, 5 * s.DM}, {P(p + "att.time_maa_w1")}, false);
        emit(g + "time_mix_w2.weight", {s.DM, C, 5}, {P(p + "att.time_maa_w2")}, false);
        emit(g + "time_mix_decay.weight", {C}, {P(p + "att.time_decay")}, false);
        emit(g + "time_mix_decay_w1.weight", {C, s.DD}, {P(p + "att.time_decay_w1")}, false);
        emit(g + "time_mix_decay_w2.weight", {s.DD, C}, {P(p + "att.time_decay_w2")}, false);
        emit(g + "time_mix_first.weight", {s.N, s.H()}, {P(p + "att.time_faaaa")}, false);
        for (auto [b, gg] : {std::pair{"receptance", "receptance"}, {"key", "key"}, {"value", "value"},
                             {"gate", "gate"}, {"output", "output"}})
            emit(g + "time_mix_" + gg + ".weight", {C, C}, {P(p + "att." + b + ".weight")}, s.f16);
        emit(g + "time_mix_ln.weight", {C}, {P(p + "att.ln_x.weight")}, false);
        emit(g + "time_mix_ln.bias", {C}, {P(p + "att.ln_x.bias")}, false);
        emit(g + "channel_mix_lerp_k.weight", {C}, {P(p + "ffn.time_maa_k")}, false);
        emit(g + "channel_mix_lerp_r.weight", {C}, {P(p + "ffn.time_maa_r")}, false);
        emit(g + "channel_mix_key.weight", {C, s.F}, {P(p + "ffn.key.weight")}, s.f16);
        emit(g + "channel_mix_receptance.weight", {C, C}, {P(p + "ffn.receptance.weight")}, s.f16);
        emit(g + "channel_mix_value.weight", {s.F, C}, {P(p + "ffn.value.weight")}, s.f16);
    }
    emit("output_norm.weight", {C}, {P("ln_out.weight")}, false);
    emit("output_norm.bias", {C}, {P("ln_out.bias")}, false);
    emit("output.weight", {C, s.V}, {P("head.weight")}, s.f16);
    return w;
}

} // namespace rwkv_test
