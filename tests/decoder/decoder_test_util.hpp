#pragma once
// Shared pieces of the decoder tests: seeded random models in temporary files,
// token sequences, and feeding a prompt in calls of a given size.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <span>
#include <string>
#include <vector>
#include <unistd.h>

#include "archetype/models/decoder_model.hpp"
#include "archetype/runtime/decoder_session.hpp"
#include "random_decoder.hpp"

namespace decoder_test {

/// A random_decoder model written under $TMPDIR for the lifetime of the object.
struct temp_model {
    std::string path;
    temp_model(const random_decoder::spec& s, const std::string& name) {
        const char* d = std::getenv("TMPDIR");
        path = std::string(d ? d : "/tmp") + "/archetype_dec_" + std::to_string(::getpid()) + "_" + name + ".gguf";
        random_decoder::write(s, path);
    }
    temp_model(const temp_model&) = delete;
    temp_model& operator=(const temp_model&) = delete;
    ~temp_model() { std::remove(path.c_str()); }
};

/// A small llama-layout model: vocab 96, 64 dims, 2 layers, 4 heads / 2 kv heads, FFN 80.
inline random_decoder::spec small_llama(std::uint64_t seed) {
    random_decoder::spec s;
    s.n_vocab = 96;
    s.n_embd = 64;
    s.n_head = 4;
    s.n_head_kv = 2;
    s.n_ff = 80;
    s.n_ctx = 1024;
    s.seed = seed;
    s.scale = 0.15f;
    return s;
}

inline std::vector<std::int32_t> tokens(std::size_t n, std::uint64_t seed, std::size_t vocab) {
    std::vector<std::int32_t> t(n);
    for (std::size_t i = 0; i < n; ++i) t[i] = std::int32_t(random_decoder::splitmix(seed * 7919 + i) % vocab);
    return t;
}

/// Logits of every position fed in calls of `step` tokens (0 = one call).
template <class D>
std::vector<float> feed(const archetype::decoder_model<D>& m, const std::vector<std::int32_t>& t, std::size_t step,
                        std::size_t n_ctx = 512, std::size_t threads = 2,
                        archetype::kv_cache_type kv = archetype::kv_cache_type::f32) {
    auto s = archetype::session(m, {.n_threads = threads, .max_sequences = 1, .n_ctx = n_ctx, .kv_type = kv});
    const std::size_t V = m.n_vocab();
    std::vector<float> out(t.size() * V);
    if (step == 0) step = t.size();
    for (std::size_t b = 0; b < t.size(); b += step) {
        const std::size_t c = std::min(step, t.size() - b);
        s.prefill(0, std::span<const std::int32_t>(t.data() + b, c), out.data() + b * V);
    }
    return out;
}

} // namespace decoder_test
