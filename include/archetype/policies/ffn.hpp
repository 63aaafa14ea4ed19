#pragma once
// Feed-forward axis. Hidden sizes come from the file unless given statically.
// Each dense policy's behaviour is its ffn_impl<F>::apply, the activation
// (layers/ffn.hpp does the projections, the biases and the residual-free output):
//   gated      apply(gate, up, n): gate[i] = act(gate[i]) * up[i]
//   not gated  apply(up, n):       up[i] = act(up[i])
// Tensors of a dense block (layers::bind_dense_ffn): blk.N.ffn_{gate,up,down}.weight,
// optional ffn_{gate,up,down}.bias.
#include <algorithm>
#include <cmath>
#include <string>

#include "archetype/core/dims.hpp"
#include "archetype/core/error.hpp"
#include "archetype/core/policy.hpp"
#include "archetype/kernels/activation.hpp"
#include "archetype/policies/impl.hpp"
#include "archetype/policies/moe.hpp"

namespace archetype {

namespace detail {
/// Whether feed-forward policy F runs itself with a per-sequence memory (the RWKV channel
/// mixes' token shift: policies/ffn_rwkv.hpp). Its ffn_impl<F> then has
///   struct weights;  template <class Binder> static weights bind(Binder&, const std::string& blk,
///                                                                std::size_t n_embd, std::size_t n_ff);
///   static std::size_t state_floats(const weights&), scratch_floats(const weights&, std::size_t rows);
///   template <class Ctx> static void forward(Ctx&, const weights&, const float* in, float* out);
/// with Ctx as a recurrent mixer's (rows(), groups(), state(seq), scratch(), pool()), the
/// state being the feed-forward's own share of the layer's memory.
template <class F>
inline constexpr bool ffn_has_memory = [] {
    if constexpr (requires { F::has_memory; }) return bool(F::has_memory);
    else return false;
}();
} // namespace detail

enum class gelu_form { tanh, erf };

/// down(silu(gate(x)) * up(x))  (Llama, Mistral)
template <dim_t Hidden = dynamic>
struct SwiGLUWith {
    using axis = archetype::axis::ffn;
    static constexpr std::string_view name = "SwiGLU";
    static constexpr dim_t hidden = Hidden;
    static constexpr bool gated = true;
    static std::string describe() {
        return Hidden == dynamic ? "SwiGLU" : "SwiGLU<" + std::to_string(Hidden) + ">";
    }
};
using SwiGLU = SwiGLUWith<>;
template <dim_t H>
struct ffn_impl<SwiGLUWith<H>> {
    static void apply(float* gate, const float* up, std::size_t n) noexcept { kernels::silu_mul(gate, up, n); }
};

namespace detail {
template <gelu_form Form>
inline void gelu(float* x, std::size_t n) noexcept {
    if constexpr (Form == gelu_form::erf)
        kernels::gelu_erf(x, n);
    else
        kernels::gelu_tanh(x, n);
}
} // namespace detail

/// down(gelu(gate(x)) * up(x))  (Gemma; tanh GELU by default)
template <gelu_form Form = gelu_form::tanh, dim_t Hidden = dynamic>
struct GeGLUWith {
    using axis = archetype::axis::ffn;
    static constexpr std::string_view name = "GeGLU";
    static constexpr dim_t hidden = Hidden;
    static constexpr bool gated = true;
    static constexpr gelu_form form = Form;
    static std::string describe() { return std::string("GeGLU") + (Form == gelu_form::erf ? "(erf)" : ""); }
};
using GeGLU = GeGLUWith<>;
template <gelu_form Form, dim_t H>
struct ffn_impl<GeGLUWith<Form, H>> {
    static void apply(float* gate, const float* up, std::size_t n) noexcept {
        detail::gelu<Form>(gate, n);
        for (std::size_t i = 0; i < n; ++i) gate[i] *= up[i];
    }
};

/// down(gelu(up(x) + b) ) + b  (BERT; llama.cpp's bert uses the tanh form)
template <gelu_form Form = gelu_form::tanh, dim_t Hidden = dynamic>
struct GeluMLPWith {
    using axis = archetype::axis::ffn;
    static constexpr std::string_view name = "GeluMLP";
    static constexpr dim_t hidden = Hidden;
    static constexpr bool gated = false;
    static constexpr gelu_form form = Form;
    static std::string describe() { return std::string("GeluMLP") + (Form == gelu_form::erf ? "(erf)" : "(tanh)"); }
};
using GeluMLP = GeluMLPWith<>;
template <gelu_form Form, dim_t H>
struct ffn_impl<GeluMLPWith<Form, H>> {
    static void apply(float* x, std::size_t n) noexcept { detail::gelu<Form>(x, n); }
};

/// down(relu(up(x))^2), not gated (Arcee; llama.cpp's LLM_FFN_RELU_SQR)
template <dim_t Hidden = dynamic>
struct ReluSquaredMLPWith {
    using axis = archetype::axis::ffn;
    static constexpr std::string_view name = "ReluSquaredMLP";
    static constexpr dim_t hidden = Hidden;
    static constexpr bool gated = false;
    static std::string describe() { return "ReluSquaredMLP"; }
};
using ReluSquaredMLP = ReluSquaredMLPWith<>;
template <dim_t H>
struct ffn_impl<ReluSquaredMLPWith<H>> {
    static void apply(float* x, std::size_t n) noexcept {
        for (std::size_t i = 0; i < n; ++i) {
            const float r = x[i] > 0.f ? x[i] : 0.f;
            x[i] = r * r;
        }
    }
};

/// gpt-oss's clamped SwiGLU (ggml's swiglu_oai, alpha 1.702, limit 7):
/// g = min(gate, 7), out = g * sigmoid(1.702 g) * (clamp(up, -7, 7) + 1)
template <dim_t Hidden = dynamic>
struct SwigluOaiWith {
    using axis = archetype::axis::ffn;
    static constexpr std::string_view name = "SwigluOai";
    static constexpr dim_t hidden = Hidden;
    static constexpr bool gated = true;
    static std::string describe() { return "SwigluOai(alpha 1.702, limit 7)"; }
};
using SwigluOai = SwigluOaiWith<>;
template <dim_t H>
struct ffn_impl<SwigluOaiWith<H>> {
    static void apply(float* gate, const float* up, std::size_t n) noexcept {
        constexpr float alpha = 1.702f, limit = 7.f;
        for (std::size_t i = 0; i < n; ++i) {
            const float x = std::min(gate[i], limit), y = std::clamp(up[i], -limit, limit);
            gate[i] = x / (1.f + std::exp(alpha * (-x))) * (y + 1.f);
        }
    }
};

/// Mixture of experts: a router picks the top K of E experts per token, their
/// outputs weighted as the Router says (default: the softmax of the router logits,
/// renormalised over the K, as Mixtral; policies/moe.hpp has the others), plus a
/// Shared expert (NoSharedExpert, SharedExpert, SigmoidGatedSharedExpert) and, with
/// LeadingDenseLayers, dense first layers. A 1-expert MoE equals the dense FFN.
template <dim_t E, dim_t K, class FFN = SwiGLU, class Router = SoftmaxRouter<>, class Shared = NoSharedExpert,
          class Dense = NoDenseLayers>
struct MoE {
    using axis = archetype::axis::ffn;
    static constexpr std::string_view name = "MoE";
    static constexpr dim_t experts = E, top_k = K;
    using expert = FFN;
    using router = Router;
    using shared = Shared;
    using dense = Dense;
    static constexpr bool gated = FFN::gated;
    static_assert(std::is_same_v<axis_of_t<FFN>, archetype::axis::ffn>,
                  "archetype: MoE<E, K, FFN>: FFN must be a feed-forward policy such as SwiGLU");
    static_assert(E == dynamic || K == dynamic || (K >= 1 && K <= E),
                  "archetype: MoE<E, K, FFN> needs 1 <= K <= E (top-K of E experts)");
    static std::string describe() {
        auto d = [](dim_t x) { return x == dynamic ? std::string("dynamic") : std::to_string(x); };
        std::string s = "MoE<" + d(E) + ", " + d(K) + ", " + FFN::describe();
        if constexpr (!std::is_same_v<Router, SoftmaxRouter<>>) s += ", " + Router::describe();
        if constexpr (!std::is_same_v<Shared, NoSharedExpert>) s += ", " + Shared::describe();
        if constexpr (!std::is_same_v<Dense, NoDenseLayers>) s += ", " + Dense::describe();
        return s + ">";
    }
};

namespace detail {
/// The activation a converter recorded ({arch}.hidden_activation: gelu, gelu_pytorch_tanh,
/// gelu_new, gelu_fast, silu) against the compiled feed-forward FFN: a GELU form or a gated
/// SiLU the policy does not compute is refused, never swapped silently. `key` names the key
/// in the messages.
template <class FFN>
void check_hidden_activation(const std::string& key, const std::string& act) {
    const std::string what = "'" + key + "' = '" + act + "'";
    const bool erf = act == "gelu", tanh = act == "gelu_pytorch_tanh" || act == "gelu_new" || act == "gelu_fast";
    const bool silu = act == "silu" || act == "swish";
    if (!erf && !tanh && !silu)
        throw format_error(what + " is not an activation this library knows (gelu, gelu_pytorch_tanh, gelu_new, "
                           "gelu_fast, silu)");
    bool ok;
    if constexpr (requires { FFN::form; })
        ok = FFN::form == gelu_form::erf ? erf : tanh;
    else
        ok = silu && FFN::gated;
    if (!ok) throw shape_error("the model type's feed-forward is " + FFN::describe() + " but the file has " + what);
}
} // namespace detail

} // namespace archetype
