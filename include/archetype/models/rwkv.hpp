#pragma once
// Rwkv5<D, H> (Eagle, v5.2), Rwkv6<D, H> (Finch) and Rwkv7<D, H> (Goose): D =
// embedding size, H = head size (N); either may be `dynamic` (read from the file).
// The structure is the policy set: mixer (Rwkv5TimeMix / Rwkv6TimeMix /
// Rwkv7TimeMix), feed-forward (RwkvChannelMix; Rwkv7ChannelMix), norm (LayerNorm; ln_x is a GroupNorm over heads), cache
// (RecurrentState), storage (WeightsFromFile or a fixed type).
//
//   using Finch = archetype::Rwkv6<2048, 64>;
//   std::cout << archetype::describe<Finch>();
//
// rwkv_model<Arch> is a loaded model: views of the weights (into the mapped
// file where its layout allows) plus what keeps them alive. rwkv_forward runs
// a batch of rows, each row a token of some sequence, through the whole stack.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "archetype/core/dims.hpp"
#include "archetype/core/error.hpp"
#include "archetype/core/policy.hpp"
#include "archetype/core/thread_pool.hpp"
#include "archetype/kernels/convert.hpp"
#include "archetype/kernels/matmul.hpp"
#include "archetype/kernels/norm.hpp"
#include "archetype/layers/rwkv7_time_mix.hpp"
#include "archetype/layers/rwkv_channel_mix.hpp"
#include "archetype/layers/rwkv_time_mix.hpp"
#include "archetype/layers/rwkv_weights.hpp"
#include "archetype/layers/rwkv_workspace.hpp"
#include "archetype/models/compose.hpp"
#include "archetype/policies/cache.hpp"
#include "archetype/policies/norm.hpp"
#include "archetype/policies/rwkv.hpp"
#include "archetype/policies/storage.hpp"

namespace archetype {

namespace detail {

inline std::string rwkv_dim_str(dim_t d) { return d == dynamic ? std::string("dynamic") : std::to_string(d); }

template <int V, dim_t D, dim_t H, class... Ps>
struct rwkv_arch {
    static_assert(check_composition<Ps...>::ok);
    static_assert(V == 5 || V == 6 || V == 7);
    static_assert(D != 0 && H != 0, "archetype: Rwkv<D, H>: the embedding size D and head size H must be positive");
    static_assert(D == dynamic || H == dynamic || D % H == 0,
                  "archetype: Rwkv<D, H>: D must be a multiple of the head size H (D / H heads)");
    static_assert(count_on_axis<axis::heads, Ps...> == 0 && count_on_axis<axis::position, Ps...> == 0 &&
                      count_on_axis<axis::mask, Ps...> == 0 && count_on_axis<axis::pooling, Ps...> == 0 &&
                      count_on_axis<axis::embd_norm, Ps...> == 0,
                  "archetype: RWKV models have no attention heads, positions, masks or pooling: the head "
                  "count follows from D / H; remove MHA/GQA/RoPE/Causal/... from Rwkv5/Rwkv6/Rwkv7");

    static constexpr int version = V;
    static constexpr dim_t embd = D;
    static constexpr dim_t head_size = H;
    static constexpr dim_t n_head = (D == dynamic || H == dynamic) ? dynamic : D / H;

    using default_mixer = std::conditional_t<V == 5, Rwkv5TimeMix, std::conditional_t<V == 6, Rwkv6TimeMix, Rwkv7TimeMix>>;
    using default_ffn = std::conditional_t<V == 7, Rwkv7ChannelMix, RwkvChannelMix>;
    using mixer = policy_on_axis_t<axis::mixer, default_mixer, Ps...>;
    using ffn = policy_on_axis_t<axis::ffn, default_ffn, Ps...>;
    using norm = policy_on_axis_t<axis::norm, LayerNorm, Ps...>;
    using cache = policy_on_axis_t<axis::cache, RecurrentState, Ps...>;
    using storage = policy_on_axis_t<axis::storage, WeightsFromFile, Ps...>;

    static_assert(rwkv_time_mix<mixer>,
                  "archetype: an RWKV model's mixer must be Rwkv5TimeMix, Rwkv6TimeMix or Rwkv7TimeMix");
    static_assert(!rwkv_time_mix<mixer> || mixer::rwkv_version == V,
                  "archetype: the time mix does not match the model version: Rwkv5 takes Rwkv5TimeMix, "
                  "Rwkv6 takes Rwkv6TimeMix, Rwkv7 takes Rwkv7TimeMix");
    static_assert(rwkv_channel_mix<ffn>,
                  "archetype: an RWKV model's feed-forward must be RwkvChannelMix (Rwkv7ChannelMix for Rwkv7)");
    static_assert(!rwkv_channel_mix<ffn> || ffn::receptance == (V != 7),
                  "archetype: RWKV-7's channel mix has no receptance (Rwkv7ChannelMix); v5.2 and v6 have one "
                  "(RwkvChannelMix)");
    static_assert(std::is_same_v<norm, LayerNorm>, "archetype: RWKV blocks use LayerNorm (ln_x is a GroupNorm)");
    static_assert(recurrent_cache<cache>,
                  "archetype: RWKV keeps a recurrent state, not a KV cache: use RecurrentState (or no cache policy)");

    /// Floats of recurrent state per layer and sequence: 2 shift vectors + H x N x N = (2 + N) * D.
    static constexpr dim_t state_floats_per_layer = (D == dynamic || H == dynamic) ? dynamic : (2 + H) * D;

    static std::string type_name() {
        return "Rwkv" + std::to_string(V) + "<" + rwkv_dim_str(D) + ", " + rwkv_dim_str(H) + ">";
    }
    static std::string describe() {
        std::string s = type_name() + (V == 5 ? "  (RWKV-5.2 Eagle)\n" : V == 6 ? "  (RWKV-6 Finch)\n" : "  (RWKV-7 Goose)\n");
        s += describe_line("embd", rwkv_dim_str(D));
        s += describe_line("head size", rwkv_dim_str(H) +
                                            (n_head == dynamic ? std::string() : " (" + std::to_string(n_head) + " heads)"));
        s += describe_line("mixer", mixer::describe());
        s += describe_line("ffn", ffn::describe());
        s += describe_line("norm", norm::describe() + " (ln0, ln1, ln2, ln_out); GroupNorm ln_x per head, eps a load option (default 64e-5)");
        std::string st = cache::describe() + ": 2 token-shift vectors + H x N x N wkv per layer";
        if constexpr (state_floats_per_layer != dynamic)
            st += " = " + std::to_string(state_floats_per_layer * 4) + " bytes per layer per sequence";
        s += describe_line("cache", st + ", constant in the sequence length");
        s += describe_line("storage", storage::describe());
        return s;
    }
};

} // namespace detail

/// RWKV-6 "Finch": D embedding size, H head size (`dynamic` = from the file).
template <dim_t D, dim_t H, class... Policies>
struct Rwkv6 : detail::rwkv_arch<6, D, H, Policies...> {
    static constexpr std::string_view name = "Rwkv6";
};
/// RWKV-5.2 "Eagle": D embedding size, H head size (`dynamic` = from the file).
template <dim_t D, dim_t H, class... Policies>
struct Rwkv5 : detail::rwkv_arch<5, D, H, Policies...> {
    static constexpr std::string_view name = "Rwkv5";
};
/// RWKV-7 "Goose": D embedding size, H head size (`dynamic` = from the file).
template <dim_t D, dim_t H, class... Policies>
struct Rwkv7 : detail::rwkv_arch<7, D, H, Policies...> {
    static constexpr std::string_view name = "Rwkv7";
};

namespace detail {
template <class T>
struct is_rwkv_arch : std::false_type {};
template <dim_t D, dim_t H, class... Ps>
struct is_rwkv_arch<Rwkv6<D, H, Ps...>> : std::true_type {};
template <dim_t D, dim_t H, class... Ps>
struct is_rwkv_arch<Rwkv5<D, H, Ps...>> : std::true_type {};
template <dim_t D, dim_t H, class... Ps>
struct is_rwkv_arch<Rwkv7<D, H, Ps...>> : std::true_type {};
} // namespace detail

/// True for Rwkv5<...>, Rwkv6<...> and Rwkv7<...>.
template <class T>
concept RwkvArchitecture = detail::is_rwkv_arch<T>::value;

/// A loaded RWKV model. The weights are views; `keep_alive` holds the mapped
/// file and `owned` the few tensors the loader had to convert or realign.
template <class Arch>
    requires RwkvArchitecture<Arch>
struct rwkv_model {
    using arch = Arch;
    rwkv_weights weights;
    std::shared_ptr<const void> keep_alive;
    std::vector<std::vector<float>> owned;
    std::string source; ///< "rwkv.cpp .bin v101 FP16", "GGUF rwkv6", ...

    const rwkv_hparams& hparams() const noexcept { return weights.hp; }
    /// The compiled structure with the loaded dimensions (as decoder_model::describe).
    std::string describe() const;
};

/// The loaded dimensions of a model, after its compiled structure.
template <class Arch>
    requires RwkvArchitecture<Arch>
std::string rwkv_model<Arch>::describe() const {
    const auto& hp = hparams();
    const auto& m = *this;
    std::string s = Arch::describe();
    s += "loaded from " + m.source + ":\n";
    s += detail::describe_line("embd", std::to_string(hp.n_embd));
    s += detail::describe_line("heads", std::to_string(hp.n_head) + " x head size " + std::to_string(hp.head_size));
    s += detail::describe_line("layers", std::to_string(hp.n_layer));
    s += detail::describe_line("vocab", std::to_string(hp.n_vocab));
    s += detail::describe_line("ffn", std::to_string(hp.n_ffn));
    if (hp.version == 6)
        s += detail::describe_line("lora", "mix " + std::to_string(hp.n_lora_mix) + " x 5, decay " +
                                               std::to_string(hp.n_lora_decay));
    if (hp.version == 7)
        s += detail::describe_line("lora", "decay " + std::to_string(hp.n_lora_decay) + ", in-context rate " +
                                               std::to_string(hp.n_lora_iclr) + ", value residual " +
                                               std::to_string(hp.n_lora_vres) + ", gate " +
                                               std::to_string(hp.n_lora_gate));
    char eps[64];
    std::snprintf(eps, sizeof eps, "LayerNorm %g, GroupNorm %g", double(hp.ln_eps), double(hp.gn_eps));
    s += detail::describe_line("eps", eps);
    s += detail::describe_line("state", std::to_string(hp.state_floats() * sizeof(float)) +
                                            " bytes per sequence (constant in the sequence length)");
    return s;
}
/// The one describe spelling of the three families (decoder, encoder, RWKV).
template <class Arch>
std::string describe(const rwkv_model<Arch>& m) {
    return m.describe();
}

namespace detail {
/// Row `id` of an embedding matrix as float32.
inline void rwkv_embedding_row(const kernels::weight_view& E, std::size_t id, float* out) {
    const std::byte* p = E.row(id);
    switch (E.type) {
    case ggml_type::F32: std::memcpy(out, p, E.cols * sizeof(float)); break;
    case ggml_type::F16: kernels::f16_to_f32(reinterpret_cast<const std::uint16_t*>(p), out, E.cols); break;
    case ggml_type::BF16: kernels::bf16_to_f32(reinterpret_cast<const std::uint16_t*>(p), out, E.cols); break;
    default:
        throw argument_error("embedding type " + std::string(type_name(E.type)) + " is not supported");
    }
}
} // namespace detail

/// Runs rows [0, n) — token `tokens[i]` of the sequence whose segment holds row
/// i — through all layers, updating each segment's state. Writes the logits of
/// rows `out_rows` (in that order) to `logits` ([out_rows.size() x n_vocab]).
/// Token ids must have been checked by the caller; ws must hold >= n rows.
///
/// A pipeline stage (W.range not the whole model) reads its input rows from
/// x_in instead of embedding tokens, keeps the state of its own layers only (a
/// segment's state starts at its first layer), and, unless it ends the model,
/// leaves its output rows in ws.x for the next stage. `each_layer` (may be null)
/// is called after every layer.
template <class Arch>
void rwkv_forward(const rwkv_weights& W, std::span<const rwkv_segment> segs, const std::int32_t* tokens,
                  std::size_t n, std::span<const std::size_t> out_rows, float* logits, rwkv_workspace& ws,
                  thread_pool* pool, const float* x_in = nullptr, void (*each_layer)(void*) = nullptr,
                  void* each_layer_context = nullptr) {
    const auto& hp = W.hp;
    const std::size_t C = resolve_dim<Arch::embd>(hp.n_embd);
    const std::size_t N = resolve_dim<Arch::head_size>(hp.head_size);
    float* x = ws.x.data();
    float* xn = ws.xn.data();
    const float* y = ws.y.data();
    if (W.has_embedding()) {
        for (std::size_t i = 0; i < n; ++i) {
            detail::rwkv_embedding_row(W.emb, std::size_t(tokens[i]), ws.emb_row.data());
            kernels::layer_norm(ws.emb_row.data(), W.ln0_w, W.ln0_b, x + i * C, C, hp.ln_eps);
        }
    } else {
        if (!x_in) throw argument_error("rwkv_forward: a pipeline stage without the embedding needs its input rows (x_in)");
        std::memcpy(x, x_in, n * C * sizeof(float));
    }
    const std::size_t spl = hp.state_floats_per_layer();
    const layer_range R = W.stage();
    for (std::size_t l = R.first; l < R.first + R.count; ++l) {
        const auto& L = W.layers[l];
        const std::size_t at = (l - R.first) * spl; // the stage's state holds its layers only
        for (std::size_t i = 0; i < n; ++i) kernels::layer_norm(x + i * C, L.ln1_w, L.ln1_b, xn + i * C, C, hp.ln_eps);
        if constexpr (Arch::mixer::rwkv_version == 7)
            rwkv7_time_mix(hp, C, N, L, segs, rwkv7_state_at{at + C, at + 2 * C}, n, l == 0, ws, pool);
        else
            rwkv_time_mix<typename Arch::mixer>(hp, C, N, L, segs, rwkv_state_at{at + C, at + 2 * C}, n, ws, pool);
        for (std::size_t e = 0; e < n * C; ++e) x[e] += y[e];
        for (std::size_t i = 0; i < n; ++i) kernels::layer_norm(x + i * C, L.ln2_w, L.ln2_b, xn + i * C, C, hp.ln_eps);
        rwkv_channel_mix<typename Arch::ffn>(hp, C, L, segs, at, n, ws, pool);
        for (std::size_t e = 0; e < n * C; ++e) x[e] += y[e];
        if (hp.rescale_every != 0 && (l + 1) % hp.rescale_every == 0)
            for (std::size_t e = 0; e < n * C; ++e) x[e] *= 0.5f;
        if (each_layer) each_layer(each_layer_context);
    }
    if (out_rows.empty() || !W.has_head()) return;
    for (std::size_t j = 0; j < out_rows.size(); ++j)
        kernels::layer_norm(x + out_rows[j] * C, W.ln_out_w, W.ln_out_b, xn + j * C, C, hp.ln_eps);
    kernels::matmul(W.head, xn, C, out_rows.size(), logits, hp.n_vocab, pool, rwkv_gemm_sum);
}

} // namespace archetype
