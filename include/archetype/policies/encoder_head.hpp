#pragma once
// EncoderHead (logits axis): an encoder's head. An encoder has no language-model head:
// its front end pools the final hidden rows (runtime/encoder_session.hpp). What the file
// says of that head is this policy's to read:
//   {arch}.pooling_type   the file's default pooling (0 none, 1 mean, 2 cls, 3 last, 4 rank;
//                         absent: none), for an encoder whose pooling comes from the file
//   cls.weight [E, C] (+ cls.bias), cls.output.weight [C or E, R] (+ .bias), each optional:
//                         the classifier llama.cpp's RANK pooling applies to the first
//                         position (tanh(cls x + b), then cls.output)
// The logits themselves are never touched (identity).
#include <cstddef>
#include <string>

#include "archetype/core/error.hpp"
#include "archetype/core/policy.hpp"
#include "archetype/kernels/matmul.hpp"
#include "archetype/policies/impl.hpp"
#include "archetype/policies/pooling.hpp"

namespace archetype {

struct EncoderHead {
    using axis = archetype::axis::logits;
    static constexpr std::string_view name = "EncoderHead";
    static std::string describe() { return "none: the hidden rows are pooled (pooling_type, cls.* classifier)"; }
};

template <>
struct logits_impl<EncoderHead> {
    struct weights {
        pooling_type pooling = pooling_type::none; // the file's default
        kernels::weight_view cls{}, cls_out{};      // data null: absent
        const float *cls_b = nullptr, *cls_out_b = nullptr;
    };
    static constexpr bool identity = true;
    template <class Binder>
    static void bind(Binder& b, weights& w) {
        const std::string pk = b.prefix() + "pooling_type";
        const auto pt = b.file().template get_or<std::int64_t>(pk, 0);
        const auto p = pooling_from_file_value(pt);
        if (!p)
            throw format_error(pk + " = " + std::to_string(pt) + " is not 0 (none), 1 (mean), 2 (cls), 3 (last) or 4 (rank)");
        w.pooling = *p;
        const std::size_t E = b.hparams().dims.n_embd;
        auto rows_of = [&](const char* name) {
            const auto& t = b.file().tensor(name);
            return t.ne.size() >= 2 ? std::size_t(t.ne[1]) : 0;
        };
        std::size_t width = E;
        if (b.file().find_tensor("cls.weight")) {
            w.cls = b.matrix("cls.weight", E, rows_of("cls.weight"));
            w.cls_b = b.optional_vector_f32("cls.bias", w.cls.rows);
            width = w.cls.rows;
        }
        if (b.file().find_tensor("cls.output.weight")) {
            w.cls_out = b.matrix("cls.output.weight", width, rows_of("cls.output.weight"));
            w.cls_out_b = b.optional_vector_f32("cls.output.bias", w.cls_out.rows);
        }
    }
    static void apply(const weights&, float*, std::size_t) noexcept {}
};

} // namespace archetype
