#pragma once
// RoPE: rotary position embedding (Su et al.). `RoPE` takes its base, pairing and
// scaling from the model file; `RoPE::with<...>` fixes them at compile time
// (integer base, scaling as a ratio: clang-14 rejects float template arguments).
//
// Read from the file ({arch} = general.architecture): {arch}.rope.dimension_count,
// rope.freq_base, rope.scaling.{type,factor,original_context_length,yarn_*},
// rope.freq_base_swa (the windowed layers' base when the file gives one; an architecture
// whose windowed layers have a base of their own without the key says it in its preset:
// WindowedRoPEBase<Base, RoPE>, policies/position/windowed_rope_base.hpp), and the optional tensor
// rope_freqs.weight (per-pair frequency divisors: Llama-3 scaling, as ggml applies them)
// and rope_factors_{short,long}.weight (LongRoPE: the session's context picks the set). The pairing of a
// `from_file` RoPE is the architecture's (gguf_conventions::rope_neox): GGUF
// has no key for it, llama.cpp decides by architecture too.
#include <cmath>
#include <string>

#include "archetype/core/error.hpp"
#include "archetype/layers/rope.hpp"
#include "archetype/core/policy.hpp"
#include "archetype/policies/impl.hpp"
#include "archetype/policies/position/pairing.hpp"

namespace archetype {

namespace detail {
inline constexpr long long rope_base_from_file = 0;
}

/// YaRN's correction range [low, high] of rotated pairs: rounded outward to whole pairs
/// (floor / ceil, ggml's and transformers' default), or kept as computed (transformers'
/// `truncate: false`, which gpt-oss's configs set; the GGUF has no key for it, so the
/// family's preset says it).
enum class yarn_range { rounded, unrounded };

template <long long Base = detail::rope_base_from_file,
          rope_pairing_policy Pairing = rope_pairing_policy::from_file, long long ScaleNum = 1,
          long long ScaleDen = 1, yarn_range Yarn = yarn_range::rounded>
struct RoPEWith {
    using axis = archetype::axis::position;
    static constexpr std::string_view name = "RoPE";
    static constexpr bool rotary = true;
    static constexpr long long base = Base; // 0: from the file
    static constexpr rope_pairing_policy pairing = Pairing;
    /// linear position scaling factor (positions are multiplied by ScaleDen/ScaleNum)
    static constexpr long long scale_num = ScaleNum, scale_den = ScaleDen;
    static_assert(Base >= 0, "archetype: RoPE::with<Base>: the base must be positive (0 = from the file)");
    static_assert(ScaleNum > 0 && ScaleDen > 0, "archetype: RoPE::with scaling ratio must be positive");
    static constexpr yarn_range yarn = Yarn;
    template <long long B, rope_pairing_policy P = Pairing, long long N = 1, long long D = 1, yarn_range Y = Yarn>
    using with = RoPEWith<B, P, N, D, Y>;
    static std::string describe() {
        if (Base == 0 && Pairing == rope_pairing_policy::from_file && ScaleNum == ScaleDen && Yarn == yarn_range::rounded)
            return "RoPE";
        std::string s = "RoPE(base " + (Base == 0 ? std::string("from file") : std::to_string(Base));
        s += Pairing == rope_pairing_policy::adjacent ? ", adjacent pairs"
             : Pairing == rope_pairing_policy::neox  ? ", neox pairs"
                                                     : ", pairing from file";
        if (ScaleNum != ScaleDen) s += ", scale " + std::to_string(ScaleNum) + "/" + std::to_string(ScaleDen);
        if (Yarn == yarn_range::unrounded) s += ", YaRN range not rounded";
        return s + ")";
    }
};
/// Rotary position embedding, parameters from the model file.
using RoPE = RoPEWith<>;
/// RoPE rotating halves (x[i], x[i + n/2]): Hugging Face's layout (Qwen, Gemma, Mellum).
using RoPENeox = RoPEWith<detail::rope_base_from_file, rope_pairing_policy::neox>;
/// NeoX RoPE whose YaRN correction range is not rounded (gpt-oss, transformers' truncate: false).
using RoPENeoxYarnUnrounded = RoPEWith<detail::rope_base_from_file, rope_pairing_policy::neox, 1, 1, yarn_range::unrounded>;

template <long long Base, rope_pairing_policy Pairing, long long ScaleNum, long long ScaleDen, yarn_range Yarn>
struct position_impl<RoPEWith<Base, Pairing, ScaleNum, ScaleDen, Yarn>> {
    using policy = RoPEWith<Base, Pairing, ScaleNum, ScaleDen, Yarn>;
    struct weights {};
    struct state {};

    /// Fills hparams().rope (and rope_swa, the windowed layers') from the file's keys.
    template <class Binder>
    static void bind(Binder& b, weights&) {
        const auto& h = b.keys();
        auto& hp = b.hparams();
        auto& r = hp.rope;
        r.n_rot = h.n_rot;
        r.freq_base = h.rope_freq_base;
        if constexpr (Base != 0) {
            if (b.file().has(b.prefix() + "rope.freq_base") && h.rope_freq_base != float(Base))
                throw shape_error(policy::describe() + " but the file has " + b.prefix() +
                                  "rope.freq_base = " + std::to_string(h.rope_freq_base));
            r.freq_base = float(Base);
        }
        if (b.options().rope_freq_base > 0.f) r.freq_base = b.options().rope_freq_base;
        constexpr rope_pairing_policy P = Pairing;
        const rope_pairing_policy p = P != rope_pairing_policy::from_file ? P
                                      : b.conventions().rope_neox ? rope_pairing_policy::neox
                                                                  : rope_pairing_policy::adjacent;
        r.pairing = p == rope_pairing_policy::neox ? kernels::rope_pairing::neox : kernels::rope_pairing::adjacent;
        r.freq_scale = h.rope_freq_scale;
        if constexpr (ScaleNum != ScaleDen) r.freq_scale = float(ScaleDen) / float(ScaleNum);
        r.ext_factor = h.yarn_ext_factor;
        r.attn_factor = h.yarn_attn_factor;
        r.beta_fast = h.yarn_beta_fast;
        r.beta_slow = h.yarn_beta_slow;
        r.n_ctx_orig = h.rope_n_ctx_orig;
        r.yarn_round = Yarn == yarn_range::rounded;
        // YaRN's magnitude: ggml multiplies cos/sin by attn_factor (1 + 0.1 ln f); with
        // rope.scaling.yarn_log_multiplier = k (transformers' mscale_all_dim, mscale 1) the
        // product must be m(f, 1) / m(f, k), m(f, k) = 1 + 0.1 k ln f, as llama.cpp's
        // llama_context makes it (its DeepSeek-2 special case, mscale = k, is that family's)
        if (const std::string k = b.prefix() + "rope.scaling.yarn_log_multiplier"; r.ext_factor != 0.f && b.file().has(k)) {
            const float mul = b.file().template get<float>(k), f = 1.f / r.freq_scale;
            if (!std::isfinite(mul)) throw format_error("metadata key '" + k + "' is not finite");
            if (f > 1.f) r.attn_factor /= 1.f + 0.1f * mul * std::log(f);
        }
        // per-pair frequency divisors [n_rot / 2]: Llama-3 scaling (rope_freqs.weight), or
        // LongRoPE's short and long sets (Phi-3; the session picks by its context); as
        // llama.cpp, rope_freqs wins when a file has both kinds
        auto factors = [&](const char* name) {
            const float* f = b.optional_vector_f32(name, h.n_rot / 2);
            for (std::size_t i = 0; f && i < h.n_rot / 2; ++i)
                if (!(f[i] > 0.f) || !std::isfinite(f[i]))
                    throw format_error(std::string(name) + "[" + std::to_string(i) + "] = " + std::to_string(f[i]) +
                                       " must be a positive finite divisor");
            return f;
        };
        const float* freqs = factors("rope_freqs.weight");
        const float* shorts = factors("rope_factors_short.weight");
        const float* longs = factors("rope_factors_long.weight");
        r.freq_factors = freqs ? freqs : shorts;
        r.freq_factors_long = freqs ? nullptr : longs;
        hp.rope_swa = r;
        // the windowed layers' own base, when the file gives one (olmo2, modern-bert; gemma3's
        // default is its preset's, WindowedRoPEBase); llama.cpp's override
        // (cparams.rope_freq_base) leaves it alone
        if (b.file().has(b.prefix() + "rope.freq_base_swa")) {
            hp.rope_swa.freq_base = b.file().template get<float>(b.prefix() + "rope.freq_base_swa");
            if (!(hp.rope_swa.freq_base > 0.f) || !std::isfinite(hp.rope_swa.freq_base))
                throw format_error(b.prefix() + "rope.freq_base_swa = " + std::to_string(hp.rope_swa.freq_base) +
                                   " must be positive");
            hp.rope_swa.freq_scale = 1.f;
        }
    }
    static void init(const weights&, const position_context&, state&) {}
};

} // namespace archetype
