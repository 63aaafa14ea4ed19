#pragma once
// xtensor at the API, opt in: include this header where a program wants shaped
// containers rather than raw buffers (xtensor's headers cost a few seconds per
// translation unit, so the sessions themselves do not pull them in).
//
//   auto w = archetype::tensor_view<float>(file.tensor("output_norm.weight"));  // xt view, no copy
//   xt::xtensor<float, 2> logits = archetype::prefill(sess, 0, tokens);        // [n_tokens, n_vocab]
//   xt::xtensor<float, 2> next   = archetype::decode(sess, seqs, tokens);      // [n_seqs, n_vocab]
//   xt::xtensor<float, 2> emb    = archetype::embed(encoder_sess, sentences);  // [n_seqs, width]
//
// Kernels stay on raw pointers: these functions allocate the container and pass
// its buffer to the session's raw-pointer call, which remains the one that
// saves a copy when the caller already has the memory.
//
// Alignment: XTENSOR_USE_XSIMD makes xtensor's allocator alignment follow the
// translation unit's instruction set (xtensor_config.hpp). archetype_dep pins
// XTENSOR_DEFAULT_ALIGNMENT to 64 for every dependent, so that a container made
// in one translation unit and freed in another (built for another instruction
// set) agrees on its allocator.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include <xtensor/xadapt.hpp>
#include <xtensor/xtensor.hpp>

#include "archetype/core/dtype.hpp"
#include "archetype/core/error.hpp"
#include "archetype/io/gguf.hpp"
#include "archetype/policies/pooling.hpp"
#include "archetype/runtime/session_args.hpp"

namespace archetype {

/// A tensor of the mapped file as an xtensor view (no copy) in numpy order (the
/// GGUF ne reversed: a matrix [rows, cols]). T is float for F32, std::uint16_t (the
/// raw bits) for F16 and BF16; another type or a quantised tensor is a type_error.
template <class T>
auto tensor_view(const gguf::tensor_info& t) {
    const bool ok = std::is_same_v<T, float> ? t.type == ggml_type::F32
                                             : std::is_same_v<T, std::uint16_t> &&
                                                   (t.type == ggml_type::F16 || t.type == ggml_type::BF16);
    if (!ok)
        throw type_error("tensor '" + t.name + "' is " + std::string(type_name(t.type)) +
                         ": tensor_view<float> takes F32, tensor_view<std::uint16_t> F16 or BF16");
    std::vector<std::size_t> shape(t.ne.rbegin(), t.ne.rend());
    return xt::adapt(reinterpret_cast<const T*>(t.data), std::size_t(t.n_elements()), xt::no_ownership(), shape);
}

/// Prefill of one sequence; logits [n_tokens, n_vocab] (rows == all) or [1, n_vocab].
template <class Session>
xt::xtensor<float, 2> prefill(Session& s, seq_id seq, std::span<const std::int32_t> tokens,
                              logits_rows rows = logits_rows::all) {
    const std::size_t n = rows == logits_rows::all ? tokens.size() : (tokens.empty() ? 0 : 1);
    xt::xtensor<float, 2> out = xt::xtensor<float, 2>::from_shape({n, s.n_vocab()});
    s.prefill(seq, tokens, out.data(), rows);
    return out;
}

/// One token for each of several sequences; logits [n_seqs, n_vocab] in their order.
template <class Session>
xt::xtensor<float, 2> decode(Session& s, std::span<const seq_id> seqs, std::span<const std::int32_t> tokens) {
    xt::xtensor<float, 2> out = xt::xtensor<float, 2>::from_shape({seqs.size(), s.n_vocab()});
    s.decode(seqs, tokens, out.data());
    return out;
}

/// Sentence embeddings with the encoder's pooling and normalisation: [n_seqs, width]
/// (pooling none: [total tokens, n_embd]).
template <class EncoderSession>
xt::xtensor<float, 2> embed(EncoderSession& s, std::span<const std::span<const std::int32_t>> seqs) {
    const std::size_t total = s.output_size(seqs);
    const std::size_t rows = s.default_pooling() == pooling_type::none ? total / s.model().n_embd() : seqs.size();
    xt::xtensor<float, 2> out = xt::xtensor<float, 2>::from_shape({rows, rows ? total / rows : 0});
    s.embed(seqs, std::span<float>(out.data(), out.size()));
    return out;
}

} // namespace archetype
