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
#include "archetype/io/arch/rwkv_gguf.hpp"
#include "archetype/io/gguf.hpp"

namespace archetype::arch {

struct rwkv6_hparams : rwkv_gguf_dims {
    std::size_t n_lora_mix = 0, n_lora_decay = 0, rescale_every = 0;

    static rwkv6_hparams from_gguf(const gguf::file& f) {
        rwkv6_hparams hp;
        static_cast<rwkv_gguf_dims&>(hp) = read_rwkv_gguf_dims(f, "rwkv6");
        hp.n_lora_mix = rwkv_gguf_dim(f, "rwkv6", "time_mix_extra_dim");
        hp.n_lora_decay = rwkv_gguf_dim(f, "rwkv6", "time_decay_extra_dim");
        hp.rescale_every = static_cast<std::size_t>(f.get_or<std::uint64_t>("rwkv6.rescale_every_n_layers", 0));
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
