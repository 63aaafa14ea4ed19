#pragma once
// Mask / window axis: which keys a query may attend to, by position.
// `visible(p_query, p_key, window)` is the whole rule; attention code and the
// `archetype mask` printout both call it. How a decoder mask meets a file — its
// window and which layers it windows, checked against the file's keys — is its
// mask_impl<M>::layers hook, at the end of this header.
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "archetype/core/dims.hpp"
#include "archetype/core/error.hpp"
#include "archetype/core/policy.hpp"
#include "archetype/policies/impl.hpp"

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

/// Where the global layer sits in each group of an Interleave pattern.
enum class interleave_order {
    local_first,  ///< the N-1 windowed layers, then the global one (Gemma: il % N < N - 1 windowed)
    global_first, ///< the global layer, then N-1 windowed ones (ModernBERT: il % N != 0 windowed)
};

/// Per-layer pattern: in every group of N layers, N-1 use `Local` (a window) and
/// one uses `Global`; by default the global one is last (llama.cpp's swa pattern
/// rule: layer il is local iff il % N < N - 1), with interleave_order::global_first
/// it is first (llama.cpp's dense_first: local iff il % N != 0).
/// Gemma 3: Interleave<6, SlidingWindow<512>, Causal>;
/// ModernBERT: Interleave<3, SymmetricWindow<128>, Bidirectional, interleave_order::global_first>.
template <dim_t N, class Local, class Global = Causal, interleave_order Order = interleave_order::local_first>
struct Interleave {
    using axis = archetype::axis::mask;
    static constexpr std::string_view name = "Interleave";
    static constexpr bool causal = Local::causal;
    static constexpr bool windowed = true;
    static constexpr dim_t window = Local::window;
    static constexpr dim_t period = N;
    static constexpr interleave_order order = Order;
    using local = Local;
    using global = Global;
    static_assert(N >= 1, "archetype: Interleave<N, Local, Global> needs N >= 1");
    static_assert(std::is_same_v<axis_of_t<Local>, archetype::axis::mask> &&
                      std::is_same_v<axis_of_t<Global>, archetype::axis::mask>,
                  "archetype: Interleave<N, Local, Global> takes two mask policies");
    static_assert(Local::causal == Global::causal,
                  "archetype: Interleave mixes a causal and a bidirectional mask: use two of one kind");
    static constexpr bool is_local(std::size_t layer) noexcept {
        return Order == interleave_order::global_first ? layer % N != 0 : layer % N < N - 1;
    }
    static std::string describe() {
        return "Interleave<" + (N == dynamic ? std::string("dynamic") : std::to_string(N)) + ", " + Local::describe() +
               ", " + Global::describe() + (Order == interleave_order::global_first ? ", global first>" : ">");
    }
};

/// Which layers of a decoder are windowed, and the window (0 = none): what a mask
/// policy makes of a file (mask_impl<M>::layers). The cache policy sizes each layer's
/// cells from it (runtime/cache/), the position policy may rotate windowed layers
/// with their own base.
struct layer_windows {
    std::size_t window = 0;
    std::vector<bool> windowed; // per layer
};

namespace detail {
/// The window a SlidingWindow<W> gets from W (compiled) or the file's
/// {arch}.attention.sliding_window; `Keys` is io/arch/llama.hpp's llama_hparams.
template <class Keys>
std::size_t mask_window(dim_t compiled, const Keys& h, const std::string& what) {
    const std::size_t file_w = h.n_swa;
    if (compiled != dynamic) {
        if (file_w != 0 && file_w != compiled)
            throw shape_error(what + " but the file has " + h.arch + ".attention.sliding_window = " + std::to_string(file_w));
        return compiled;
    }
    if (file_w == 0)
        throw shape_error(what + " takes the window from the file, but the file has no " + h.arch +
                          ".attention.sliding_window");
    return file_w;
}
} // namespace detail

// Hook of a decoder mask: `template <class Keys> static layer_windows layers(const Keys& h)`,
// h being the file's architecture keys (n_layer, n_swa, swa_layers, swa_pattern_in_file, arch);
// it throws shape_error naming the key when the file contradicts the policy.

/// Causal: no layer is windowed, and a file that windows a layer is refused
/// (running it unwindowed would be silently wrong).
template <>
struct mask_impl<Causal> {
    template <class Keys>
    static layer_windows layers(const Keys& h) {
        if (h.n_swa != 0)
            for (std::size_t il = 0; il < h.n_layer; ++il)
                if (h.swa_layers[il])
                    throw shape_error(Causal::describe() + " but the file has " + h.arch + ".attention.sliding_window = " +
                                      std::to_string(h.n_swa) + " on layer " + std::to_string(il));
        return {0, std::vector<bool>(h.n_layer, false)};
    }
};

/// Bidirectional (encoders): as Causal, a file that windows a layer is refused.
template <>
struct mask_impl<Bidirectional> {
    template <class Keys>
    static layer_windows layers(const Keys& h) {
        if (h.n_swa != 0)
            for (std::size_t il = 0; il < h.n_layer; ++il)
                if (h.swa_layers[il])
                    throw shape_error(Bidirectional::describe() + " but the file has " + h.arch +
                                      ".attention.sliding_window = " + std::to_string(h.n_swa) + " on layer " +
                                      std::to_string(il) + " (compose SymmetricWindow<> or Interleave<...>)");
        return {0, std::vector<bool>(h.n_layer, false)};
    }
};

namespace detail {
/// Every layer windowed by a window policy M (SlidingWindow, SymmetricWindow).
template <class M, class Keys>
layer_windows every_layer_windowed(const Keys& h) {
    layer_windows r{mask_window(M::window, h, M::describe()), std::vector<bool>(h.n_layer, true)};
    for (std::size_t il = 0; il < h.n_layer; ++il)
        if (h.swa_pattern_in_file && !h.swa_layers[il])
            throw shape_error(M::describe() + " windows every layer but the file's " + h.arch +
                              ".attention.sliding_window_pattern makes layer " + std::to_string(il) + " global");
    return r;
}
} // namespace detail

/// SymmetricWindow<W> (encoders): every layer windowed.
template <dim_t W>
struct mask_impl<SymmetricWindow<W>> {
    template <class Keys>
    static layer_windows layers(const Keys& h) {
        return detail::every_layer_windowed<SymmetricWindow<W>>(h);
    }
};

/// SlidingWindow<W>: every layer windowed.
template <dim_t W>
struct mask_impl<SlidingWindow<W>> {
    template <class Keys>
    static layer_windows layers(const Keys& h) {
        return detail::every_layer_windowed<SlidingWindow<W>>(h);
    }
};

/// Interleave<N, Local, Global>: N-1 layers of each group windowed, the global one
/// first or last as the order says (N dynamic: the file's pattern decides).
template <dim_t N, class Local, class Global, interleave_order Order>
struct mask_impl<Interleave<N, Local, Global, Order>> {
    static_assert(!Global::windowed,
                  "archetype: Interleave<N, Local, Global>: the global layers must be unwindowed "
                  "(Causal in a decoder, Bidirectional in an encoder)");
    template <class Keys>
    static layer_windows layers(const Keys& h) {
        using M = Interleave<N, Local, Global, Order>;
        layer_windows r{detail::mask_window(Local::window, h, M::describe()), std::vector<bool>(h.n_layer, false)};
        for (std::size_t il = 0; il < h.n_layer; ++il) {
            if constexpr (N == dynamic) {
                if (!h.swa_pattern_in_file)
                    throw shape_error(M::describe() + " takes the layer pattern from the file, but the file has no " +
                                      h.arch + ".attention.sliding_window_pattern");
                r.windowed[il] = h.swa_layers[il];
            } else {
                r.windowed[il] = M::is_local(il);
                if (h.swa_pattern_in_file && h.swa_layers[il] != r.windowed[il])
                    throw shape_error(M::describe() + " makes layer " + std::to_string(il) +
                                      (r.windowed[il] ? " windowed" : " global") + " but the file's " + h.arch +
                                      ".attention.sliding_window_pattern says " + (h.swa_layers[il] ? "windowed" : "global"));
            }
        }
        return r;
    }
};

} // namespace archetype
