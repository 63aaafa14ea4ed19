#pragma once
// Reader of rwkv.cpp's own model files (".bin", the format of rwkv.cpp's
// rwkv_file_format.inc / docs/FILE_FORMAT.md), memory-mapped, no copy.
//
// Layout, little-endian, no padding and no alignment:
//   i32 magic 0x67676d66 ('ggmf'), i32 version (100 or 101), i32 n_vocab,
//   i32 n_embed, i32 n_layer, i32 data_type
//   then tensor records until the end of the file:
//   i32 n_dims (1..3), i32 key_length, i32 data_type, i32 ne[n_dims] (ne[0] contiguous),
//   key bytes (UTF-8, no terminator), data (FP32: 4 bytes/element, FP16: 2).
// Only FP32 (0) and FP16 (1) tensors are accepted; rwkv.cpp's quantised types
// are refused with a message naming them. The file is hostile input: every count
// and size is checked against the bytes that remain before it is used.
// Tensor data may sit at any byte offset (the format has no alignment); callers
// that need aligned floats check `data` and copy when necessary.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "archetype/core/dtype.hpp"
#include "archetype/core/error.hpp"
#include "archetype/io/mapped_file.hpp"

namespace archetype::rwkv_bin {

inline constexpr std::uint32_t magic = 0x67676d66u; // "fmgg" on disk
inline constexpr std::size_t header_bytes = 24;
/// Sanity limits: far above any released RWKV model, far below what could
/// overflow the size arithmetic or allocate unboundedly.
inline constexpr std::int64_t max_dim = std::int64_t(1) << 32;
inline constexpr std::int32_t max_key_length = 4096;

/// rwkv.cpp's type ids, with names for messages.
inline std::string_view data_type_name(std::int32_t t) noexcept {
    switch (t) {
    case 0: return "FP32";
    case 1: return "FP16";
    case 2: return "Q4_0";
    case 3: return "Q4_1";
    case 4: return "Q4_1_O";
    case 5: return "Q4_2";
    case 6: return "Q4_3";
    case 7: return "Q5_0";
    case 8: return "Q5_1";
    case 9: return "Q8_0";
    default: return "unknown";
    }
}

struct header {
    std::uint32_t version = 0;
    std::size_t n_vocab = 0, n_embed = 0, n_layer = 0;
    std::int32_t data_type = 0;
};

struct tensor_info {
    std::string name;
    std::vector<std::uint64_t> ne; // ne[0] first (contiguous dimension)
    ggml_type type = ggml_type::F32;
    const std::byte* data = nullptr; // into the mapping; any alignment
    std::uint64_t n_bytes = 0;
    std::uint64_t offset = 0; // from the start of the file

    std::uint64_t n_elements() const {
        std::uint64_t n = 1;
        for (auto d : ne) n *= d;
        return n;
    }
    std::string shape_string() const {
        std::string s = "[";
        for (std::size_t i = 0; i < ne.size(); ++i) s += (i ? ", " : "") + std::to_string(ne[i]);
        return s + "]";
    }
};

/// True when the bytes start with the rwkv.cpp magic.
inline bool has_magic(std::span<const std::byte> b) noexcept {
    if (b.size() < 4) return false;
    std::uint32_t m;
    std::memcpy(&m, b.data(), 4);
    return m == magic;
}

class file {
public:
    /// Maps and validates `path`; errors name the path.
    static file open(const std::string& path) {
        auto m = std::make_shared<io::mapped_file>(path);
        file f;
        f.bytes_ = m->bytes();
        f.map_ = std::move(m);
        try {
            f.parse();
        } catch (const format_error& e) {
            throw format_error("'" + path + "': " + e.what());
        }
        return f;
    }
    /// Parses bytes the caller keeps alive (tests, in-memory models).
    static file from_memory(std::span<const std::byte> bytes) {
        file f;
        f.bytes_ = bytes;
        f.parse();
        return f;
    }

    const header& hdr() const noexcept { return hdr_; }
    const std::vector<tensor_info>& tensors() const noexcept { return tensors_; }
    const tensor_info* find_tensor(std::string_view name) const {
        const auto it = index_.find(std::string(name));
        return it == index_.end() ? nullptr : &tensors_[it->second];
    }
    const tensor_info& tensor(std::string_view name) const {
        if (const auto* t = find_tensor(name)) return *t;
        throw format_error("rwkv.cpp file has no tensor '" + std::string(name) + "'");
    }
    std::span<const std::byte> bytes() const noexcept { return bytes_; }

private:
    std::int32_t read_i32(std::size_t& pos, std::string_view what) const {
        if (bytes_.size() - pos < 4)
            throw format_error("truncated file: " + std::string(what) + " at offset " + std::to_string(pos) +
                               " needs 4 bytes, " + std::to_string(bytes_.size() - pos) + " remain");
        std::int32_t v;
        std::memcpy(&v, bytes_.data() + pos, 4);
        pos += 4;
        return v;
    }

    void parse() {
        if (bytes_.size() < header_bytes)
            throw format_error("file of " + std::to_string(bytes_.size()) + " bytes is shorter than the " +
                               std::to_string(header_bytes) + "-byte rwkv.cpp header");
        if (!has_magic(bytes_)) {
            std::uint32_t m;
            std::memcpy(&m, bytes_.data(), 4);
            char hex[11];
            std::snprintf(hex, sizeof hex, "0x%08x", m);
            throw format_error(std::string("bad magic ") + hex + " (an rwkv.cpp file starts with 0x67676d66)");
        }
        std::size_t pos = 4;
        const auto version = read_i32(pos, "version");
        if (version != 100 && version != 101)
            throw format_error("unsupported rwkv.cpp file version " + std::to_string(version) +
                               " (100 and 101 are known)");
        hdr_.version = static_cast<std::uint32_t>(version);
        const auto nv = read_i32(pos, "n_vocab"), ne = read_i32(pos, "n_embed"), nl = read_i32(pos, "n_layer");
        for (auto [v, what] : {std::pair{nv, "n_vocab"}, {ne, "n_embed"}, {nl, "n_layer"}})
            if (v <= 0) throw format_error(std::string("header ") + what + " = " + std::to_string(v) + " must be positive");
        hdr_.n_vocab = std::size_t(nv);
        hdr_.n_embed = std::size_t(ne);
        hdr_.n_layer = std::size_t(nl);
        hdr_.data_type = read_i32(pos, "data_type");
        if (hdr_.data_type != 0 && hdr_.data_type != 1)
            throw format_error("model data type " + std::to_string(hdr_.data_type) + " (" +
                               std::string(data_type_name(hdr_.data_type)) +
                               ") is not supported: only FP32 (0) and FP16 (1) rwkv.cpp files are");
        while (pos < bytes_.size()) read_tensor(pos);
    }

    void read_tensor(std::size_t& pos) {
        const std::size_t start = pos;
        const std::string ctx = "tensor record at offset " + std::to_string(start);
        const auto n_dims = read_i32(pos, ctx + " n_dims");
        const auto key_len = read_i32(pos, ctx + " key length");
        const auto dtype = read_i32(pos, ctx + " data type");
        if (n_dims < 1 || n_dims > 3)
            throw format_error(ctx + ": n_dims " + std::to_string(n_dims) + " outside 1..3");
        if (key_len < 1 || key_len > max_key_length)
            throw format_error(ctx + ": key length " + std::to_string(key_len) + " outside 1.." +
                               std::to_string(max_key_length));
        tensor_info t;
        for (int d = 0; d < n_dims; ++d) {
            const auto v = read_i32(pos, ctx + " ne");
            if (v <= 0) throw format_error(ctx + ": dimension " + std::to_string(d) + " = " + std::to_string(v) + " must be positive");
            t.ne.push_back(std::uint64_t(v));
        }
        if (bytes_.size() - pos < std::size_t(key_len))
            throw format_error("truncated file: " + ctx + " name of " + std::to_string(key_len) +
                               " bytes, " + std::to_string(bytes_.size() - pos) + " remain");
        t.name.assign(reinterpret_cast<const char*>(bytes_.data() + pos), std::size_t(key_len));
        pos += std::size_t(key_len);
        const std::string tctx = "tensor '" + printable(t.name) + "'";
        if (dtype != 0 && dtype != 1)
            throw format_error(tctx + " has data type " + std::to_string(dtype) + " (" +
                               std::string(data_type_name(dtype)) + "): only FP32 and FP16 are supported");
        t.type = dtype == 0 ? ggml_type::F32 : ggml_type::F16;
        const std::uint64_t esize = dtype == 0 ? 4 : 2;
        // each ne < 2^31 and at most 3 of them: the product fits in 64 bits only
        // if checked step by step against what remains
        const std::uint64_t remain = bytes_.size() - pos;
        std::uint64_t n = esize;
        for (auto d : t.ne) {
            if (d > remain / n + 1 || n * d > remain)
                throw format_error(tctx + " of shape " + t.shape_string() + " (" + std::string(data_type_name(dtype)) +
                                   ") is larger than the " + std::to_string(remain) + " bytes left in the file");
            n *= d;
        }
        t.n_bytes = n;
        t.offset = pos;
        t.data = bytes_.data() + pos;
        pos += std::size_t(n);
        if (index_.count(t.name)) throw format_error("duplicate " + tctx);
        index_.emplace(t.name, tensors_.size());
        tensors_.push_back(std::move(t));
    }

    static std::string printable(std::string_view s) {
        std::string out;
        const std::size_t n = std::min<std::size_t>(s.size(), 200);
        for (std::size_t i = 0; i < n; ++i) {
            const auto ch = static_cast<unsigned char>(s[i]);
            if (ch < 0x20 || ch == 0x7f) {
                char buf[5];
                std::snprintf(buf, sizeof buf, "\\x%02x", ch);
                out += buf;
            } else {
                out += char(ch);
            }
        }
        if (s.size() > n) out += "...";
        return out;
    }

    std::shared_ptr<const io::mapped_file> map_;
    std::span<const std::byte> bytes_;
    header hdr_;
    std::vector<tensor_info> tensors_;
    std::unordered_map<std::string, std::size_t> index_;
};

} // namespace archetype::rwkv_bin
