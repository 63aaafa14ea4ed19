#pragma once
// Position axis. `RoPE` is a plain type whose base, pairing and scaling come
// from the model file; `RoPE::with<...>` fixes them at compile time (integer
// base, scaling as a ratio: clang-14 rejects float template arguments).
#include <string>

#include "archetype/core/dims.hpp"
#include "archetype/core/policy.hpp"

namespace archetype {

/// How rotary dimensions are paired: adjacent (x[2i], x[2i+1]) as ggml's normal
/// mode and GGUF `llama`; neox (x[i], x[i + n/2]) as `mellum` and HF layouts;
/// from_file: decided by the file's architecture.
enum class rope_pairing_policy { from_file, adjacent, neox };

namespace detail {
inline constexpr long long rope_base_from_file = 0;
}

template <long long Base = detail::rope_base_from_file,
          rope_pairing_policy Pairing = rope_pairing_policy::from_file, long long ScaleNum = 1,
          long long ScaleDen = 1>
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
    template <long long B, rope_pairing_policy P = Pairing, long long N = 1, long long D = 1>
    using with = RoPEWith<B, P, N, D>;
    static std::string describe() {
        if (Base == 0 && Pairing == rope_pairing_policy::from_file && ScaleNum == ScaleDen) return "RoPE";
        std::string s = "RoPE(base " + (Base == 0 ? std::string("from file") : std::to_string(Base));
        s += Pairing == rope_pairing_policy::adjacent ? ", adjacent pairs"
             : Pairing == rope_pairing_policy::neox  ? ", neox pairs"
                                                     : ", pairing from file";
        if (ScaleNum != ScaleDen) s += ", scale " + std::to_string(ScaleNum) + "/" + std::to_string(ScaleDen);
        return s + ")";
    }
};
/// Rotary position embedding, parameters from the model file.
using RoPE = RoPEWith<>;

/// Attention with linear biases (Press et al.): no rotation, a per-head slope times distance.
struct ALiBi {
    using axis = archetype::axis::position;
    static constexpr std::string_view name = "ALiBi";
    static constexpr bool rotary = false;
    static std::string describe() { return "ALiBi"; }
};
/// Fixed sinusoidal absolute positions added to the embeddings (Vaswani et al.).
struct Sinusoidal {
    using axis = archetype::axis::position;
    static constexpr std::string_view name = "Sinusoidal";
    static constexpr bool rotary = false;
    static std::string describe() { return "Sinusoidal"; }
};
/// Learned absolute position embeddings for at most N positions (BERT); N may be dynamic.
template <dim_t N = dynamic>
struct LearnedPositions {
    using axis = archetype::axis::position;
    static constexpr std::string_view name = "LearnedPositions";
    static constexpr bool rotary = false;
    static constexpr dim_t max_positions = N;
    static std::string describe() { return "LearnedPositions<" + detail_dim(N) + ">"; }
private:
    static std::string detail_dim(dim_t d) { return d == dynamic ? "dynamic" : std::to_string(d); }
};
/// T5 relative position bias with `Buckets` buckets.
template <dim_t Buckets = 32>
struct RelativeBias {
    using axis = archetype::axis::position;
    static constexpr std::string_view name = "RelativeBias";
    static constexpr bool rotary = false;
    static constexpr dim_t buckets = Buckets;
    static std::string describe() { return "RelativeBias<" + std::to_string(Buckets) + ">"; }
};
/// No position information at all.
struct NoPE {
    using axis = archetype::axis::position;
    static constexpr std::string_view name = "NoPE";
    static constexpr bool rotary = false;
    static std::string describe() { return "NoPE"; }
};

} // namespace archetype
