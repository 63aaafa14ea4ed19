#pragma once
// Rewrites a GGUF file with its weight matrices stored as another type, as
// llama.cpp's llama-quantize does (without importance matrices or per-tensor
// type mixes): the same tensors, names and metadata; 2-D `.weight` tensors
// converted, everything llama.cpp keeps (1-D tensors, norms, MoE routers,
// position / token-type embeddings, RWKV's small 2-D tensors) copied unchanged;
// general.file_type and general.quantization_version updated. Streaming: one
// tensor is converted at a time from the mapped input.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "archetype/core/dtype.hpp"
#include "archetype/core/error.hpp"
#include "archetype/io/gguf.hpp"
#include "archetype/io/gguf_writer.hpp"
#include "archetype/kernels/quant/blocks.hpp"
#include "archetype/kernels/quant/dequantize.hpp"
#include "archetype/kernels/quant/quantize.hpp"

namespace archetype::gguf {

/// llama_ftype value for a file whose weights are mostly `t` (general.file_type).
inline std::uint32_t file_type_of(ggml_type t) {
    switch (t) {
    case ggml_type::F32: return 0;
    case ggml_type::F16: return 1;
    case ggml_type::Q4_0: return 2;
    case ggml_type::Q4_1: return 3;
    case ggml_type::Q8_0: return 7;
    case ggml_type::Q5_0: return 8;
    case ggml_type::Q5_1: return 9;
    case ggml_type::Q6_K: return 18;
    case ggml_type::BF16: return 32;
    case ggml_type::Q2_K: return 10;
    case ggml_type::Q3_K: return 11;  // MOSTLY_Q3_K_S
    case ggml_type::MXFP4: return 38; // MOSTLY_MXFP4_MOE
    case ggml_type::IQ4_NL: return 25;
    case ggml_type::IQ4_XS: return 30;
    case ggml_type::Q1_0: return 40;
    case ggml_type::Q2_0: return 41;
    case ggml_type::TQ1_0: return 36;
    case ggml_type::TQ2_0: return 37;
    default:
        throw argument_error("no general.file_type for type " + std::string(type_name(t)));
    }
}

/// Whether llama.cpp's quantizer converts this tensor (llama-quant.cpp's rules):
/// a name ending in "weight", at least 2 dimensions of extent > 1, and none of the
/// tensors it keeps at full precision.
inline bool quantizable(const tensor_info& t) {
    const std::string_view n = t.name;
    if (n.size() < 6 || n.substr(n.size() - 6) != "weight") return false;
    std::size_t nd = t.ne.size();
    while (nd > 1 && t.ne[nd - 1] == 1) --nd; // ggml_n_dims
    if (nd < 2) return false;
    auto has = [&](std::string_view s) { return n.find(s) != std::string_view::npos; };
    static constexpr std::string_view keep[] = {
        "_norm.weight", "ffn_gate_inp.weight", "altup", "laurel", "per_layer_model_proj",
        "ssm_conv1d.weight", "shortconv.conv.weight", "time_mix_first.weight", "time_mix_w0.weight",
        "time_mix_w1.weight", "time_mix_w2.weight", "time_mix_v0.weight", "time_mix_v1.weight",
        "time_mix_v2.weight", "time_mix_a0.weight", "time_mix_a1.weight", "time_mix_a2.weight",
        "time_mix_g1.weight", "time_mix_g2.weight", "time_mix_decay_w1.weight",
        "time_mix_decay_w2.weight", "time_mix_lerp_fused.weight", "attn_rel_b.weight"};
    for (auto k : keep)
        if (has(k)) return false;
    return n != "position_embd.weight" && n != "token_types.weight";
}

struct quantize_report {
    std::size_t converted = 0, kept = 0;
    std::uint64_t bytes_in = 0, bytes_out = 0;
};

/// Converts `in` to `out` with weight matrices as `type`. `log` (optional) gets one
/// line per tensor. A matrix whose rows are not whole blocks of `type` is kept as
/// it is (llama.cpp falls back to another type there; keeping it loses nothing).
inline quantize_report quantize_file(const std::string& in, const std::string& out, ggml_type type,
                                     const std::function<void(const std::string&)>& log = {}) {
    if (!quant::can_quantize(type))
        throw argument_error("cannot quantise to " + std::string(type_name(type)));
    const auto src = file::open(in);
    writer w(static_cast<std::uint32_t>(src.alignment()));
    for (const auto& e : src.metadata()) w.set(e.key, e.value);
    w.set("general.file_type", file_type_of(type));
    w.set("general.quantization_version", std::uint32_t(2));

    quantize_report r;
    const std::size_t n_t = src.tensors().size();
    for (std::size_t i = 0; i < n_t; ++i) {
        const auto& t = src.tensors()[i];
        const auto bs = traits_of(type).block_size;
        // Sources this module cannot decode (IQ*, ...) are kept as they are.
        const bool convert = quantizable(t) && t.type != type && t.ne[0] % bs == 0 && quant::is_supported(t.type);
        const ggml_type to = convert ? type : t.type;
        r.bytes_in += t.n_bytes;
        if (!convert) {
            w.add_tensor(t.name, t.type, t.ne, t.data);
            ++r.kept;
            r.bytes_out += t.n_bytes;
        } else {
            const std::size_t cols = static_cast<std::size_t>(t.ne[0]);
            const std::size_t rows = static_cast<std::size_t>(t.n_elements() / t.ne[0]);
            const std::size_t in_row = cols / traits_of(t.type).block_size * traits_of(t.type).type_size;
            const std::size_t out_row = cols / bs * traits_of(type).type_size;
            w.add_tensor(t.name, type, t.ne, [=, &t](std::byte* dst, std::size_t n) {
                if (n != rows * out_row) throw format_error("quantize: size mismatch for '" + t.name + "'");
                std::vector<float> row(cols);
                for (std::size_t r0 = 0; r0 < rows; ++r0) {
                    quant::dequantize_row(t.type, t.data + r0 * in_row, row.data(), cols);
                    quant::quantize_row(type, row.data(), dst + r0 * out_row, cols);
                }
            });
            ++r.converted;
            r.bytes_out += rows * out_row;
        }
        if (log) {
            const auto& last = src.tensors()[i];
            // appended piece by piece: g++ 12 gives a false -Wrestrict on chained operator+
            std::string line = "[";
            line += std::to_string(i + 1);
            line += '/';
            line += std::to_string(n_t);
            line += "] ";
            line += last.name;
            line += ' ';
            line += last.shape_string();
            line += ' ';
            line += type_name(last.type);
            if (convert) {
                line += " -> ";
                line += type_name(to);
            } else {
                line += " (kept)";
            }
            log(line);
        }
    }
    w.write(out);
    return r;
}

} // namespace archetype::gguf
