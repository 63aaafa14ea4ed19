#pragma once
// safetensors reader (+ config.json), memory-mapped, no copy of tensor data.
//
// Layout: u64 little-endian N, N bytes of UTF-8 JSON (the header), then the
// data section. The header maps each tensor name to
//   {"dtype": "F32", "shape": [rows, cols], "data_offsets": [begin, end]}
// (offsets relative to the data section, shape outermost first: the reverse
// of GGUF's ne order), plus an optional "__metadata__" object of strings.
//
// A model file is hostile input; opening checks all of it before anything is
// returned, each failure a format_error naming the file and the value:
// N larger than the file or than max_header_bytes, JSON that does not parse or
// nests deeper than a header can, duplicate keys, a dtype we do not know,
// shapes that are not non-negative integers or whose byte size overflows 64
// bits, a byte range that does not match shape x dtype size, lies outside the
// data section or overlaps another tensor. JSON goes through nlohmann-json
// (Debian's nlohmann-json3-dev), never a hand-written parser.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>
#include <map>
#include <ostream>
#include <set>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "archetype/core/dtype.hpp"
#include "archetype/core/error.hpp"
#include "archetype/io/mapped_file.hpp"
#include "archetype/kernels/matmul.hpp"

namespace archetype::safetensors {

/// Header JSON larger than this is refused (the reference implementation's cap).
inline constexpr std::uint64_t max_header_bytes = std::uint64_t(100) << 20;
/// A header is an object of objects of arrays: deeper nesting is not a header.
inline constexpr int max_json_depth = 4;
/// Dimensions per tensor.
inline constexpr std::size_t max_dims = 8;

enum class dtype { BOOL, U8, I8, F8_E5M2, F8_E4M3, I16, U16, F16, BF16, I32, U32, F32, F64, I64, U64 };

struct dtype_info {
    dtype type;
    std::string_view name;
    std::size_t size; // bytes per element
};
inline constexpr dtype_info dtype_table[] = {
    {dtype::BOOL, "BOOL", 1}, {dtype::U8, "U8", 1},   {dtype::I8, "I8", 1},     {dtype::F8_E5M2, "F8_E5M2", 1},
    {dtype::F8_E4M3, "F8_E4M3", 1}, {dtype::I16, "I16", 2}, {dtype::U16, "U16", 2}, {dtype::F16, "F16", 2},
    {dtype::BF16, "BF16", 2}, {dtype::I32, "I32", 4}, {dtype::U32, "U32", 4}, {dtype::F32, "F32", 4},
    {dtype::F64, "F64", 8},   {dtype::I64, "I64", 8}, {dtype::U64, "U64", 8},
};

inline const dtype_info& info(dtype t) noexcept { return dtype_table[static_cast<std::size_t>(t)]; }
inline std::string_view dtype_name(dtype t) noexcept { return info(t).name; }
inline std::size_t dtype_size(dtype t) noexcept { return info(t).size; }
inline const dtype_info* dtype_from_name(std::string_view s) noexcept {
    for (const auto& d : dtype_table)
        if (d.name == s) return &d;
    return nullptr;
}

struct tensor_info {
    std::string name;
    dtype type = dtype::F32;
    std::vector<std::uint64_t> shape; // outermost first, as PyTorch / numpy
    std::uint64_t begin = 0, end = 0; // byte range within the data section
    const std::byte* data = nullptr;  // into the mapping
    std::size_t n_bytes() const noexcept { return static_cast<std::size_t>(end - begin); }
    std::uint64_t n_elements() const noexcept {
        std::uint64_t n = 1;
        for (auto d : shape) n *= d; // checked at open
        return n;
    }
    std::string shape_string() const {
        std::string s = "[";
        for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
        return s + "]";
    }
};

namespace detail {

// Refuses duplicate keys (nlohmann keeps the last one silently: a file could
// then mean two things) and nesting deeper than a header has.
struct header_guard {
    std::vector<std::set<std::string>> keys;
    bool operator()(int depth, nlohmann::json::parse_event_t ev, nlohmann::json& parsed) {
        using ev_t = nlohmann::json::parse_event_t;
        if (depth > max_json_depth)
            throw format_error("header JSON nests deeper than " + std::to_string(max_json_depth) + " levels");
        if (ev == ev_t::object_start) keys.emplace_back();
        else if (ev == ev_t::object_end && !keys.empty()) keys.pop_back();
        else if (ev == ev_t::key && !keys.empty()) {
            const auto& k = parsed.get_ref<const std::string&>();
            if (!keys.back().insert(k).second) throw format_error("duplicate key '" + k + "' in the header");
        }
        return true;
    }
};

inline std::uint64_t checked_mul(std::uint64_t a, std::uint64_t b, const std::string& what) {
    std::uint64_t r;
    if (__builtin_mul_overflow(a, b, &r)) throw format_error(what + " overflows 64 bits");
    return r;
}

} // namespace detail

class file {
public:
    /// Maps and checks `path`; format_error (message starts with the path) on any malformation.
    explicit file(const std::string& path) : map_(path) {
        try {
            parse();
        } catch (const format_error& e) {
            throw format_error("'" + path + "': " + e.what());
        }
    }

    const std::string& path() const noexcept { return map_.path(); }
    std::size_t header_bytes() const noexcept { return header_bytes_; }
    std::size_t data_offset() const noexcept { return 8 + header_bytes_; }
    std::size_t file_size() const noexcept { return map_.size(); }
    const std::vector<tensor_info>& tensors() const noexcept { return tensors_; }
    const std::map<std::string, std::string>& metadata() const noexcept { return metadata_; }

    const tensor_info* find(std::string_view name) const noexcept {
        for (const auto& t : tensors_)
            if (t.name == name) return &t;
        return nullptr;
    }
    /// The tensor called `name`; argument_error naming it when absent.
    const tensor_info& at(std::string_view name) const {
        if (const auto* t = find(name)) return *t;
        throw argument_error("'" + path() + "' has no tensor '" + std::string(name) + "'");
    }

private:
    void parse() {
        const std::size_t size = map_.size();
        if (size < 8) throw format_error("truncated: " + std::to_string(size) + " bytes, the 8-byte header length is missing");
        std::uint64_t n;
        std::memcpy(&n, map_.data(), 8); // little-endian, as x86
        if (n > size - 8)
            throw format_error("header length " + std::to_string(n) + " runs past the end of the file (" +
                               std::to_string(size - 8) + " bytes follow it)");
        if (n > max_header_bytes)
            throw format_error("header length " + std::to_string(n) + " exceeds the limit of " +
                               std::to_string(max_header_bytes));
        if (n < 2) throw format_error("header length " + std::to_string(n) + " cannot hold a JSON object");
        header_bytes_ = static_cast<std::size_t>(n);
        const auto* h = reinterpret_cast<const char*>(map_.data() + 8);
        if (h[0] != '{') throw format_error("header does not start with '{'");

        nlohmann::json j;
        try {
            j = nlohmann::json::parse(h, h + header_bytes_, detail::header_guard{});
        } catch (const nlohmann::json::exception& e) {
            throw format_error(std::string("header is not valid JSON: ") + e.what());
        }
        if (!j.is_object()) throw format_error("header is not a JSON object");

        const std::uint64_t data_size = size - 8 - n;
        for (auto it = j.begin(); it != j.end(); ++it) {
            const std::string& name = it.key();
            const auto& v = it.value();
            if (name == "__metadata__") {
                if (!v.is_object()) throw format_error("__metadata__ is not an object");
                for (auto m = v.begin(); m != v.end(); ++m) {
                    if (!m.value().is_string())
                        throw format_error("__metadata__ value of '" + m.key() + "' is not a string");
                    metadata_[m.key()] = m.value().get<std::string>();
                }
                continue;
            }
            tensors_.push_back(parse_tensor(name, v, data_size));
        }
        // Ranges sorted by start: each non-empty one must begin at or after the
        // furthest end of those before it (empty tensors occupy no bytes).
        std::vector<const tensor_info*> order;
        for (const auto& t : tensors_)
            if (t.end > t.begin) order.push_back(&t);
        std::sort(order.begin(), order.end(), [](const tensor_info* a, const tensor_info* b) {
            return a->begin != b->begin ? a->begin < b->begin : a->end < b->end;
        });
        const tensor_info* reach = nullptr; // the range ending furthest so far
        for (const auto* t : order) {
            if (reach && t->begin < reach->end)
                throw format_error("tensor '" + t->name + "' bytes [" + std::to_string(t->begin) + ", " +
                                   std::to_string(t->end) + ") overlap tensor '" + reach->name + "' bytes [" +
                                   std::to_string(reach->begin) + ", " + std::to_string(reach->end) + ")");
            if (!reach || t->end > reach->end) reach = t;
        }
        const std::byte* data = map_.data() + 8 + header_bytes_;
        for (auto& t : tensors_) t.data = data + t.begin;
    }

    static tensor_info parse_tensor(const std::string& name, const nlohmann::json& v, std::uint64_t data_size) {
        const std::string ctx = "tensor '" + name + "'";
        if (!v.is_object()) throw format_error(ctx + " is not an object");
        tensor_info t;
        t.name = name;
        const auto dt = v.find("dtype");
        if (dt == v.end() || !dt->is_string()) throw format_error(ctx + " has no dtype string");
        const auto* di = dtype_from_name(dt->get_ref<const std::string&>());
        if (!di) throw format_error(ctx + " has unknown dtype '" + dt->get<std::string>() + "'");
        t.type = di->type;
        const auto sh = v.find("shape");
        if (sh == v.end() || !sh->is_array()) throw format_error(ctx + " has no shape array");
        if (sh->size() > max_dims)
            throw format_error(ctx + " has " + std::to_string(sh->size()) + " dimensions (at most " +
                               std::to_string(max_dims) + ")");
        std::uint64_t n_bytes = di->size;
        for (const auto& d : *sh) {
            if (!d.is_number_unsigned()) throw format_error(ctx + " has shape entry " + d.dump() + ", not a non-negative integer");
            t.shape.push_back(d.get<std::uint64_t>());
            n_bytes = detail::checked_mul(n_bytes, t.shape.back(), ctx + " byte size");
        }
        const auto off = v.find("data_offsets");
        if (off == v.end() || !off->is_array() || off->size() != 2 || !(*off)[0].is_number_unsigned() ||
            !(*off)[1].is_number_unsigned())
            throw format_error(ctx + " data_offsets is not a pair of non-negative integers");
        t.begin = (*off)[0].get<std::uint64_t>();
        t.end = (*off)[1].get<std::uint64_t>();
        if (t.end < t.begin)
            throw format_error(ctx + " data_offsets [" + std::to_string(t.begin) + ", " + std::to_string(t.end) +
                               "] end before they begin");
        if (t.end > data_size)
            throw format_error(ctx + " data_offsets [" + std::to_string(t.begin) + ", " + std::to_string(t.end) +
                               "] lie outside the data section of " + std::to_string(data_size) + " bytes");
        if (t.end - t.begin != n_bytes)
            throw format_error(ctx + " shape " + t.shape_string() + " x " + std::string(di->name) + " is " +
                               std::to_string(n_bytes) + " bytes but data_offsets span " +
                               std::to_string(t.end - t.begin));
        return t;
    }

    io::mapped_file map_;
    std::size_t header_bytes_ = 0;
    std::vector<tensor_info> tensors_;
    std::map<std::string, std::string> metadata_;
};

/// The ggml storage type of a safetensors dtype that matmul can use directly.
inline ggml_type weight_type(const tensor_info& t) {
    switch (t.type) {
    case dtype::F32: return ggml_type::F32;
    case dtype::F16: return ggml_type::F16;
    case dtype::BF16: return ggml_type::BF16;
    default:
        throw shape_error("tensor '" + t.name + "' has dtype " + std::string(dtype_name(t.type)) +
                          ", a weight must be F32, F16 or BF16");
    }
}

/// A 2-D weight view of t: safetensors [rows, cols] (outermost first) is GGUF's
/// ne = [cols, rows]. A 1-D tensor is one row; leading dimensions of extent 1
/// are ignored. shape_error for other shapes or dtypes; format_error when the
/// data is not aligned to its element size (the kernels load whole elements).
inline kernels::weight_view as_weight(const tensor_info& t) {
    const ggml_type type = weight_type(t);
    std::size_t first = 0;
    while (t.shape.size() - first > 2 && t.shape[first] == 1) ++first;
    const std::size_t nd = t.shape.size() - first;
    if (nd == 0 || nd > 2)
        throw shape_error("tensor '" + t.name + "' has shape " + t.shape_string() +
                          ", a 1-D or 2-D weight was expected");
    const std::size_t es = dtype_size(t.type);
    if (reinterpret_cast<std::uintptr_t>(t.data) % es != 0)
        throw format_error("tensor '" + t.name + "' data is not aligned to its " + std::to_string(es) +
                           "-byte elements");
    kernels::weight_view w;
    w.type = type;
    w.data = t.data;
    w.cols = static_cast<std::size_t>(t.shape.back());
    w.rows = nd == 2 ? static_cast<std::size_t>(t.shape[first]) : 1;
    return w;
}

/// Human-readable summary (for `archetype inspect`): metadata, then one line per
/// tensor with dtype, shape outermost first, and GGUF's ne order beside it.
inline void print_safetensors_summary(std::ostream& os, const std::string& path) {
    const file f(path);
    os << "safetensors file: " << path << "\n"
       << "  header: " << f.header_bytes() << " bytes, data section: " << (f.file_size() - f.data_offset())
       << " bytes\n"
       << "metadata (" << f.metadata().size() << "):\n";
    for (const auto& [k, v] : f.metadata()) os << "  " << k << " = " << v << "\n";
    os << "tensors (" << f.tensors().size() << "), shape outermost first (ne = GGUF order):\n";
    std::vector<const tensor_info*> order;
    for (const auto& t : f.tensors()) order.push_back(&t);
    std::sort(order.begin(), order.end(), [](auto* a, auto* b) { return a->begin < b->begin; });
    for (const auto* t : order) {
        std::string ne = "[";
        for (std::size_t i = t->shape.size(); i-- > 0;) ne += std::to_string(t->shape[i]) + (i ? ", " : "");
        os << "  " << t->name << "  " << dtype_name(t->type) << "  " << t->shape_string() << "  (ne " << ne
           << "])  offset " << t->begin << "\n";
    }
}

/// A Hugging Face config.json: typed access with errors naming the key.
class config {
public:
    /// Largest config.json accepted (real ones are a few KB).
    static constexpr std::size_t max_bytes = std::size_t(16) << 20;

    explicit config(const std::string& path) : path_(path) {
        std::ifstream in(path, std::ios::binary);
        if (!in) throw io_error("cannot open '" + path + "'");
        in.seekg(0, std::ios::end);
        const auto len = in.tellg();
        if (len < 0 || static_cast<std::size_t>(len) > max_bytes)
            throw format_error("'" + path + "' is larger than " + std::to_string(max_bytes) + " bytes");
        in.seekg(0);
        std::string text(static_cast<std::size_t>(len), '\0');
        in.read(text.data(), len);
        try {
            j_ = nlohmann::json::parse(text);
        } catch (const nlohmann::json::exception& e) {
            throw format_error("'" + path + "' is not valid JSON: " + e.what());
        }
        if (!j_.is_object()) throw format_error("'" + path + "' is not a JSON object");
    }
    explicit config(nlohmann::json j, std::string name = "config") : path_(std::move(name)), j_(std::move(j)) {
        if (!j_.is_object()) throw format_error("'" + path_ + "' is not a JSON object");
    }

    bool has(const std::string& key) const { return j_.contains(key) && !j_.at(key).is_null(); }
    /// The value of `key` as T; argument_error when absent, type_error naming the key
    /// and both types when it holds something else.
    template <class T>
    T get(const std::string& key) const {
        if (!has(key)) throw argument_error("'" + path_ + "' has no key '" + key + "'");
        return convert<T>(key, j_.at(key));
    }
    template <class T>
    T get_or(const std::string& key, T fallback) const {
        return has(key) ? convert<T>(key, j_.at(key)) : fallback;
    }
    const nlohmann::json& json() const noexcept { return j_; }

private:
    template <class T>
    T convert(const std::string& key, const nlohmann::json& v) const {
        auto bad = [&](const char* want) {
            return type_error("'" + path_ + "' key '" + key + "': expected " + want + ", found " + v.type_name() +
                              " " + v.dump());
        };
        if constexpr (std::is_same_v<T, bool>) {
            if (!v.is_boolean()) throw bad("a boolean");
        } else if constexpr (std::is_integral_v<T>) {
            if (!v.is_number_integer()) throw bad("an integer");
            if constexpr (std::is_unsigned_v<T>) {
                if (!v.is_number_unsigned() || v.get<std::uint64_t>() > std::numeric_limits<T>::max())
                    throw bad("a non-negative integer in range");
            } else {
                const auto x = v.get<std::int64_t>();
                if (v.is_number_unsigned() ? v.get<std::uint64_t>() > std::uint64_t(std::numeric_limits<T>::max())
                                           : (x < std::numeric_limits<T>::min() || x > std::numeric_limits<T>::max()))
                    throw bad("an integer in range");
            }
        } else if constexpr (std::is_floating_point_v<T>) {
            if (!v.is_number()) throw bad("a number");
        } else if constexpr (std::is_same_v<T, std::string>) {
            if (!v.is_string()) throw bad("a string");
        }
        return v.get<T>();
    }

    std::string path_;
    nlohmann::json j_;
};

} // namespace archetype::safetensors
