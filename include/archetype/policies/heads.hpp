#pragma once
// Attention-heads axis: how many query heads, how many key/value heads, and
// (optionally) the head dimension. Any of them may be `dynamic` (read from the
// model file). Query head h reads key/value head h / (n_head / n_head_kv).
#include <string>

#include "archetype/core/dims.hpp"
#include "archetype/core/policy.hpp"

namespace archetype {

namespace detail {
inline std::string dim_str(dim_t d) { return d == dynamic ? std::string("dynamic") : std::to_string(d); }
} // namespace detail

/// Grouped-query attention: Hq query heads share Hkv key/value heads.
template <dim_t Hq, dim_t Hkv, dim_t HeadDim = dynamic>
struct GQA {
    using axis = archetype::axis::heads;
    static constexpr std::string_view name = "GQA";
    static constexpr dim_t n_head = Hq;
    static constexpr dim_t n_head_kv = Hkv;
    static constexpr dim_t head_dim = HeadDim;
    static_assert(Hq != 0 && Hkv != 0 && HeadDim != 0,
                  "archetype: GQA<Hq, Hkv>: head counts and the head dimension must be positive");
    static_assert(Hq == dynamic || Hkv == dynamic || Hq % Hkv == 0,
                  "archetype: GQA<Hq, Hkv> needs Hq to be a multiple of Hkv (each key/value head "
                  "serves Hq/Hkv query heads): change Hkv to a divisor of Hq");
    static std::string describe() {
        return "GQA<" + detail::dim_str(Hq) + ", " + detail::dim_str(Hkv) +
               (HeadDim == dynamic ? "" : ", " + detail::dim_str(HeadDim)) + ">";
    }
};

/// Multi-head attention: every query head has its own key/value head.
template <dim_t H, dim_t HeadDim = dynamic>
struct MHA : GQA<H, H, HeadDim> {
    static constexpr std::string_view name = "MHA";
    static std::string describe() {
        return "MHA<" + detail::dim_str(H) + (HeadDim == dynamic ? "" : ", " + detail::dim_str(HeadDim)) + ">";
    }
};

/// Multi-query attention: all query heads share one key/value head.
template <dim_t H, dim_t HeadDim = dynamic>
struct MQA : GQA<H, 1, HeadDim> {
    static constexpr std::string_view name = "MQA";
    static std::string describe() {
        return "MQA<" + detail::dim_str(H) + (HeadDim == dynamic ? "" : ", " + detail::dim_str(HeadDim)) + ">";
    }
};

} // namespace archetype
