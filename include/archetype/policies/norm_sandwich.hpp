#pragma once
// PrePostNorm<Norm>: a norm policy (norm axis) whose blocks normalise both the
// input and the output of each sublayer, x + norm_post(f(norm_pre(x))) (Gemma
// 2/3, the "sandwich"): the sublayer's output is normalised again before the
// residual add, which keeps the residual stream's scale in check. GGUF tensors
// blk.N.post_attention_norm.weight and blk.N.post_ffw_norm.weight. Like the
// Encoder's PreNorm<Norm> / PostNorm<Norm> (models/encoder.hpp), it wraps the
// norm that does the arithmetic.
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
    static std::string describe() { return Norm::describe() + ", before and after each sublayer"; }
};

} // namespace archetype
