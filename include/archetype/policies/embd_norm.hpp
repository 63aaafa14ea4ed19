#pragma once
// Embedding-normalisation axis: what is done to each output vector (pooled, or
// per token without pooling). The formulas are llama.cpp's common_embd_normalize;
// `mode` is its `--embd-normalize` value, which the run-time path takes as is.
#include <string>

#include "archetype/core/policy.hpp"

namespace archetype {

/// Vectors as computed.
struct NoNormalize {
    using axis = archetype::axis::embd_norm;
    static constexpr int mode = -1;
    static std::string describe() { return "NoNormalize"; }
};
/// x * 32760 / max|x|: fits the int16 range (llama.cpp mode 0).
struct MaxAbsInt16 {
    using axis = archetype::axis::embd_norm;
    static constexpr int mode = 0;
    static std::string describe() { return "MaxAbsInt16 (x * 32760 / max|x|)"; }
};
/// x / sum|x| (taxicab; llama.cpp reaches it only as the p-norm with p = 1).
struct L1Normalize {
    using axis = archetype::axis::embd_norm;
    static constexpr int mode = 1;
    static std::string describe() { return "L1Normalize"; }
};
/// x / sqrt(sum x^2), the sum in double (llama.cpp mode 2, its default).
struct L2Normalize {
    using axis = archetype::axis::embd_norm;
    static constexpr int mode = 2;
    static std::string describe() { return "L2Normalize"; }
};
/// x / (sum |x|^P)^(1/P).
template <int P>
struct PNormalize {
    using axis = archetype::axis::embd_norm;
    static_assert(P >= 1, "archetype: PNormalize<P> needs P >= 1 (P = 1 is L1, 2 is L2)");
    static constexpr int mode = P;
    static std::string describe() { return "PNormalize<" + std::to_string(P) + ">"; }
};

} // namespace archetype
