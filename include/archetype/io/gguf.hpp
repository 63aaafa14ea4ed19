#pragma once
// GGUF reader (versions 2 and 3), memory-mapped, no copy of tensor data.
//
// A model file is hostile input. Opening a file walks and checks all of it
// before anything is returned: every length, count and offset is compared with
// the bytes that remain before it is used, so a count can never make us
// allocate or loop beyond what the file could hold; unknown type ids, nested
// arrays deeper than max_array_depth, n_dims > 4, dimension products that
// overflow 64 bits, bad alignments, misaligned or out-of-file tensor data,
// overlapping tensors, duplicate names and keys are all refused with a
// format_error naming the value. Metadata values are not copied: each entry
// keeps a view of its encoded bytes and is decoded on request (get<T>), so the
// index built at open costs a small constant per key and per tensor.
//
// Layout (all little-endian):
//   "GGUF" u32 version u64 n_tensors u64 n_kv
//   n_kv x { string key, u32 value_type, value }
//   n_tensors x { string name, u32 n_dims, u64 ne[n_dims], u32 ggml_type, u64 offset }
//   padding to `general.alignment` (default 32), then the data section;
//   string = u64 length + bytes; array = u32 element type + u64 count + elements.
#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <charconv>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "archetype/core/dtype.hpp"
#include "archetype/core/error.hpp"
#include "archetype/io/mapped_file.hpp"
#include "archetype/kernels/matmul.hpp"

namespace archetype::gguf {

static_assert(std::endian::native == std::endian::little,
              "the GGUF reader decodes little-endian files in place");

enum class value_type : std::uint32_t {
    UINT8 = 0, INT8 = 1, UINT16 = 2, INT16 = 3, UINT32 = 4, INT32 = 5, FLOAT32 = 6,
    BOOL = 7, STRING = 8, ARRAY = 9, UINT64 = 10, INT64 = 11, FLOAT64 = 12
};

inline constexpr std::uint32_t value_type_count = 13;
/// Deepest nesting of arrays accepted (an array of arrays has depth 2). llama.cpp
/// itself writes no nested arrays; the bound keeps recursion shallow.
inline constexpr int max_array_depth = 4;
/// GGML_MAX_DIMS.
inline constexpr std::uint32_t max_dims = 4;
inline constexpr std::uint32_t default_alignment = 32;
/// Largest general.alignment accepted: far above any real file (32), small enough
/// that padding can never be a meaningful share of a file.
inline constexpr std::uint64_t max_alignment = std::uint64_t(1) << 20;

inline constexpr std::string_view type_name(value_type t) noexcept {
    constexpr std::array<std::string_view, value_type_count> names = {
        "UINT8", "INT8", "UINT16", "INT16", "UINT32", "INT32", "FLOAT32",
        "BOOL", "STRING", "ARRAY", "UINT64", "INT64", "FLOAT64"};
    const auto i = static_cast<std::uint32_t>(t);
    return i < value_type_count ? names[i] : std::string_view("UNKNOWN");
}

/// Size in bytes of one scalar of type t; 0 for STRING and ARRAY (variable).
inline constexpr std::size_t scalar_size(value_type t) noexcept {
    switch (t) {
    case value_type::UINT8: case value_type::INT8: case value_type::BOOL: return 1;
    case value_type::UINT16: case value_type::INT16: return 2;
    case value_type::UINT32: case value_type::INT32: case value_type::FLOAT32: return 4;
    case value_type::UINT64: case value_type::INT64: case value_type::FLOAT64: return 8;
    default: return 0;
    }
}
inline constexpr bool is_integer(value_type t) noexcept {
    switch (t) {
    case value_type::UINT8: case value_type::INT8: case value_type::UINT16: case value_type::INT16:
    case value_type::UINT32: case value_type::INT32: case value_type::UINT64: case value_type::INT64:
        return true;
    default: return false;
    }
}
inline constexpr bool is_signed_integer(value_type t) noexcept {
    return t == value_type::INT8 || t == value_type::INT16 || t == value_type::INT32 ||
           t == value_type::INT64;
}

namespace detail {

/// Bounds-checked little-endian cursor over the file's bytes. Every read names
/// what it was reading when the bytes run out.
class cursor {
public:
    cursor(std::span<const std::byte> b, std::uint64_t pos = 0) : b_(b), pos_(pos) {}
    std::uint64_t pos() const noexcept { return pos_; }
    std::uint64_t remaining() const noexcept { return b_.size() - pos_; }
    const std::byte* here() const noexcept { return b_.data() + pos_; }

    void need(std::uint64_t n, std::string_view what) const {
        if (n > remaining())
            throw format_error("truncated file: " + std::string(what) + " at offset " +
                               std::to_string(pos_) + " needs " + std::to_string(n) +
                               " bytes, only " + std::to_string(remaining()) + " left");
    }
    void skip(std::uint64_t n, std::string_view what) {
        need(n, what);
        pos_ += n;
    }
    template <class T> T read(std::string_view what) {
        static_assert(std::is_trivially_copyable_v<T>);
        need(sizeof(T), what);
        T v;
        std::memcpy(&v, here(), sizeof(T));
        pos_ += sizeof(T);
        return v;
    }
    /// A GGUF string: u64 length then bytes, returned as a view into the file.
    std::string_view read_string(std::string_view what) {
        const auto n = read<std::uint64_t>(what);
        if (n > remaining())
            throw format_error("truncated file: " + std::string(what) + " at offset " +
                               std::to_string(pos_ - 8) + " has length " + std::to_string(n) +
                               ", only " + std::to_string(remaining()) + " bytes left");
        std::string_view s(reinterpret_cast<const char*>(here()), static_cast<std::size_t>(n));
        pos_ += n;
        return s;
    }

private:
    std::span<const std::byte> b_;
    std::uint64_t pos_;
};

inline value_type checked_value_type(std::uint32_t id, std::string_view ctx) {
    if (id >= value_type_count)
        throw format_error(std::string(ctx) + ": unknown value type id " + std::to_string(id));
    return static_cast<value_type>(id);
}

/// Walks one encoded value of type t (for ARRAY: header + elements), checking
/// bounds, type ids and depth. Cost is linear in the value's bytes: every element
/// has at least one byte, so a count can never make this loop longer than the file.
inline void skip_value(cursor& c, value_type t, int depth, std::string_view ctx) {
    if (const auto s = scalar_size(t)) {
        c.skip(s, ctx);
        return;
    }
    if (t == value_type::STRING) {
        c.read_string(ctx);
        return;
    }
    // ARRAY
    if (depth >= max_array_depth)
        throw format_error(std::string(ctx) + ": arrays nested deeper than " +
                           std::to_string(max_array_depth));
    const auto et = checked_value_type(c.read<std::uint32_t>(ctx), std::string(ctx) + " array element");
    const auto n = c.read<std::uint64_t>(ctx);
    // Smallest encoding of one element: a scalar's size, a string's length field,
    // an array's type + count header.
    const std::uint64_t min_elem = scalar_size(et) ? scalar_size(et)
                                   : et == value_type::STRING ? 8 : 12;
    if (n > c.remaining() / min_elem)
        throw format_error(std::string(ctx) + ": array count " + std::to_string(n) + " of " +
                           std::string(type_name(et)) + " exceeds the " +
                           std::to_string(c.remaining()) + " bytes left in the file");
    if (scalar_size(et)) {
        c.skip(n * min_elem, ctx);
        return;
    }
    for (std::uint64_t i = 0; i < n; ++i) skip_value(c, et, depth + 1, ctx);
}

template <class T> struct is_vector : std::false_type {};
template <class T, class A> struct is_vector<std::vector<T, A>> : std::true_type {};

template <class T> std::string type_label() {
    if constexpr (std::is_same_v<T, bool>) return "bool";
    else if constexpr (std::is_same_v<T, std::string>) return "string";
    else if constexpr (std::is_same_v<T, float>) return "float32";
    else if constexpr (std::is_same_v<T, double>) return "float64";
    else if constexpr (std::is_integral_v<T>)
        return std::string(std::is_signed_v<T> ? "int" : "uint") + std::to_string(sizeof(T) * 8);
    else if constexpr (is_vector<T>::value) return "array of " + type_label<typename T::value_type>();
    else static_assert(sizeof(T) == 0, "gguf get<T>: unsupported T");
}

template <class T> T load(const std::byte* p) {
    T v;
    std::memcpy(&v, p, sizeof(T));
    return v;
}

} // namespace detail

/// One metadata value, as a view of its encoded bytes inside the file. For an
/// ARRAY, `encoded` starts at the array header (element type, count).
struct value_ref {
    value_type type = value_type::UINT8;
    std::span<const std::byte> encoded;

    value_type element_type() const {
        return static_cast<value_type>(detail::load<std::uint32_t>(encoded.data()));
    }
    /// Number of elements of an ARRAY.
    std::uint64_t size() const { return detail::load<std::uint64_t>(encoded.data() + 4); }
    /// "UINT32", "ARRAY[STRING]", "ARRAY[ARRAY[INT32]]" ...
    std::string type_string() const {
        if (type != value_type::ARRAY) return std::string(type_name(type));
        std::string s = "ARRAY[";
        if (element_type() == value_type::ARRAY && size() > 0) {
            value_ref inner{value_type::ARRAY, encoded.subspan(12)};
            s += inner.type_string();
        } else {
            s += type_name(element_type());
        }
        return s + "]";
    }

    /// Decodes the value as T (see file::get); `key` names it in errors.
    template <class T> T as(std::string_view key) const {
        detail::cursor c(encoded);
        return decode<T>(c, type, key, -1);
    }

    /// A one-line rendering for people: strings quoted and escaped (cut after
    /// max_chars), arrays cut after max_items elements with their length.
    std::string to_string(std::size_t max_items = 8, std::size_t max_chars = 120) const {
        detail::cursor c(encoded);
        std::string out;
        render(c, type, out, max_items, max_chars);
        return out;
    }

private:
    [[noreturn]] static void wrong_type(std::string_view key, std::string found,
                                        const std::string& expected, std::int64_t index) {
        throw type_error("metadata key '" + std::string(key) + "'" +
                         (index >= 0 ? " element " + std::to_string(index) : std::string()) +
                         " has type " + found + ", expected " + expected);
    }

    template <class T>
    static T decode(detail::cursor& c, value_type t, std::string_view key, std::int64_t index) {
        if constexpr (std::is_same_v<T, bool>) {
            if (t != value_type::BOOL) wrong_type(key, std::string(type_name(t)), "bool", index);
            return c.read<std::uint8_t>("bool") != 0;
        } else if constexpr (std::is_integral_v<T>) {
            if (!is_integer(t)) wrong_type(key, found_name(c, t), detail::type_label<T>(), index);
            bool fits;
            std::string shown;
            T out{};
            if (is_signed_integer(t)) {
                const std::int64_t v = read_signed(c, t);
                fits = std::in_range<T>(v);
                out = static_cast<T>(v);
                shown = std::to_string(v);
            } else {
                const std::uint64_t v = read_unsigned(c, t);
                fits = std::in_range<T>(v);
                out = static_cast<T>(v);
                shown = std::to_string(v);
            }
            if (!fits)
                throw type_error("metadata key '" + std::string(key) + "'" +
                                 (index >= 0 ? " element " + std::to_string(index) : std::string()) +
                                 " value " + shown + " (" + std::string(type_name(t)) +
                                 ") does not fit in " + detail::type_label<T>());
            return out;
        } else if constexpr (std::is_floating_point_v<T>) {
            if (t == value_type::FLOAT32) return static_cast<T>(c.read<float>("float32"));
            if (t == value_type::FLOAT64) return static_cast<T>(c.read<double>("float64"));
            wrong_type(key, found_name(c, t), detail::type_label<T>(), index);
        } else if constexpr (std::is_same_v<T, std::string>) {
            if (t != value_type::STRING) wrong_type(key, found_name(c, t), "string", index);
            return std::string(c.read_string("string"));
        } else if constexpr (detail::is_vector<T>::value) {
            using E = typename T::value_type;
            if (t != value_type::ARRAY) wrong_type(key, std::string(type_name(t)), detail::type_label<T>(), index);
            const auto et = static_cast<value_type>(c.read<std::uint32_t>("array type"));
            const auto n = c.read<std::uint64_t>("array count");
            // Check the element type once up front so an empty array of the wrong
            // type is refused too (and the message names the array's type).
            if (!element_compatible<E>(et)) {
                value_ref self{value_type::ARRAY, {c.here() - 12, c.remaining() + 12}};
                wrong_type(key, self.type_string(), detail::type_label<T>(), index);
            }
            T out;
            // n was bounded by the remaining bytes when the file was opened.
            out.reserve(static_cast<std::size_t>(n));
            for (std::uint64_t i = 0; i < n; ++i)
                out.push_back(decode<E>(c, et, key, static_cast<std::int64_t>(i)));
            return out;
        } else {
            static_assert(sizeof(T) == 0, "gguf get<T>: unsupported T");
        }
    }

    template <class E> static bool element_compatible(value_type et) {
        if constexpr (std::is_same_v<E, bool>) return et == value_type::BOOL;
        else if constexpr (std::is_integral_v<E>) return is_integer(et);
        else if constexpr (std::is_floating_point_v<E>) return et == value_type::FLOAT32 || et == value_type::FLOAT64;
        else if constexpr (std::is_same_v<E, std::string>) return et == value_type::STRING;
        else return et == value_type::ARRAY;
    }

    static std::string found_name(const detail::cursor& c, value_type t) {
        if (t != value_type::ARRAY) return std::string(type_name(t));
        return value_ref{t, {c.here(), c.remaining()}}.type_string();
    }
    static std::int64_t read_signed(detail::cursor& c, value_type t) {
        switch (t) {
        case value_type::INT8: return c.read<std::int8_t>("int8");
        case value_type::INT16: return c.read<std::int16_t>("int16");
        case value_type::INT32: return c.read<std::int32_t>("int32");
        default: return c.read<std::int64_t>("int64");
        }
    }
    static std::uint64_t read_unsigned(detail::cursor& c, value_type t) {
        switch (t) {
        case value_type::UINT8: return c.read<std::uint8_t>("uint8");
        case value_type::UINT16: return c.read<std::uint16_t>("uint16");
        case value_type::UINT32: return c.read<std::uint32_t>("uint32");
        default: return c.read<std::uint64_t>("uint64");
        }
    }

    static void render_string(std::string_view s, std::string& out, std::size_t max_chars) {
        out += '"';
        const std::size_t n = std::min(s.size(), max_chars);
        for (std::size_t i = 0; i < n; ++i) {
            const auto ch = static_cast<unsigned char>(s[i]);
            if (ch == '"' || ch == '\\') { out += '\\'; out += char(ch); }
            else if (ch == '\n') out += "\\n";
            else if (ch == '\t') out += "\\t";
            else if (ch < 0x20 || ch == 0x7f) {
                constexpr char hex[] = "0123456789abcdef";
                out += "\\x";
                out += hex[ch >> 4];
                out += hex[ch & 15];
            } else out += char(ch);
        }
        out += '"';
        if (s.size() > n) out += "... (" + std::to_string(s.size()) + " bytes)";
    }
    template <class F> static void render_float(F v, std::string& out) {
        char buf[64];
        auto r = std::to_chars(buf, buf + sizeof buf, v);
        out.append(buf, r.ptr);
    }
    static void render(detail::cursor& c, value_type t, std::string& out, std::size_t max_items,
                       std::size_t max_chars) {
        switch (t) {
        case value_type::BOOL: out += c.read<std::uint8_t>("bool") ? "true" : "false"; return;
        case value_type::FLOAT32: render_float(c.read<float>("float32"), out); return;
        case value_type::FLOAT64: render_float(c.read<double>("float64"), out); return;
        case value_type::STRING: render_string(c.read_string("string"), out, max_chars); return;
        case value_type::ARRAY: {
            const auto et = static_cast<value_type>(c.read<std::uint32_t>("array type"));
            const auto n = c.read<std::uint64_t>("array count");
            out += '[';
            const std::uint64_t shown = std::min<std::uint64_t>(n, max_items);
            for (std::uint64_t i = 0; i < shown; ++i) {
                if (i) out += ", ";
                render(c, et, out, max_items, max_chars);
            }
            if (n > shown) out += ", ...";
            out += ']';
            if (n > shown) out += " (" + std::to_string(n) + " items)";
            return;
        }
        default:
            if (is_signed_integer(t)) out += std::to_string(read_signed(c, t));
            else out += std::to_string(read_unsigned(c, t));
        }
    }
};

struct metadata_entry {
    std::string_view key; // points into the file's bytes
    value_ref value;
};

struct tensor_info {
    std::string name;
    std::vector<std::uint64_t> ne; // GGUF order: ne[0] (innermost, contiguous) first
    ggml_type type = ggml_type::F32;
    std::uint64_t offset = 0;      // relative to the data section
    std::uint64_t n_bytes = 0;
    const std::byte* data = nullptr; // points into the mapping

    std::uint64_t n_elements() const {
        std::uint64_t n = 1;
        for (auto d : ne) n *= d; // checked against overflow when the file was read
        return n;
    }
    /// "[64, 128]" (ne[0] first, as gguf-py prints shapes).
    std::string shape_string() const {
        std::string s = "[";
        for (std::size_t i = 0; i < ne.size(); ++i) {
            if (i) s += ", ";
            s += std::to_string(ne[i]);
        }
        return s + "]";
    }
};

class file {
public:
    /// Maps `path` (read-only, MAP_PRIVATE) and validates it; tensor data is not copied.
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
    /// Parses bytes the caller keeps alive for the life of the returned file (no copy).
    static file from_memory(std::span<const std::byte> bytes) {
        file f;
        f.bytes_ = bytes;
        f.parse();
        return f;
    }

    /// Parses bytes it then owns (a file made in memory: io/rwkv_bin_gguf.hpp).
    static file from_owned_bytes(std::vector<std::byte> bytes) {
        auto owned = std::make_shared<const std::vector<std::byte>>(std::move(bytes));
        file f = from_memory(std::span<const std::byte>(owned->data(), owned->size()));
        f.owned_ = std::move(owned);
        return f;
    }

    /// io::mapped_file::release for a tensor's bytes (nothing for from_memory files).
    void release_pages(const std::byte* p, std::size_t n) const noexcept {
        if (map_) map_->release(p, n);
    }

    std::uint32_t version() const noexcept { return version_; }
    std::uint64_t alignment() const noexcept { return alignment_; }
    /// Offset of the data section from the start of the file.
    std::uint64_t data_offset() const noexcept { return data_offset_; }
    std::uint64_t size() const noexcept { return bytes_.size(); }
    std::span<const std::byte> bytes() const noexcept { return bytes_; }

    /// general.architecture, "" when absent (or not a string).
    std::string_view architecture() const {
        const auto* e = find("general.architecture");
        if (!e || e->value.type != value_type::STRING) return {};
        detail::cursor c(e->value.encoded);
        return c.read_string("general.architecture");
    }

    bool has(std::string_view key) const { return find(key) != nullptr; }

    /// Value of `key` as T: any integer type (converted when the value fits, else
    /// type_error naming key and value), float/double (from FLOAT32 or FLOAT64),
    /// bool, std::string, std::vector of those (also nested). Missing key:
    /// format_error "missing key 'K'". Wrong type: type_error naming the key, the
    /// expected and the found types.
    template <class T> T get(std::string_view key) const { return entry(key).value.template as<T>(key); }
    /// As get, but `fallback` when the key is absent (a present key of the wrong
    /// type is still an error: a wrong file should not silently take a default).
    template <class T> T get_or(std::string_view key, T fallback) const {
        const auto* e = find(key);
        return e ? e->value.template as<T>(key) : std::move(fallback);
    }
    value_type type_of(std::string_view key) const { return entry(key).value.type; }

    /// Metadata in file order (key, type, printable value via value.to_string()).
    const std::vector<metadata_entry>& metadata() const noexcept { return kv_; }
    /// The entry of `key`, or null. Every lookup (has, get, get_or, type_of, find) marks
    /// the key as read in the file's key ledger (io/key_ledger.hpp): a loader checks at
    /// the end that no key of the model went unread.
    const metadata_entry* find(std::string_view key) const {
        auto it = std::lower_bound(kv_sorted_.begin(), kv_sorted_.end(), key,
                                   [&](std::uint32_t i, std::string_view k) { return kv_[i].key < k; });
        if (it == kv_sorted_.end() || kv_[*it].key != key) return nullptr;
        read_.mark(*it);
        return &kv_[*it];
    }
    /// `s` with bytes outside printable ASCII as \\xNN (keys and names from a hostile file).
    static std::string printable_name(std::string_view s) { return printable(s); }
    /// Whether the entry at metadata()[i] has been looked up (the key ledger).
    bool was_read(std::size_t i) const noexcept { return read_.test(i); }
    const metadata_entry& entry(std::string_view key) const {
        const auto* e = find(key);
        if (!e) throw format_error("missing key '" + std::string(key) + "'");
        return *e;
    }

    const std::vector<tensor_info>& tensors() const noexcept { return tensors_; }
    const tensor_info* find_tensor(std::string_view name) const {
        auto it = std::lower_bound(t_sorted_.begin(), t_sorted_.end(), name,
                                   [&](std::uint32_t i, std::string_view k) { return tensors_[i].name < k; });
        return it != t_sorted_.end() && tensors_[*it].name == name ? &tensors_[*it] : nullptr;
    }
    const tensor_info& tensor(std::string_view name) const {
        const auto* t = find_tensor(name);
        if (!t) throw format_error("missing tensor '" + std::string(name) + "'");
        return *t;
    }

private:
    file() = default;

    void parse() {
        detail::cursor c(bytes_);
        c.need(4, "magic");
        if (std::memcmp(c.here(), "GGUF", 4) != 0) {
            std::string got;
            for (int i = 0; i < 4; ++i) {
                const auto ch = static_cast<unsigned char>(bytes_[static_cast<std::size_t>(i)]);
                got += (ch >= 0x20 && ch < 0x7f) ? std::string(1, char(ch)) : "\\x" + hex2(ch);
            }
            throw format_error("not a GGUF file: magic is '" + got + "', expected 'GGUF'");
        }
        c.skip(4, "magic");
        version_ = c.read<std::uint32_t>("version");
        if (version_ != 2 && version_ != 3) {
            if (version_ == 1)
                throw format_error("GGUF version 1 is not supported (versions 2 and 3 are)");
            // std::byteswap is C++23; a big-endian writer stores 2 as 0x02000000.
            const std::uint32_t swapped = (version_ >> 24) | ((version_ >> 8) & 0xff00u) |
                                          ((version_ << 8) & 0xff0000u) | (version_ << 24);
            if (swapped == 2 || swapped == 3)
                throw format_error("big-endian GGUF (version " + std::to_string(swapped) +
                                   ") is not supported");
            throw format_error("unsupported GGUF version " + std::to_string(version_));
        }
        const auto n_tensors = c.read<std::uint64_t>("tensor count");
        const auto n_kv = c.read<std::uint64_t>("metadata count");

        // Smallest metadata entry: empty key (8) + type (4) + one-byte value.
        if (n_kv > c.remaining() / 13)
            throw format_error("metadata count " + std::to_string(n_kv) + " exceeds what the " +
                               std::to_string(c.remaining()) + " bytes left in the file can hold");
        if (n_kv > std::numeric_limits<std::uint32_t>::max())
            throw format_error("metadata count " + std::to_string(n_kv) + " is too large");
        kv_.reserve(static_cast<std::size_t>(n_kv));
        for (std::uint64_t i = 0; i < n_kv; ++i) {
            const auto key = c.read_string("metadata key " + std::to_string(i));
            const std::string ctx = "metadata key '" + printable(key) + "'";
            const auto t = detail::checked_value_type(c.read<std::uint32_t>(ctx), ctx);
            const auto start = c.pos();
            detail::skip_value(c, t, 0, ctx);
            kv_.push_back({key, {t, bytes_.subspan(static_cast<std::size_t>(start),
                                                   static_cast<std::size_t>(c.pos() - start))}});
        }
        kv_sorted_ = sorted_index(kv_, [](const metadata_entry& e) { return e.key; });
        read_.resize(kv_.size());
        for (std::size_t i = 1; i < kv_sorted_.size(); ++i)
            if (kv_[kv_sorted_[i]].key == kv_[kv_sorted_[i - 1]].key)
                throw format_error("duplicate metadata key '" + printable(kv_[kv_sorted_[i]].key) + "'");

        alignment_ = default_alignment;
        if (const auto* e = find("general.alignment")) {
            if (!is_integer(e->value.type))
                throw format_error("general.alignment has type " + e->value.type_string() +
                                   ", expected UINT32");
            std::uint64_t a = 0;
            if (is_signed_integer(e->value.type)) {
                const auto s = e->value.as<std::int64_t>("general.alignment");
                if (s <= 0) throw format_error("general.alignment " + std::to_string(s) + " is not positive");
                a = static_cast<std::uint64_t>(s);
            } else {
                a = e->value.as<std::uint64_t>("general.alignment");
            }
            if (a == 0 || !std::has_single_bit(a) || a > max_alignment)
                throw format_error("general.alignment " + std::to_string(a) +
                                   " must be a power of two between 1 and " + std::to_string(max_alignment));
            alignment_ = a;
        }

        // Smallest tensor info: empty name (8) + n_dims (4) + type (4) + offset (8).
        if (n_tensors > c.remaining() / 24)
            throw format_error("tensor count " + std::to_string(n_tensors) + " exceeds what the " +
                               std::to_string(c.remaining()) + " bytes left in the file can hold");
        if (n_tensors > std::numeric_limits<std::uint32_t>::max())
            throw format_error("tensor count " + std::to_string(n_tensors) + " is too large");
        tensors_.reserve(static_cast<std::size_t>(n_tensors));
        for (std::uint64_t i = 0; i < n_tensors; ++i) tensors_.push_back(read_tensor_info(c, i));

        t_sorted_ = sorted_index(tensors_, [](const tensor_info& t) { return std::string_view(t.name); });
        for (std::size_t i = 1; i < t_sorted_.size(); ++i)
            if (tensors_[t_sorted_[i]].name == tensors_[t_sorted_[i - 1]].name)
                throw format_error("duplicate tensor name '" + printable(tensors_[t_sorted_[i]].name) + "'");

        // The data section starts at the next multiple of the alignment. A file
        // without tensor data may end before that padding.
        const std::uint64_t end = c.pos();
        data_offset_ = end + (alignment_ - end % alignment_) % alignment_;
        const std::uint64_t data_size = data_offset_ <= bytes_.size() ? bytes_.size() - data_offset_ : 0;
        for (auto& t : tensors_) {
            if (t.offset % alignment_ != 0)
                throw format_error("tensor '" + printable(t.name) + "' offset " + std::to_string(t.offset) +
                                   " is not a multiple of the alignment " + std::to_string(alignment_));
            if (t.offset > data_size || t.n_bytes > data_size - t.offset)
                throw format_error("tensor '" + printable(t.name) + "' data [" + std::to_string(t.offset) +
                                   ", +" + std::to_string(t.n_bytes) + ") lies beyond the end of the data section (" +
                                   std::to_string(data_size) + " bytes at file offset " +
                                   std::to_string(data_offset_) + ")");
            t.data = bytes_.data() + data_offset_ + t.offset;
        }
        // Tensors must not share bytes: a writer never produces that, and a model
        // that aliases two weights is either corrupt or an attack on later writes.
        std::vector<std::uint32_t> by_off(tensors_.size());
        for (std::uint32_t i = 0; i < by_off.size(); ++i) by_off[i] = i;
        std::sort(by_off.begin(), by_off.end(),
                  [&](std::uint32_t a, std::uint32_t b) { return tensors_[a].offset < tensors_[b].offset; });
        for (std::size_t i = 1; i < by_off.size(); ++i) {
            const auto& a = tensors_[by_off[i - 1]];
            const auto& b = tensors_[by_off[i]];
            if (a.n_bytes > 0 && b.n_bytes > 0 && a.offset + a.n_bytes > b.offset)
                throw format_error("tensor '" + printable(a.name) + "' data [" + std::to_string(a.offset) + ", " +
                                   std::to_string(a.offset + a.n_bytes) + ") overlaps tensor '" +
                                   printable(b.name) + "' at " + std::to_string(b.offset));
        }
    }

    tensor_info read_tensor_info(detail::cursor& c, std::uint64_t index) {
        tensor_info t;
        t.name = std::string(c.read_string("tensor info " + std::to_string(index) + " name"));
        const std::string ctx = "tensor '" + printable(t.name) + "'";
        const auto n_dims = c.read<std::uint32_t>(ctx + " n_dims");
        if (n_dims > max_dims)
            throw format_error(ctx + " has n_dims " + std::to_string(n_dims) + ", at most " +
                               std::to_string(max_dims) + " allowed");
        t.ne.resize(n_dims);
        std::uint64_t n_el = 1;
        for (std::uint32_t d = 0; d < n_dims; ++d) {
            const auto v = c.read<std::uint64_t>(ctx + " ne");
            // ggml stores ne as int64: larger values are negative there.
            constexpr auto imax = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
            if (v > imax)
                throw format_error(ctx + " ne[" + std::to_string(d) + "] = " + std::to_string(v) +
                                   " is out of range (negative as int64)");
            if (v != 0 && n_el > imax / v)
                throw format_error(ctx + " element count overflows 64 bits at ne[" + std::to_string(d) +
                                   "] = " + std::to_string(v));
            n_el *= v;
            t.ne[d] = v;
        }
        const auto type_id = c.read<std::uint32_t>(ctx + " type");
        const auto tr = traits_of(type_id);
        if (!tr) throw format_error(ctx + " has unknown type id " + std::to_string(type_id));
        t.type = static_cast<ggml_type>(type_id);
        const std::uint64_t ne0 = n_dims ? t.ne[0] : 1;
        if (ne0 % tr->block_size != 0)
            throw format_error(ctx + " ne[0] = " + std::to_string(ne0) + " is not a multiple of " +
                               std::string(tr->name) + "'s block size " + std::to_string(tr->block_size));
        const std::uint64_t n_blocks = n_el / tr->block_size;
        if (n_blocks > std::numeric_limits<std::uint64_t>::max() / tr->type_size)
            throw format_error(ctx + " byte size overflows 64 bits (" + std::to_string(n_el) + " elements of " +
                               std::string(tr->name) + ")");
        t.n_bytes = n_blocks * tr->type_size;
        t.offset = c.read<std::uint64_t>(ctx + " offset");
        return t;
    }

    template <class V, class Key> static std::vector<std::uint32_t> sorted_index(const V& v, Key key) {
        std::vector<std::uint32_t> idx(v.size());
        for (std::uint32_t i = 0; i < idx.size(); ++i) idx[i] = i;
        std::sort(idx.begin(), idx.end(), [&](std::uint32_t a, std::uint32_t b) { return key(v[a]) < key(v[b]); });
        return idx;
    }
    static std::string hex2(unsigned ch) {
        constexpr char h[] = "0123456789abcdef";
        return {h[(ch >> 4) & 15], h[ch & 15]};
    }
    /// Names from a hostile file are shown escaped and cut, so a message stays one line.
    static std::string printable(std::string_view s) {
        std::string out;
        const std::size_t n = std::min<std::size_t>(s.size(), 200);
        for (std::size_t i = 0; i < n; ++i) {
            const auto ch = static_cast<unsigned char>(s[i]);
            if (ch < 0x20 || ch == 0x7f) out += "\\x" + hex2(ch);
            else out += char(ch);
        }
        if (s.size() > n) out += "...";
        return out;
    }

    std::shared_ptr<const io::mapped_file> map_; // keeps the mapping alive (empty for from_memory)
    std::shared_ptr<const std::vector<std::byte>> owned_; // from_owned_bytes: the bytes themselves
    std::span<const std::byte> bytes_;
    std::uint32_t version_ = 0;
    std::uint64_t alignment_ = default_alignment;
    std::uint64_t data_offset_ = 0;
    std::vector<metadata_entry> kv_;
    std::vector<std::uint32_t> kv_sorted_;
    /// One flag per metadata entry: looked up or not. Relaxed atomics, as lookups are
    /// const and sessions on several threads may share one file; copies copy the flags.
    class read_flags {
    public:
        read_flags() = default;
        read_flags(const read_flags& o) { *this = o; }
        read_flags& operator=(const read_flags& o) {
            if (this != &o) {
                resize(o.n_);
                for (std::size_t i = 0; i < n_; ++i) f_[i].store(o.test(i), std::memory_order_relaxed);
            }
            return *this;
        }
        read_flags(read_flags&&) noexcept = default;
        read_flags& operator=(read_flags&&) noexcept = default;
        void resize(std::size_t n) {
            f_ = std::make_unique<std::atomic<bool>[]>(n);
            n_ = n;
        }
        void mark(std::size_t i) const noexcept {
            if (i < n_) f_[i].store(true, std::memory_order_relaxed);
        }
        bool test(std::size_t i) const noexcept { return i < n_ && f_[i].load(std::memory_order_relaxed); }

    private:
        std::unique_ptr<std::atomic<bool>[]> f_;
        std::size_t n_ = 0;
    };
    read_flags read_;
    std::vector<tensor_info> tensors_;
    std::vector<std::uint32_t> t_sorted_;
};

/// shape_error naming the tensor and its type when archetype has no kernel for that
/// type (a ggml type it can size but not dequantise or multiply: IQ2_XXS, ...).
inline void check_computable(const tensor_info& t) {
    if (quant::is_supported(t.type)) return;
    std::string known;
    for (std::uint32_t id = 0; id < archetype::detail::ggml_type_count; ++id)
        if (traits_of(id) && quant::is_supported(static_cast<ggml_type>(id)))
            known += (known.empty() ? "" : ", ") + std::string(type_name(static_cast<ggml_type>(id)));
    throw shape_error("tensor '" + t.name + "' is " + std::string(type_name(t.type)) +
                      ", a ggml type archetype cannot compute with (it reads " + known + ")");
}

/// A 2-D weight view of t (ne[0] = cols, ne[1] = rows); a 1-D tensor is one row.
/// Trailing dimensions of extent 1 are ignored ([64, 96, 1] is 2-D). Anything
/// else is a shape_error naming the tensor and its shape, and so is a type without
/// kernels (check_computable).
inline kernels::weight_view as_weight(const tensor_info& t) {
    check_computable(t);
    std::size_t nd = t.ne.size();
    while (nd > 2 && t.ne[nd - 1] == 1) --nd;
    if (nd == 0 || nd > 2)
        throw shape_error("tensor '" + t.name + "' has shape " + t.shape_string() +
                          ", a 1-D or 2-D weight was expected");
    kernels::weight_view w;
    w.type = t.type;
    w.data = t.data;
    w.cols = static_cast<std::size_t>(t.ne[0]);
    w.rows = nd == 2 ? static_cast<std::size_t>(t.ne[1]) : 1;
    return w;
}

} // namespace archetype::gguf
