#pragma once
// What llama.cpp's `rwkv6` and `rwkv7` GGUF architectures share: the dimension keys
// under "{arch}.", the LayerNorm eps, the head-size check and the vocabulary size from
// token_embd.weight (io/arch/rwkv6.hpp and rwkv7.hpp add their own keys).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "archetype/core/error.hpp"
#include "archetype/io/gguf.hpp"

namespace archetype::arch {

struct rwkv_gguf_dims {
    std::size_t n_vocab = 0, n_embd = 0, n_layer = 0, head_size = 0, n_ffn = 0;
    float ln_eps = 1e-5f;
};

/// "{arch}.key" as a dimension in 1..limit (a format_error naming key and value otherwise).
inline std::size_t rwkv_gguf_dim(const gguf::file& f, std::string_view arch, const char* key,
                                 std::uint64_t limit = std::uint64_t(1) << 24) {
    const std::string k = std::string(arch) + "." + key;
    const auto v = f.get<std::uint64_t>(k);
    if (v == 0 || v > limit)
        throw format_error("metadata key '" + k + "' = " + std::to_string(v) + " is out of range (1.." +
                           std::to_string(limit) + ")");
    return static_cast<std::size_t>(v);
}

/// The shared keys of a file whose general.architecture must be `arch`.
inline rwkv_gguf_dims read_rwkv_gguf_dims(const gguf::file& f, std::string_view arch) {
    if (f.architecture() != arch)
        throw format_error("GGUF architecture '" + std::string(f.architecture()) + "' is not " + std::string(arch));
    const std::string a(arch);
    rwkv_gguf_dims d;
    d.n_embd = rwkv_gguf_dim(f, arch, "embedding_length");
    d.n_layer = rwkv_gguf_dim(f, arch, "block_count", 1u << 16);
    d.head_size = rwkv_gguf_dim(f, arch, "wkv.head_size");
    d.n_ffn = rwkv_gguf_dim(f, arch, "feed_forward_length");
    d.ln_eps = f.get<float>(a + ".attention.layer_norm_epsilon");
    if (!(d.ln_eps > 0.f) || d.ln_eps > 1.f)
        throw format_error("metadata key '" + a + ".attention.layer_norm_epsilon' = " + std::to_string(d.ln_eps) +
                           " is out of range (0, 1]");
    if (d.n_embd % d.head_size != 0)
        throw format_error(a + ".embedding_length " + std::to_string(d.n_embd) + " is not a multiple of " + a +
                           ".wkv.head_size " + std::to_string(d.head_size));
    // llama.cpp's converter writes head_count 0 (the heads follow from wkv.head_size) and
    // a context_length the recurrence does not limit; a head count that disagrees is refused
    if (const std::string hk = a + ".attention.head_count"; f.has(hk)) {
        const auto h = f.get<std::uint64_t>(hk);
        if (h != 0 && h != d.n_embd / d.head_size)
            throw format_error("metadata key '" + hk + "' = " + std::to_string(h) + " disagrees with embedding_length / "
                               "wkv.head_size = " + std::to_string(d.n_embd / d.head_size));
    }
    if (f.has(a + ".context_length")) (void)f.get<std::uint64_t>(a + ".context_length"); // informational
    const auto& emb = f.tensor("token_embd.weight");
    if (emb.ne.size() != 2 || emb.ne[0] != d.n_embd)
        throw format_error("tensor 'token_embd.weight' has shape " + emb.shape_string() + ", expected [" +
                           std::to_string(d.n_embd) + ", n_vocab]");
    d.n_vocab = static_cast<std::size_t>(emb.ne[1]);
    return d;
}

} // namespace archetype::arch
