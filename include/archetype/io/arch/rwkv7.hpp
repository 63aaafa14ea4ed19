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
#include "archetype/io/gguf.hpp"

namespace archetype::arch {

struct rwkv7_hparams {
    std::size_t n_vocab = 0, n_embd = 0, n_layer = 0, head_size = 0, n_ffn = 0;
    std::size_t n_lora_decay = 0, n_lora_iclr = 0, n_lora_vres = 0, n_lora_gate = 0;
    float ln_eps = 1e-5f;

    static rwkv7_hparams from_gguf(const gguf::file& f) {
        const auto arch = f.architecture();
        if (arch != "rwkv7") throw format_error("GGUF architecture '" + std::string(arch) + "' is not rwkv7");
        auto dim = [&](const char* key, std::uint64_t limit = std::uint64_t(1) << 24) {
            const std::string k = std::string("rwkv7.") + key;
            const auto v = f.get<std::uint64_t>(k);
            if (v == 0 || v > limit)
                throw format_error("metadata key '" + k + "' = " + std::to_string(v) + " is out of range (1.." +
                                   std::to_string(limit) + ")");
            return static_cast<std::size_t>(v);
        };
        rwkv7_hparams hp;
        hp.n_embd = dim("embedding_length");
        hp.n_layer = dim("block_count", 1u << 16);
        hp.head_size = dim("wkv.head_size");
        hp.n_ffn = dim("feed_forward_length");
        hp.n_lora_decay = dim("attention.decay_lora_rank");
        hp.n_lora_iclr = dim("attention.iclr_lora_rank");
        hp.n_lora_vres = dim("attention.value_residual_mix_lora_rank");
        hp.n_lora_gate = dim("attention.gate_lora_rank");
        hp.ln_eps = f.get<float>("rwkv7.attention.layer_norm_epsilon");
        if (!(hp.ln_eps > 0.f) || hp.ln_eps > 1.f)
            throw format_error("metadata key 'rwkv7.attention.layer_norm_epsilon' = " + std::to_string(hp.ln_eps) +
                               " is out of range (0, 1]");
        if (hp.n_embd % hp.head_size != 0)
            throw format_error("rwkv7.embedding_length " + std::to_string(hp.n_embd) +
                               " is not a multiple of rwkv7.wkv.head_size " + std::to_string(hp.head_size));
        const auto& emb = f.tensor("token_embd.weight");
        if (emb.ne.size() != 2 || emb.ne[0] != hp.n_embd)
            throw format_error("tensor 'token_embd.weight' has shape " + emb.shape_string() + ", expected [" +
                               std::to_string(hp.n_embd) + ", n_vocab]");
        hp.n_vocab = static_cast<std::size_t>(emb.ne[1]);
        return hp;
    }
};

} // namespace archetype::arch
