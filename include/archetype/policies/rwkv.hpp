#pragma once
// RWKV policies: the time mixes of v5.2, v6 and v7 (mixer axis), the channel mixes
// (feed-forward axis) and the recurrent state (cache axis). They are tags with the facts the
// layers branch on at compile time; the math lives in layers/rwkv_*.hpp.
#include <concepts>
#include <string>

#include "archetype/core/dims.hpp"
#include "archetype/core/policy.hpp"

namespace archetype {

/// RWKV-5.2 "Eagle" time mix: static lerp token shift, static per-channel decay,
/// WKV with bonus u, GroupNorm ln_x per head, SiLU gate.
struct Rwkv5TimeMix {
    using axis = archetype::axis::mixer;
    static constexpr std::string_view name = "Rwkv5TimeMix";
    static constexpr bool attention = false;
    static constexpr int rwkv_version = 5;
    /// token shift depends on the input (LoRA "ddlerp")
    static constexpr bool ddlerp = false;
    /// decay depends on the input (LoRA on w)
    static constexpr bool dynamic_decay = false;
    static std::string describe() { return "Rwkv5TimeMix(lerp shift, static decay, WKV + GroupNorm + SiLU gate)"; }
};

/// RWKV-6 "Finch" time mix: data-dependent token shift tanh(x A) B, data-dependent
/// decay w = exp(-exp(w0 + tanh(x A_w) B_w)), WKV with bonus u, GroupNorm, SiLU gate.
struct Rwkv6TimeMix {
    using axis = archetype::axis::mixer;
    static constexpr std::string_view name = "Rwkv6TimeMix";
    static constexpr bool attention = false;
    static constexpr int rwkv_version = 6;
    static constexpr bool ddlerp = true;
    static constexpr bool dynamic_decay = true;
    static std::string describe() { return "Rwkv6TimeMix(ddlerp shift, data-dependent decay, WKV + GroupNorm + SiLU gate)"; }
};

/// RWKV-7 "Goose" time mix: static lerp token shift of six inputs (r, w, k, v, a, g),
/// decay w = exp(-e^-0.5 sigmoid(w0 + tanh(x_w A_w) B_w)), in-context learning rate
/// a = sigmoid(a0 + x_a A_a B_a), the value mixed toward layer 0's value (v_first),
/// the generalised delta-rule WKV (layers/rwkv7_time_mix.hpp), GroupNorm, the r.k
/// bonus and a LoRA output gate.
struct Rwkv7TimeMix {
    using axis = archetype::axis::mixer;
    static constexpr std::string_view name = "Rwkv7TimeMix";
    static constexpr bool attention = false;
    static constexpr int rwkv_version = 7;
    static constexpr bool ddlerp = false;
    static constexpr bool dynamic_decay = true;
    static std::string describe() {
        return "Rwkv7TimeMix(lerp shift, data-dependent decay and in-context rate, delta-rule WKV + GroupNorm + "
               "bonus, value residual, LoRA gate)";
    }
};

/// RWKV channel mix: sigmoid(W_r x_r) * (W_v relu(W_k x_k)^2), with token shift.
struct RwkvChannelMix {
    using axis = archetype::axis::ffn;
    static constexpr std::string_view name = "RwkvChannelMix";
    static constexpr dim_t hidden = dynamic; // the file's feed_forward_length
    static constexpr bool gated = false;
    /// runs its own forward with a per-sequence memory, the token-shift vector (policies/ffn_rwkv.hpp)
    static constexpr bool has_memory = true;
    static constexpr bool rwkv = true;
    static constexpr bool receptance = true;
    static std::string describe() { return "RwkvChannelMix(relu^2, sigmoid receptance)"; }
};

/// RWKV-7 channel mix: W_v relu(W_k x_k)^2, with token shift, no receptance gate.
struct Rwkv7ChannelMix {
    using axis = archetype::axis::ffn;
    static constexpr std::string_view name = "Rwkv7ChannelMix";
    static constexpr dim_t hidden = dynamic; // the file's feed_forward_length
    static constexpr bool gated = false;
    /// runs its own forward with a per-sequence memory, the token-shift vector (policies/ffn_rwkv.hpp)
    static constexpr bool has_memory = true;
    static constexpr bool rwkv = true;
    static constexpr bool receptance = false;
    static std::string describe() { return "Rwkv7ChannelMix(relu^2, no receptance)"; }
};

/// Recurrent state as the cache: per sequence and layer, the two token-shift
/// vectors (time mix and channel mix) and the H x N x N WKV matrix. Constant
/// size in the sequence length; create, reset, copy (fork), save and restore.
struct RecurrentState {
    using axis = archetype::axis::cache;
    static constexpr std::string_view name = "RecurrentState";
    static constexpr bool rolling = false;
    static constexpr bool recurrent = true;
    static std::string describe() { return "RecurrentState"; }
};

namespace detail {
template <class T>
concept rwkv_time_mix = requires {
    { T::rwkv_version } -> std::convertible_to<int>;
    { T::ddlerp } -> std::convertible_to<bool>;
};
template <class T>
concept rwkv_channel_mix = requires {
    { T::rwkv } -> std::convertible_to<bool>;
    { T::receptance } -> std::convertible_to<bool>;
};
template <class T>
concept recurrent_cache = requires { { T::recurrent } -> std::convertible_to<bool>; };
} // namespace detail

} // namespace archetype
