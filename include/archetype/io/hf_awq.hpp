#pragma once
// AutoAWQ checkpoints ("AWQ GEMM", the TinyChat seed's int4 groups): what config.json's
// quantization_config says, and the repacking of one quantised linear into archetype's
// AWQ4 blocks (kernels/quant/blocks.hpp). hf::write_gguf (io/hf_checkpoint.hpp) calls
// both for the llama-layout families; docs/weights.md "AWQ (AutoAWQ GEMM) directories".
//
// The format (casper-hansen/AutoAWQ awq/modules/linear/gemm.py WQLinear_GEMM,
// awq/utils/packing_utils.py), for a linear of `in` inputs and `out` outputs in groups of
// G inputs:
//   <module>.qweight  I32 [in, out / 8]   bits 4i..4i+3 of qweight[k][c] hold the quant of
//                                         output 8c + order[i], order = {0,2,4,6,1,3,5,7}
//   <module>.qzeros   I32 [in / G, out / 8]  the zero points, packed the same way
//   <module>.scales   F16 [in / G, out]
//   W[n][k] = (q[k][n] − z[k / G][n]) · s[k / G][n]
// AWQ4 keeps, per 32 inputs of an output row, that row's s and z for the group (G is a
// multiple of 32) and the 32 quants: the values are the checkpoint's bit for bit
// (d·(q − z) is exact in float), no dequantised copy is made, and the bytes are 19/16 of
// the checkpoint's qweight.
//
// Everything here is hostile input: each key's type and value, each tensor's dtype and
// shape (against the shape the model's config gives the linear) are checked before a byte
// is read; the allocation is rows × in / 32 × 19 bytes of a shape so checked.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "archetype/core/dtype.hpp"
#include "archetype/core/error.hpp"
#include "archetype/io/safetensors.hpp"

namespace archetype::hf::awq {

/// quantization_config of an AutoAWQ GEMM checkpoint.
struct settings {
    std::int64_t group_size = 128;                   // inputs per (scale, zero) group; −1: all of a row's
    std::vector<std::string> modules_to_not_convert; // linears whose name contains one of these stay float

    /// Whether the linear `module` (e.g. "model.layers.0.mlp.down_proj") is quantised
    /// (AutoAWQ's test: no entry of modules_to_not_convert is a substring of its name).
    bool quantises(const std::string& module) const {
        for (const auto& m : modules_to_not_convert)
            if (module.find(m) != std::string::npos) return false;
        return true;
    }
    /// The group of a linear of `in` inputs (−1 = in).
    std::uint64_t group_of(std::uint64_t in) const { return group_size < 0 ? in : std::uint64_t(group_size); }
};

namespace detail {
inline std::string lower(std::string s) {
    for (auto& ch : s) ch = (ch >= 'A' && ch <= 'Z') ? char(ch - 'A' + 'a') : ch;
    return s;
}
inline const nlohmann::json* key(const nlohmann::json& q, std::initializer_list<const char*> names, std::string& which) {
    for (const char* n : names)
        if (q.contains(n) && !q[n].is_null()) {
            which = n;
            return &q[n];
        }
    return nullptr;
}
} // namespace detail

/// The AWQ settings of a config.json: nullopt without a quantization_config; a
/// format_error naming the key and value for anything but AutoAWQ's GEMM format with 4
/// bits, zero points and a group size that is a positive multiple of 32 (or −1).
inline std::optional<settings> read_settings(const nlohmann::json& config) {
    if (!config.contains("quantization_config") || config["quantization_config"].is_null()) return std::nullopt;
    const auto& q = config["quantization_config"];
    if (!q.is_object()) throw format_error("config.json 'quantization_config' is not an object");
    std::string which;
    const auto* method = detail::key(q, {"quant_method"}, which);
    if (!method || !method->is_string())
        throw format_error("config.json quantization_config has no quant_method string (archetype reads quant_method "
                           "'awq' with version 'gemm')");
    if (detail::lower(method->get<std::string>()) != "awq")
        throw format_error("config.json quantization_config.quant_method '" + method->get<std::string>() +
                           "' is not one archetype reads (it reads 'awq' with version 'gemm')");
    // version (AutoAWQ, transformers' AwqConfig) or format (older exports): both must say gemm
    bool saw_version = false;
    for (const char* k : {"version", "format"}) {
        if (!q.contains(k) || q[k].is_null()) continue;
        saw_version = true;
        if (!q[k].is_string() || detail::lower(q[k].get<std::string>()) != "gemm")
            throw format_error("config.json quantization_config." + std::string(k) + " " + q[k].dump() +
                               " is not one archetype reads (AWQ's 'gemm' layout only: 'gemv', 'exllama', "
                               "'ipex', 'marlin' pack differently)");
    }
    if (!saw_version)
        throw format_error("config.json quantization_config (awq) names no version or format: archetype reads 'gemm'");
    const auto* bits = detail::key(q, {"bits", "w_bit"}, which);
    if (!bits || !bits->is_number_integer() || bits->get<std::int64_t>() != 4)
        throw format_error("config.json quantization_config." + (bits ? which : std::string("bits")) + " " +
                           (bits ? bits->dump() : std::string("(missing)")) + ": AWQ GEMM is read with 4 bits only");
    const auto* zp = detail::key(q, {"zero_point"}, which);
    if (zp && (!zp->is_boolean() || !zp->get<bool>()))
        throw format_error("config.json quantization_config.zero_point " + zp->dump() +
                           ": archetype reads AWQ with zero points (zero_point true)");
    settings s;
    const auto* g = detail::key(q, {"group_size", "q_group_size"}, which);
    if (!g || !g->is_number_integer())
        throw format_error("config.json quantization_config.group_size " + (g ? g->dump() : std::string("(missing)")) +
                           " is not an integer");
    s.group_size = g->get<std::int64_t>();
    if (s.group_size != -1 && (s.group_size <= 0 || s.group_size % 32 != 0 || s.group_size > (std::int64_t(1) << 24)))
        throw format_error("config.json quantization_config." + which + " " + g->dump() +
                           " is not a positive multiple of 32 (or -1): archetype's AWQ blocks hold 32 inputs");
    if (q.contains("modules_to_not_convert") && !q["modules_to_not_convert"].is_null()) {
        const auto& m = q["modules_to_not_convert"];
        if (!m.is_array() || m.size() > 4096)
            throw format_error("config.json quantization_config.modules_to_not_convert is not a list of names");
        for (const auto& e : m) {
            if (!e.is_string() || e.get<std::string>().empty())
                throw format_error("config.json quantization_config.modules_to_not_convert entry " + e.dump() +
                                   " is not a non-empty name");
            s.modules_to_not_convert.push_back(e.get<std::string>());
        }
    }
    return s;
}

/// The three tensors of a quantised linear.
struct linear_tensors {
    const safetensors::tensor_info* qweight;
    const safetensors::tensor_info* qzeros;
    const safetensors::tensor_info* scales;
};

/// AWQ4 rows [out][in / 32 blocks] of linear `module` (out outputs, in inputs, from the
/// model's config), output row r taken from the checkpoint's output `src_of(r)` (llama's
/// q/k permutation; identity otherwise). Checks every tensor's dtype and shape first.
template <class SrcOf>
std::vector<std::byte> repack(const std::string& module, const linear_tensors& t, std::uint64_t out, std::uint64_t in,
                              const settings& s, const SrcOf& src_of) {
    const std::uint64_t G = s.group_of(in);
    if (G % 32 != 0 || in % G != 0)
        throw format_error("'" + module + "': group_size " + std::to_string(G) + " does not divide its " +
                           std::to_string(in) + " inputs in groups of a multiple of 32");
    if (out % 8 != 0)
        throw format_error("'" + module + "': " + std::to_string(out) + " outputs is not a multiple of 8 (AWQ packs 8 per int32)");
    auto check = [&](const safetensors::tensor_info& x, safetensors::dtype want, const char* want_name,
                     std::vector<std::uint64_t> shape) {
        if (x.type != want || x.shape != shape) {
            std::string got, exp;
            for (auto v : x.shape) got += (got.empty() ? "" : ", ") + std::to_string(v);
            for (auto v : shape) exp += (exp.empty() ? "" : ", ") + std::to_string(v);
            throw format_error("tensor '" + x.name + "' is " + std::string(safetensors::dtype_name(x.type)) + " [" + got +
                               "], AWQ GEMM needs " + want_name + " [" + exp + "] for " + std::to_string(out) +
                               " outputs, " + std::to_string(in) + " inputs, group_size " + std::to_string(G));
        }
    };
    check(*t.qweight, safetensors::dtype::I32, "I32", {in, out / 8});
    check(*t.qzeros, safetensors::dtype::I32, "I32", {in / G, out / 8});
    check(*t.scales, safetensors::dtype::F16, "F16", {in / G, out});

    static constexpr unsigned shift_of[8] = {0, 16, 4, 20, 8, 24, 12, 28}; // output 8c + o sits at bits shift_of[o]
    const std::uint64_t nb = in / 32, row_bytes = nb * 19;
    std::vector<std::uint32_t> dst_of(out, std::uint32_t(-1));
    for (std::uint64_t r = 0; r < out; ++r) {
        const std::uint64_t src = src_of(r);
        if (src >= out || dst_of[src] != std::uint32_t(-1))
            throw format_error("'" + module + "': the row order is not a permutation"); // a bug, not the file
        dst_of[src] = std::uint32_t(r);
    }
    std::vector<std::byte> buf(out * row_bytes);
    auto* dst = reinterpret_cast<std::uint8_t*>(buf.data());
    auto word = [](const safetensors::tensor_info& x, std::uint64_t i) {
        std::uint32_t v;
        std::memcpy(&v, x.data + 4 * i, 4);
        return v;
    };
    // scales and zero points: each block of a group gets its group's
    for (std::uint64_t g = 0; g < in / G; ++g)
        for (std::uint64_t n = 0; n < out; ++n) {
            const std::uint8_t z = (word(*t.qzeros, g * (out / 8) + n / 8) >> shift_of[n % 8]) & 15;
            std::uint16_t sc;
            std::memcpy(&sc, t.scales->data + 2 * (g * out + n), 2);
            for (std::uint64_t b = g * G / 32; b < (g + 1) * G / 32; ++b) {
                std::uint8_t* blk = dst + dst_of[n] * row_bytes + b * 19;
                std::memcpy(blk, &sc, 2);
                blk[2] = z;
            }
        }
    // quants: input k of output n -> nibble (k % 32 < 16: low, else high) of byte 3 + k % 16
    for (std::uint64_t k = 0; k < in; ++k) {
        const std::uint64_t b = k / 32, j = k % 32;
        const unsigned up = j < 16 ? 0 : 4;
        for (std::uint64_t c = 0; c < out / 8; ++c) {
            const std::uint32_t w = word(*t.qweight, k * (out / 8) + c);
            for (unsigned o = 0; o < 8; ++o) {
                const std::uint64_t n = 8 * c + o;
                dst[dst_of[n] * row_bytes + b * 19 + 3 + j % 16] |= std::uint8_t(((w >> shift_of[o]) & 15) << up);
            }
        }
    }
    return buf;
}

} // namespace archetype::hf::awq
