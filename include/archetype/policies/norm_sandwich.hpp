#pragma once
// Where a decoder block's norms sit, besides the default x + f(norm(x)):
//   PrePostNorm<Norm>: both the input and the output of each sublayer,
//     x + norm_post(f(norm_pre(x))) (Gemma 2/3, the "sandwich"): the sublayer's output
//     is normalised again before the residual add, which keeps the residual stream's
//     scale in check. GGUF tensors blk.N.post_attention_norm.weight and blk.N.post_ffw_norm.weight.
//   NormAfterSublayer<Norm>: only the output, x + norm(f(x)) (OLMo 2's reordered norm:
//     the sublayers read the residual stream itself). The same post_* tensors and no
//     attn_norm / ffn_norm.
// Like the Encoder's PreNorm<Norm> / PostNorm<Norm> (models/encoder.hpp), they wrap the
// norm that does the arithmetic; the final output_norm is the plain Norm in every case.
#include <string>
#include <type_traits>

#include "archetype/core/policy.hpp"

namespace archetype {

template <class Norm>
struct PrePostNorm : Norm {
    static_assert(std::is_same_v<axis_of_t<Norm>, archetype::axis::norm>,
                  "archetype: PrePostNorm<Norm> takes a norm policy such as RMSNorm or LayerNorm");
    using base_norm = Norm;
    static constexpr bool sandwich = true;
    static constexpr bool pre = true;
    static std::string describe() { return Norm::describe() + ", before and after each sublayer"; }
};

template <class Norm>
struct NormAfterSublayer : Norm {
    static_assert(std::is_same_v<axis_of_t<Norm>, archetype::axis::norm>,
                  "archetype: NormAfterSublayer<Norm> takes a norm policy such as RMSNorm or LayerNorm");
    using base_norm = Norm;
    static constexpr bool sandwich = true;
    static constexpr bool pre = false;
    static std::string describe() { return Norm::describe() + ", after each sublayer only"; }
};

} // namespace archetype
