#pragma once
// Cache axis: where keys/values (or recurrent state) of past tokens live.
#include <string>

#include "archetype/core/dims.hpp"
#include "archetype/core/policy.hpp"

namespace archetype {

/// No cache: every forward pass sees only its own tokens (encoders).
struct NoCache {
    using axis = archetype::axis::cache;
    static constexpr std::string_view name = "NoCache";
    static constexpr bool rolling = false;
    static constexpr dim_t sink = 0;
    static std::string describe() { return "NoCache"; }
};
/// One cell per position up to the context length; exceeding it is a capacity_error.
struct FullCache {
    using axis = archetype::axis::cache;
    static constexpr std::string_view name = "FullCache";
    static constexpr bool rolling = false;
    static constexpr dim_t sink = 0;
    static std::string describe() { return "FullCache"; }
};
/// A ring of exactly W cells per sequence per windowed layer, W being the
/// SlidingWindow's window: constant memory in the sequence length. Cells keep
/// their positions so RoPE and the mask stay right. Global layers of an
/// Interleave pattern keep a full cache.
struct RollingCache {
    using axis = archetype::axis::cache;
    static constexpr std::string_view name = "RollingCache";
    static constexpr bool rolling = true;
    static constexpr dim_t sink = 0;
    static std::string describe() { return "RollingCache"; }
};
/// StreamingLLM: keep the first S positions plus a rolling window.
template <dim_t S>
struct SinkCache {
    using axis = archetype::axis::cache;
    static constexpr std::string_view name = "SinkCache";
    static constexpr bool rolling = true;
    static constexpr dim_t sink = S;
    static std::string describe() { return "SinkCache<" + std::to_string(S) + ">"; }
};

} // namespace archetype
