#pragma once
// The parts of a mixture of experts (MoE<E, K, FFN, Router, Shared, Dense>,
// policies/ffn.hpp) that differ between families, each a policy with its keys and
// tensors (run time: layers/ffn.hpp, in llama.cpp's order of build_moe_ffn):
//
//   Router   SoftmaxRouter<true>   softmax over the experts, top K, renormalised (Mixtral,
//                                  Qwen3-MoE, GraniteMoE; llama.cpp hard-codes it, no key)
//            SoftmaxRouter<false>  the same without the renormalisation (OLMoE, Qwen2-MoE)
//            SoftmaxOfTopKRouter   top K of the logits, softmax over those K (gpt-oss)
//            RouterFromFile<G, N>  the file's {arch}.expert_gating_func (1 softmax, 2 sigmoid,
//                                  3 softmax of the top K; absent or 0: G),
//                                  expert_weights_norm (absent: N), expert_weights_scale,
//                                  expert_group_count / expert_group_used_count and the
//                                  selection bias blk.N.exp_probs_b.bias (DeepSeek-V2/V3, GLM-4.5)
//            (every router binds blk.N.ffn_gate_inp.bias when the file has it: gpt-oss)
//   Shared   NoSharedExpert        none (a file with ffn_*_shexp is refused by the tensor ledger)
//            SharedExpert          one block ffn_{gate,up,down}_shexp of
//                                  expert_feed_forward_length x {arch}.expert_shared_count,
//                                  added to the routed sum (DeepSeek, GLM-4.5)
//            SigmoidGatedSharedExpert  ffn of {arch}.expert_shared_feed_forward_length (default
//                                  feed_forward_length), times sigmoid(ffn_gate_inp_shexp . x)
//                                  (Qwen2-MoE)
//   Dense    NoDenseLayers         every layer routes
//            LeadingDenseLayers    layers il < {arch}.leading_dense_block_count are a dense
//                                  FFN of feed_forward_length (DeepSeek, GLM-4.5)
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>

#include "archetype/core/error.hpp"

namespace archetype {

/// What a router does to its logits before choosing (llama.cpp's expert_gating_func).
enum class moe_gating { softmax, sigmoid, softmax_of_top_k };

template <bool Renormalise = true>
struct SoftmaxRouter {
    static constexpr bool renormalise = Renormalise;
    static std::string describe() { return Renormalise ? "softmax, top-k renormalised" : "softmax, top-k"; }
};
struct SoftmaxOfTopKRouter {
    static std::string describe() { return "top-k logits, softmax over them"; }
};
template <moe_gating Default = moe_gating::softmax, bool NormDefault = false>
struct RouterFromFile {
    static constexpr moe_gating default_gating = Default;
    static constexpr bool default_norm = NormDefault;
    static std::string describe() { return "router from the file (gating, norm, scale, groups, selection bias)"; }
};

struct NoSharedExpert {
    static std::string describe() { return "no shared expert"; }
};
struct SharedExpert {
    static std::string describe() { return "shared expert"; }
};
struct SigmoidGatedSharedExpert {
    static std::string describe() { return "sigmoid-gated shared expert"; }
};
/// One ungated shared expert {arch}.expert_shared_feed_forward_length wide (Granite-4.0-H's
/// MoE variants: llama.cpp granite-hybrid.cpp adds it to the routed experts' sum).
struct SharedExpertOfLength {
    static std::string describe() { return "shared expert of expert_shared_feed_forward_length"; }
};

struct NoDenseLayers {
    static std::string describe() { return "every layer routed"; }
};
struct LeadingDenseLayers {
    static std::string describe() { return "leading dense layers"; }
};
/// A layer without a router (blk.N.ffn_gate_inp.weight) is dense (Jamba: MoE every other layer).
struct DenseWithoutRouter {
    static std::string describe() { return "dense where a layer has no router"; }
};

// ---- behaviour (the binder is decoder_model's; W is layers::moe_weights) ----

template <class R>
struct router_impl;

template <bool Renormalise>
struct router_impl<SoftmaxRouter<Renormalise>> {
    template <class Binder, class W>
    static void bind(Binder&, const std::string&, W& w) {
        w.gating = moe_gating::softmax;
        w.normalise = Renormalise;
    }
};

template <>
struct router_impl<SoftmaxOfTopKRouter> {
    template <class Binder, class W>
    static void bind(Binder&, const std::string&, W& w) {
        w.gating = moe_gating::softmax_of_top_k;
        w.normalise = false;
    }
};

template <moe_gating Default, bool NormDefault>
struct router_impl<RouterFromFile<Default, NormDefault>> {
    template <class Binder, class W>
    static void bind(Binder& b, const std::string& blk, W& w) {
        const auto& f = b.file();
        const std::string a = b.prefix();
        const std::uint64_t g = f.has(a + "expert_gating_func") ? f.template get<std::uint64_t>(a + "expert_gating_func") : 0;
        switch (g) {
        case 0: w.gating = Default; break;
        case 1: w.gating = moe_gating::softmax; break;
        case 2: w.gating = moe_gating::sigmoid; break;
        case 3: w.gating = moe_gating::softmax_of_top_k; break;
        default:
            throw shape_error("metadata key '" + a + "expert_gating_func' = " + std::to_string(g) +
                              " is not supported (1 softmax, 2 sigmoid, 3 softmax of the top k)");
        }
        w.normalise = f.has(a + "expert_weights_norm") ? f.template get<bool>(a + "expert_weights_norm") : NormDefault;
        w.scale = f.has(a + "expert_weights_scale") ? f.template get<float>(a + "expert_weights_scale") : 0.f;
        if (!(w.scale >= 0.f) || !std::isfinite(w.scale))
            throw format_error("metadata key '" + a + "expert_weights_scale' must be a finite non-negative number");
        const std::size_t n_expert = w.router.rows;
        w.n_group = f.has(a + "expert_group_count") ? f.template get<std::size_t>(a + "expert_group_count") : 1;
        w.n_group_used = f.has(a + "expert_group_used_count") ? f.template get<std::size_t>(a + "expert_group_used_count") : 1;
        if (w.n_group == 0 || w.n_group > 64 || n_expert % w.n_group != 0 || w.n_group_used == 0 ||
            w.n_group_used > w.n_group || (w.n_group > 1 && w.n_group_used * (n_expert / w.n_group) < w.n_used))
            throw format_error(a + "expert_group_count = " + std::to_string(w.n_group) + ", expert_group_used_count = " +
                               std::to_string(w.n_group_used) + ": need groups dividing the " + std::to_string(n_expert) +
                               " experts (at most 64), 1 <= used <= count, and room for the top k");
        w.select_bias = b.optional_vector_f32(blk + "exp_probs_b.bias", n_expert);
    }
};

template <class S>
struct shared_expert_impl;

template <>
struct shared_expert_impl<NoSharedExpert> {
    template <class Binder, class W>
    static void bind(Binder&, const std::string&, std::size_t, std::size_t, std::size_t, W&) {}
};

namespace detail {
template <class Binder, class W>
void bind_shared_block(Binder& b, const std::string& blk, std::size_t E, std::size_t ff, bool gated, W& w) {
    w.has_shared = true;
    if (gated) w.shared.gate = b.matrix(blk + "ffn_gate_shexp.weight", E, ff);
    w.shared.up = b.matrix(blk + "ffn_up_shexp.weight", E, ff);
    w.shared.down = b.matrix(blk + "ffn_down_shexp.weight", ff, E);
}
} // namespace detail

template <>
struct shared_expert_impl<SharedExpert> {
    /// n_ff: the file's feed_forward_length, n_ff_exp: its expert_feed_forward_length.
    template <class Binder, class W>
    static void bind(Binder& b, const std::string& blk, std::size_t E, std::size_t, std::size_t n_ff_exp, W& w,
                     bool gated = true) {
        const std::string key = b.prefix() + "expert_shared_count";
        const std::size_t n = b.file().template get<std::size_t>(key);
        if (n == 0 || n > 4096) throw format_error("metadata key '" + key + "' = " + std::to_string(n) + " is out of range");
        detail::bind_shared_block(b, blk, E, n_ff_exp * n, gated, w);
    }
};

template <>
struct shared_expert_impl<SigmoidGatedSharedExpert> {
    template <class Binder, class W>
    static void bind(Binder& b, const std::string& blk, std::size_t E, std::size_t n_ff, std::size_t, W& w,
                     bool gated = true) {
        const std::string key = b.prefix() + "expert_shared_feed_forward_length";
        const std::size_t ff = b.file().has(key) ? b.file().template get<std::size_t>(key) : n_ff;
        if (ff == 0 || ff > (std::size_t(1) << 24))
            throw format_error("metadata key '" + key + "' = " + std::to_string(ff) + " is out of range");
        detail::bind_shared_block(b, blk, E, ff, gated, w);
        w.shared_gate = b.vector_f32(blk + "ffn_gate_inp_shexp.weight", E);
    }
};

/// dense_layers_impl<D>: leading(binder) = the count of leading dense layers; optional
/// dense(binder, il) = whether layer il (past those) is dense too.
template <>
struct shared_expert_impl<SharedExpertOfLength> {
    template <class Binder, class W>
    static void bind(Binder& b, const std::string& blk, std::size_t E, std::size_t, std::size_t, W& w,
                     bool gated = true) {
        const std::string key = b.prefix() + "expert_shared_feed_forward_length";
        const std::size_t ff = b.file().template get<std::size_t>(key);
        if (ff == 0 || ff > (std::size_t(1) << 24))
            throw format_error("metadata key '" + key + "' = " + std::to_string(ff) + " is out of range");
        detail::bind_shared_block(b, blk, E, ff, gated, w);
    }
};

template <class D>
struct dense_layers_impl;

template <>
struct dense_layers_impl<NoDenseLayers> {
    template <class Binder>
    static std::size_t leading(Binder&) {
        return 0;
    }
};

template <>
struct dense_layers_impl<DenseWithoutRouter> {
    template <class Binder>
    static std::size_t leading(Binder&) {
        return 0;
    }
    /// Whether layer il is dense (beyond the leading ones): it has no router tensor.
    template <class Binder>
    static bool dense(Binder& b, std::size_t il) {
        return b.file().find_tensor("blk." + std::to_string(il) + ".ffn_gate_inp.weight") == nullptr;
    }
};

template <>
struct dense_layers_impl<LeadingDenseLayers> {
    template <class Binder>
    static std::size_t leading(Binder& b) {
        const std::string key = b.prefix() + "leading_dense_block_count";
        const std::size_t n = b.file().has(key) ? b.file().template get<std::size_t>(key) : 0;
        if (n > b.keys().n_layer)
            throw format_error("metadata key '" + key + "' = " + std::to_string(n) + " exceeds the " +
                               std::to_string(b.keys().n_layer) + " layers");
        return n;
    }
};

} // namespace archetype
