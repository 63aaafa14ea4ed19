#pragma once
// llama.cpp's `rwkv6` GGUF architecture: hyperparameters and tensor names
// (../shared/fixtures/README.md §3.4; llama.cpp src/llama-arch.cpp):
//
//   rwkv6.embedding_length, block_count, wkv.head_size, feed_forward_length,
//   time_mix_extra_dim (ddlerp LoRA rank), time_decay_extra_dim      required
//   rwkv6.attention.layer_norm_epsilon      required (llama.cpp requires it)
//   rwkv6.rescale_every_n_layers            default 0 (never halve x)
//   vocabulary size: rows of token_embd.weight
//
// Tensors (per block `blk.N.`): attn_norm, attn_norm_2, time_mix_lerp_x,
// time_mix_lerp_fused ([C,1,1,5]: maa w,k,v,r,g), time_mix_w1 [C, 5 D_MIX],
// time_mix_w2 [D_MIX, C, 5], time_mix_decay [C], time_mix_decay_w1 [C, D_DECAY],
// time_mix_decay_w2 [D_DECAY, C], time_mix_first [N, H], time_mix_{receptance,
// key,value,gate,output}, time_mix_ln, channel_mix_lerp_{k,r}, channel_mix_{key,
// receptance,value}; globally token_embd, token_embd_norm, output_norm, output.
#include <cstddef>
#include <cstdint>
#include <string>

#include "archetype/core/error.hpp"
#include "archetype/io/gguf.hpp"

namespace archetype::arch {

struct rwkv6_hparams {
    std::size_t n_vocab = 0, n_embd = 0, n_layer = 0, head_size = 0, n_ffn = 0;
    std::size_t n_lora_mix = 0, n_lora_decay = 0, rescale_every = 0;
    float ln_eps = 1e-5f;

    static rwkv6_hparams from_gguf(const gguf::file& f) {
        const auto arch = f.architecture();
        if (arch != "rwkv6")
            throw format_error("GGUF architecture '" + std::string(arch) + "' is not rwkv6");
        auto dim = [&](const char* key, std::uint64_t limit = std::uint64_t(1) << 24) {
            const std::string k = std::string("rwkv6.") + key;
            const auto v = f.get<std::uint64_t>(k);
            if (v == 0 || v > limit)
                throw format_error("metadata key '" + k + "' = " + std::to_string(v) + " is out of range (1.." +
                                   std::to_string(limit) + ")");
            return static_cast<std::size_t>(v);
        };
        rwkv6_hparams hp;
        hp.n_embd = dim("embedding_length");
        hp.n_layer = dim("block_count", 1u << 16);
        hp.head_size = dim("wkv.head_size");
        hp.n_ffn = dim("feed_forward_length");
        hp.n_lora_mix = dim("time_mix_extra_dim");
        hp.n_lora_decay = dim("time_decay_extra_dim");
        hp.rescale_every = static_cast<std::size_t>(f.get_or<std::uint64_t>("rwkv6.rescale_every_n_layers", 0));
        hp.ln_eps = f.get<float>("rwkv6.attention.layer_norm_epsilon");
        if (!(hp.ln_eps > 0.f) || hp.ln_eps > 1.f)
            throw format_error("metadata key 'rwkv6.attention.layer_norm_epsilon' = " + std::to_string(hp.ln_eps) +
                               " is out of range (0, 1]");
        if (hp.n_embd % hp.head_size != 0)
            throw format_error("rwkv6.embedding_length " + std::to_string(hp.n_embd) +
                               " is not a multiple of rwkv6.wkv.head_size " + std::to_string(hp.head_size));
        const auto& emb = f.tensor("token_embd.weight");
        if (emb.ne.size() != 2 || emb.ne[0] != hp.n_embd)
            throw format_error("tensor 'token_embd.weight' has shape " + emb.shape_string() + ", expected [" +
                               std::to_string(hp.n_embd) + ", n_vocab]");
        hp.n_vocab = static_cast<std::size_t>(emb.ne[1]);
        return hp;
    }
};

/// GGUF tensor names of the rwkv6 architecture.
struct rwkv6_names {
    static std::string blk(std::size_t l, const char* what) { return "blk." + std::to_string(l) + "." + what; }
    static constexpr const char* token_embd = "token_embd.weight";
    static constexpr const char* token_embd_norm_w = "token_embd_norm.weight";
    static constexpr const char* token_embd_norm_b = "token_embd_norm.bias";
    static constexpr const char* output_norm_w = "output_norm.weight";
    static constexpr const char* output_norm_b = "output_norm.bias";
    static constexpr const char* output = "output.weight";
};

} // namespace archetype::arch
