#pragma once
// llama.cpp's `rwkv7` GGUF architecture: hyperparameters (../shared/fixtures/README.md
// §3.6; llama.cpp src/llama-arch.cpp, src/models/rwkv7*.cpp):
//
//   rwkv7.embedding_length, block_count, wkv.head_size, feed_forward_length,
//   attention.{decay,iclr,value_residual_mix,gate}_lora_rank       required
//   rwkv7.attention.layer_norm_epsilon      required (llama.cpp requires it)
//   vocabulary size: rows of token_embd.weight
//
// Tensors (per block `blk.N.`): attn_norm, attn_norm_2 (+ .bias), time_mix_lerp_fused
// ([C,1,1,6]: r, w, k, v, a, g), time_mix_{w,a,v,g}1 [C, D], time_mix_{w,a,v,g}2 [D, C],
// time_mix_{w0,a0,v0,k_k,k_a,r_k} [C], time_mix_{receptance,key,value,output},
// time_mix_ln (+ .bias), channel_mix_lerp_k, channel_mix_{key,value}; globally
// token_embd, token_embd_norm, output_norm, output. Layer 0's time_mix_v{0,1,2} are
// copies of its a-LoRA the converter writes because llama.cpp requires the names;
// layer 0 has no value residual, and nothing reads them.
#include <cstddef>
#include <cstdint>
#include <string>

#include "archetype/core/error.hpp"
#include "archetype/io/arch/rwkv_gguf.hpp"
#include "archetype/io/gguf.hpp"

namespace archetype::arch {

struct rwkv7_hparams : rwkv_gguf_dims {
    std::size_t n_lora_decay = 0, n_lora_iclr = 0, n_lora_vres = 0, n_lora_gate = 0;

    static rwkv7_hparams from_gguf(const gguf::file& f) {
        rwkv7_hparams hp;
        static_cast<rwkv_gguf_dims&>(hp) = read_rwkv_gguf_dims(f, "rwkv7");
        hp.n_lora_decay = rwkv_gguf_dim(f, "rwkv7", "attention.decay_lora_rank");
        hp.n_lora_iclr = rwkv_gguf_dim(f, "rwkv7", "attention.iclr_lora_rank");
        hp.n_lora_vres = rwkv_gguf_dim(f, "rwkv7", "attention.value_residual_mix_lora_rank");
        hp.n_lora_gate = rwkv_gguf_dim(f, "rwkv7", "attention.gate_lora_rank");
        return hp;
    }
};

} // namespace archetype::arch
