#pragma once
// The weights of an RWKV-5/6/7 model as the layers read them: plain views (into
// the mapped file, or into buffers owned by the loaded model) plus the
// hyperparameters. Filled by io (rwkv.cpp .bin or GGUF rwkv6); no file format
// knowledge here.
#include <array>
#include <cstddef>
#include <vector>

#include "archetype/kernels/matmul.hpp"

namespace archetype {

struct rwkv_hparams {
    int version = 6;            ///< 5 (v5.2 Eagle), 6 (Finch) or 7 (Goose)
    std::size_t n_vocab = 0;
    std::size_t n_embd = 0;     ///< C
    std::size_t n_layer = 0;
    std::size_t head_size = 0;  ///< N
    std::size_t n_head = 0;     ///< H = C / N
    std::size_t n_ffn = 0;      ///< channel-mix hidden size
    std::size_t n_lora_mix = 0;   ///< v6 ddlerp LoRA rank (D_MIX), per one of the 5 mixes
    std::size_t n_lora_decay = 0; ///< v6 / v7 decay LoRA rank
    std::size_t n_lora_iclr = 0;  ///< v7 in-context learning rate (a) LoRA rank
    std::size_t n_lora_vres = 0;  ///< v7 value-residual mix LoRA rank
    std::size_t n_lora_gate = 0;  ///< v7 output gate LoRA rank
    float ln_eps = 1e-5f;       ///< LayerNorm eps (ln0, ln1, ln2, ln_out)
    float gn_eps = 64e-5f;      ///< GroupNorm eps of ln_x (official 64e-5; rwkv.cpp v5 used 1e-5)
    std::size_t rescale_every = 0; ///< halve x after every n-th layer (0: never; llama.cpp's key)

    /// floats of recurrent state per layer: ffn shift, att shift, H x N x N wkv
    std::size_t state_floats_per_layer() const noexcept { return (2 + head_size) * n_embd; }
    std::size_t state_floats() const noexcept { return n_layer * state_floats_per_layer(); }
};

/// How the projections of a batch of rows sum along K (kernels::gemm_sum): in
/// blocks, so a prefill is as exact as the same tokens decoded one at a time
/// (GEMV). The fixtures' logits are held to 1e-5 in every feeding mode, close to
/// float32's rounding floor for their models; with one chain per output the batch
/// had twice the error of GEMV (AVX2: 1.43e-5 on v5.2 fox88, eps 1e-5).
inline constexpr kernels::gemm_sum rwkv_gemm_sum = kernels::gemm_sum::blocks;

/// Order of the five v6 token-shift mixes, as in the files (fused lerp, W2 slices).
enum rwkv_mix : std::size_t { mix_w = 0, mix_k = 1, mix_v = 2, mix_r = 3, mix_g = 4 };
/// Order of the six v7 token-shift lerps, as in the files (x_rwkvag, time_mix_lerp_fused).
enum rwkv7_mix : std::size_t { mix7_r = 0, mix7_w = 1, mix7_k = 2, mix7_v = 3, mix7_a = 4, mix7_g = 5 };

struct rwkv_layer_weights {
    const float *ln1_w = nullptr, *ln1_b = nullptr, *ln2_w = nullptr, *ln2_b = nullptr;
    // time mix token shift: x_c = xa + (prev - xa) * (maa[c] (+ LoRA_c, v6)).
    // v5 files store mix coefficients mu; the loader converts them to maa = 1 - mu.
    const float* maa_x = nullptr;             ///< v6 only
    std::array<const float*, 5> maa{};        ///< w (v6 only), k, v, r, g
    kernels::weight_view maa_w1;              ///< v6: [5*D_MIX x C]
    std::array<kernels::weight_view, 5> maa_w2{}; ///< v6: per mix [C x D_MIX]
    const float* decay = nullptr;             ///< v6, v7: raw w0; v5: the multiplier exp(-exp(w0))
    kernels::weight_view decay_w1, decay_w2;  ///< v6, v7: [D_DECAY x C], [C x D_DECAY]
    // v7 only
    std::array<const float*, 6> lerp7{};      ///< r, w, k, v, a, g: x_c = xa + (prev - xa) * lerp7[c]
    const float *iclr0 = nullptr, *vres0 = nullptr; ///< a0, v0 (v0: layers after 0)
    kernels::weight_view iclr_w1, iclr_w2;    ///< [D_A x C], [C x D_A]
    kernels::weight_view vres_w1, vres_w2;    ///< [D_V x C], [C x D_V] (layers after 0)
    kernels::weight_view gate_w1, gate_w2;    ///< [D_G x C], [C x D_G]
    const float *k_k = nullptr, *k_a = nullptr, *r_k = nullptr; ///< [C] each (r_k: H x N)
    const float* u = nullptr;                 ///< bonus (time_first / time_faaaa), H*N (v5, v6)
    kernels::weight_view wr, wk, wv, wg, wo;  ///< [C x C] (no wg in v7)
    const float *lnx_w = nullptr, *lnx_b = nullptr;
    // channel mix
    const float *ffn_maa_k = nullptr, *ffn_maa_r = nullptr;
    kernels::weight_view ffn_k, ffn_v, ffn_r; ///< [F x C], [C x F], [C x C] (no ffn_r / ffn_maa_r in v7)
};

} // namespace archetype
