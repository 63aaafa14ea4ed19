#pragma once
// T5 relative position bias with `Buckets` buckets: score(q, k) +=
// table[bucket(p_q - p_k), h] (layers::t5_bucket_causal). Tables
// `blk.N.attn_rel_b.weight` [n_head, Buckets] per layer, or only layer 0's shared
// by all layers (T5's files); F32 or F16, kept as float.
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "archetype/core/dims.hpp"
#include "archetype/core/dtype.hpp"
#include "archetype/core/error.hpp"
#include "archetype/core/half.hpp"
#include "archetype/layers/positions.hpp"
#include "archetype/core/policy.hpp"
#include "archetype/policies/impl.hpp"

namespace archetype {

template <dim_t Buckets = 32>
struct RelativeBias {
    using axis = archetype::axis::position;
    static constexpr std::string_view name = "RelativeBias";
    static constexpr bool rotary = false;
    static constexpr dim_t buckets = Buckets;
    static std::string describe() { return "RelativeBias<" + std::to_string(Buckets) + ">"; }
};

template <dim_t B>
struct position_impl<RelativeBias<B>> {
    struct weights {
        std::vector<std::vector<float>> tables; // per layer (or one shared) [bucket][head]
        std::size_t n_head = 0;
    };
    struct state {
        std::vector<std::uint32_t> bucket; // T5 bucket per query-key distance 0 .. n_ctx
    };
    template <class Binder>
    static void bind(Binder& b, weights& w) {
        const std::size_t n_layer = b.hparams().dims.n_layer, n_head = b.hparams().dims.n_head;
        w.n_head = n_head;
        const bool per_layer = n_layer > 1 && b.file().find_tensor("blk.1.attn_rel_b.weight") != nullptr;
        w.tables.resize(per_layer ? n_layer : 1);
        for (std::size_t il = 0; il < w.tables.size(); ++il) {
            const std::string name = "blk." + std::to_string(il) + ".attn_rel_b.weight";
            const auto& t = b.tensor(name, {n_head, std::uint64_t(B)});
            auto& v = w.tables[il];
            v.resize(n_head * B);
            if (t.type == ggml_type::F32)
                std::memcpy(v.data(), t.data, v.size() * sizeof(float));
            else if (t.type == ggml_type::F16)
                for (std::size_t i = 0; i < v.size(); ++i) {
                    std::uint16_t hbits;
                    std::memcpy(&hbits, t.data + 2 * i, 2);
                    v[i] = fp16_to_fp32(hbits);
                }
            else
                throw shape_error("tensor '" + name + "' is " + std::string(type_name(t.type)) + ", expected F32 or F16");
        }
    }
    static void init(const weights&, const position_context& c, state& s) {
        s.bucket.resize(c.n_ctx + 1);
        for (std::size_t d = 0; d < s.bucket.size(); ++d)
            s.bucket[d] = std::uint32_t(layers::t5_bucket_causal(std::int64_t(d), B, layers::t5_max_distance));
    }
    static float score_bias(const weights& w, const state& s, std::size_t il, std::size_t h, std::int64_t pq,
                            std::int64_t pk) noexcept {
        const std::size_t d = std::size_t(std::min<std::int64_t>(std::max<std::int64_t>(pq - pk, 0),
                                                                  std::int64_t(s.bucket.size() - 1)));
        const auto& t = w.tables[w.tables.size() == 1 ? 0 : il];
        return t[std::size_t(s.bucket[d]) * w.n_head + h];
    }
};

} // namespace archetype
