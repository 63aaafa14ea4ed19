#pragma once
// Shared composition checks for model templates (Decoder, Encoder, Rwkv*):
// every argument is a policy, and no axis is given twice. Each rule is one
// static_assert with a sentence that says what to change.
#include <string>
#include <type_traits>

#include "archetype/core/describe.hpp"
#include "archetype/core/policy.hpp"

namespace archetype::detail {

template <class... Ps>
struct check_composition {
    static_assert((Policy<Ps> && ...),
                  "archetype: every model argument must be a policy (MHA, GQA, MQA, RoPE, SlidingWindow, "
                  "RollingCache, SwiGLU, RMSNorm, ...): remove the argument that is not one");
    static_assert(count_on_axis<axis::heads, Ps...> <= 1,
                  "archetype: two attention-heads policies given (MHA/GQA/MQA): keep one");
    static_assert(count_on_axis<axis::position, Ps...> <= 1,
                  "archetype: two position policies given (RoPE/ALiBi/Sinusoidal/LearnedPositions/"
                  "RelativeBias/NoPE): keep one");
    static_assert(count_on_axis<axis::mask, Ps...> <= 1,
                  "archetype: two mask policies given (Causal/Bidirectional/SlidingWindow/"
                  "SymmetricWindow/Interleave): keep one, or combine per layer with Interleave<N, Local, Global>");
    static_assert(count_on_axis<axis::cache, Ps...> <= 1,
                  "archetype: two cache policies given (NoCache/FullCache/RollingCache/SinkCache): keep one");
    static_assert(count_on_axis<axis::mixer, Ps...> <= 1, "archetype: two mixer policies given: keep one");
    static_assert(count_on_axis<axis::ffn, Ps...> <= 1,
                  "archetype: two feed-forward policies given (SwiGLU/GeGLU/GeluMLP/MoE): keep one");
    static_assert(count_on_axis<axis::norm, Ps...> <= 1,
                  "archetype: two norm policies given (RMSNorm/LayerNorm): keep one");
    static_assert(count_on_axis<axis::pooling, Ps...> <= 1, "archetype: two pooling policies given: keep one");
    static_assert(count_on_axis<axis::embd_norm, Ps...> <= 1,
                  "archetype: two embedding-normalisation policies given: keep one");
    static_assert(count_on_axis<axis::storage, Ps...> <= 1, "archetype: two weight-storage policies given: keep one");
    static_assert(count_on_axis<axis::embedding, Ps...> <= 1,
                  "archetype: two embedding policies given (PlainEmbedding/ScaledEmbedding): keep one");
    static_assert(count_on_axis<axis::block, Ps...> <= 1,
                  "archetype: two block shapes given (SequentialBlock/ParallelResidual/ParallelResidualTwoNorms): keep one");
    static_assert(count_on_axis<axis::logits, Ps...> <= 1,
                  "archetype: two logits policies given (PlainLogits/LogitMultiplier/LogitDivisor/LogitSoftCap): keep one");
    static_assert(count_on_axis<axis::attn_scale, Ps...> <= 1,
                  "archetype: two attention-scale rules given (InvSqrtHeadDim/AttentionScaleKey/QueryPreAttnScale): keep one");
    static_assert(count_on_axis<axis::score_cap, Ps...> <= 1,
                  "archetype: two attention-score caps given (NoScoreCap/AttentionSoftCap): keep one");
    static constexpr bool ok = true;
};

/// "name:      value\n" with aligned columns, for describe().
inline std::string describe_line(std::string_view key, const std::string& value) {
    std::string s = "  ";
    s += key;
    s += ':';
    s.append(key.size() < 10 ? 10 - key.size() : 1, ' ');
    return s + value + "\n";
}

} // namespace archetype::detail
