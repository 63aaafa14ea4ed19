#pragma once
// Mask / window axis: which keys a query may attend to, by position.
// `visible(p_query, p_key, window)` is the whole rule; attention code and the
// `archetype mask` printout both call it.
#include <cstdint>
#include <string>

#include "archetype/core/dims.hpp"
#include "archetype/core/policy.hpp"

namespace archetype {

using pos_t = std::int64_t;

/// A query sees itself and every earlier key (decoders).
struct Causal {
    using axis = archetype::axis::mask;
    static constexpr std::string_view name = "Causal";
    static constexpr bool causal = true;
    static constexpr bool windowed = false;
    static constexpr dim_t window = 0;
    static constexpr bool visible(pos_t q, pos_t k, std::int64_t = 0) noexcept { return k <= q; }
    static std::string describe() { return "Causal"; }
};

/// Every query sees every key of its sequence (encoders).
struct Bidirectional {
    using axis = archetype::axis::mask;
    static constexpr std::string_view name = "Bidirectional";
    static constexpr bool causal = false;
    static constexpr bool windowed = false;
    static constexpr dim_t window = 0;
    static constexpr bool visible(pos_t, pos_t, std::int64_t = 0) noexcept { return true; }
    static std::string describe() { return "Bidirectional"; }
};

/// Causal sliding window of W: a query sees itself and the W-1 keys before it
/// (llama.cpp: masked iff p_query - p_key >= W). W may be `dynamic` (from the file).
template <dim_t W = dynamic>
struct SlidingWindow {
    using axis = archetype::axis::mask;
    static constexpr std::string_view name = "SlidingWindow";
    static constexpr bool causal = true;
    static constexpr bool windowed = true;
    static constexpr dim_t window = W;
    static_assert(W != 0, "archetype: SlidingWindow<W> needs W >= 1 (a token always sees itself)");
    /// `w` is the run-time window (equal to W when W is static).
    static constexpr bool visible(pos_t q, pos_t k, std::int64_t w) noexcept {
        return k <= q && q - k < w;
    }
    static std::string describe() {
        return "SlidingWindow<" + (W == dynamic ? std::string("dynamic") : std::to_string(W)) + ">";
    }
};

/// Bidirectional band: token i sees j iff |i - j| <= W/2 (integer division), as
/// llama.cpp's symmetric SWA. W may be `dynamic`.
template <dim_t W = dynamic>
struct SymmetricWindow {
    using axis = archetype::axis::mask;
    static constexpr std::string_view name = "SymmetricWindow";
    static constexpr bool causal = false;
    static constexpr bool windowed = true;
    static constexpr dim_t window = W;
    static_assert(W != 0, "archetype: SymmetricWindow<W> needs W >= 1");
    static constexpr bool visible(pos_t q, pos_t k, std::int64_t w) noexcept {
        const pos_t d = q > k ? q - k : k - q;
        return d <= w / 2;
    }
    static std::string describe() {
        return "SymmetricWindow<" + (W == dynamic ? std::string("dynamic") : std::to_string(W)) + ">";
    }
};

/// Per-layer pattern: in every group of N layers the first N-1 use `Local`
/// (a window) and the last uses `Global` (llama.cpp's swa pattern rule:
/// layer il is local iff il % N < N - 1). Gemma 3: Interleave<6, SlidingWindow<512>, Causal>.
template <dim_t N, class Local, class Global = Causal>
struct Interleave {
    using axis = archetype::axis::mask;
    static constexpr std::string_view name = "Interleave";
    static constexpr bool causal = Local::causal;
    static constexpr bool windowed = true;
    static constexpr dim_t window = Local::window;
    static constexpr dim_t period = N;
    using local = Local;
    using global = Global;
    static_assert(N >= 1, "archetype: Interleave<N, Local, Global> needs N >= 1");
    static_assert(std::is_same_v<axis_of_t<Local>, archetype::axis::mask> &&
                      std::is_same_v<axis_of_t<Global>, archetype::axis::mask>,
                  "archetype: Interleave<N, Local, Global> takes two mask policies");
    static_assert(Local::causal == Global::causal,
                  "archetype: Interleave mixes a causal and a bidirectional mask: use two of one kind");
    static constexpr bool is_local(std::size_t layer) noexcept { return layer % N < N - 1; }
    static std::string describe() {
        return "Interleave<" + (N == dynamic ? std::string("dynamic") : std::to_string(N)) + ", " + Local::describe() +
               ", " + Global::describe() + ">";
    }
};

} // namespace archetype
