#pragma once
// GGUF v3 writer: metadata of every type (arrays, nested arrays), tensors of any
// ggml type, aligned data. Files it writes read back bit-exactly with
// gguf::file and with llama.cpp.
//
//   gguf::writer w;
//   w.set("general.architecture", "llama");
//   w.set("llama.block_count", std::uint32_t(30));
//   w.add_tensor("token_embd.weight", ggml_type::F32, {576, 49152}, ptr);   // referenced
//   w.add_tensor("output_norm.weight", ggml_type::F32, {576}, std::move(v)); // moved in
//   w.add_tensor("blk.0.ffn_up.weight", ggml_type::F16, {576, 1536},
//                [&](std::byte* dst, std::size_t n) { ... });              // filled at write time
//   w.write("model.gguf");
//
// Tensor data is referenced (raw pointer, span, lvalue vector: keep it alive until
// write), moved in (rvalue vector) or produced by a callback at write time, one
// tensor at a time: a multi-GB model is never held twice in memory.
#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "archetype/core/dtype.hpp"
#include "archetype/core/error.hpp"
#include "archetype/io/gguf.hpp"

namespace archetype::gguf {

class writer {
public:
    /// Fills `n_bytes` at dst with a tensor's encoded data (called once, at write time).
    using fill_fn = std::function<void(std::byte* dst, std::size_t n_bytes)>;

    explicit writer(std::uint32_t alignment = default_alignment) : alignment_(alignment) {
        if (alignment == 0 || !std::has_single_bit(alignment) || alignment > max_alignment)
            throw argument_error("gguf writer: alignment " + std::to_string(alignment) +
                                 " must be a power of two between 1 and " + std::to_string(max_alignment));
    }

    // ---- metadata -------------------------------------------------------------
    /// Sets `key` (replacing an earlier value, which keeps its place in the file).
    /// T: an integer type (written with its own width and signedness), bool, float
    /// (FLOAT32), double (FLOAT64), a string, or a std::vector of those (ARRAY,
    /// nested vectors give nested arrays).
    template <class T> void set(std::string_view key, const T& value) {
        std::vector<std::byte> enc;
        const value_type t = encode(enc, value);
        put(key, t, std::move(enc));
    }
    void set(std::string_view key, const char* value) { set(key, std::string_view(value)); }
    /// Copies a value read from another file unchanged (any type).
    void set(std::string_view key, const value_ref& v) {
        put(key, v.type, std::vector<std::byte>(v.encoded.begin(), v.encoded.end()));
    }
    void erase(std::string_view key) {
        std::erase_if(kv_, [&](const kv& e) { return e.key == key; });
    }
    bool has(std::string_view key) const {
        return std::any_of(kv_.begin(), kv_.end(), [&](const kv& e) { return e.key == key; });
    }

    // ---- tensors --------------------------------------------------------------
    /// Referenced: `data` must hold the tensor's bytes until write().
    void add_tensor(std::string_view name, ggml_type type, std::vector<std::uint64_t> ne, const void* data) {
        auto& t = add_info(name, type, std::move(ne));
        t.ref = static_cast<const std::byte*>(data);
    }
    /// Referenced; its size must equal the tensor's byte size.
    void add_tensor(std::string_view name, ggml_type type, std::vector<std::uint64_t> ne,
                    std::span<const std::byte> data) {
        auto& t = add_info(name, type, std::move(ne));
        check_size(t, data.size());
        t.ref = data.data();
    }
    /// Referenced: keep the data alive until write().
    template <class T>
    void add_tensor(std::string_view name, ggml_type type, std::vector<std::uint64_t> ne, std::span<T> s) {
        static_assert(std::is_trivially_copyable_v<T>);
        add_tensor(name, type, std::move(ne), std::as_bytes(s));
    }
    /// Referenced: keep `v` alive until write().
    template <class T>
    void add_tensor(std::string_view name, ggml_type type, std::vector<std::uint64_t> ne, const std::vector<T>& v) {
        static_assert(std::is_trivially_copyable_v<T>);
        add_tensor(name, type, std::move(ne), std::as_bytes(std::span<const T>(v)));
    }
    /// Moved in: the writer owns the data.
    template <class T>
    void add_tensor(std::string_view name, ggml_type type, std::vector<std::uint64_t> ne, std::vector<T>&& v) {
        static_assert(std::is_trivially_copyable_v<T>);
        auto& t = add_info(name, type, std::move(ne));
        check_size(t, v.size() * sizeof(T));
        auto owned = std::make_shared<std::vector<T>>(std::move(v));
        t.ref = reinterpret_cast<const std::byte*>(owned->data());
        t.keep = std::move(owned);
    }
    /// Produced at write time by `fill` (streaming: one tensor buffer at a time).
    void add_tensor(std::string_view name, ggml_type type, std::vector<std::uint64_t> ne, fill_fn fill) {
        auto& t = add_info(name, type, std::move(ne));
        t.fill = std::move(fill);
    }

    std::size_t n_tensors() const noexcept { return tensors_.size(); }

    // ---- output ---------------------------------------------------------------
    /// Writes the file (io_error naming the path when the OS refuses).
    void write(const std::string& path) const {
        std::unique_ptr<std::FILE, int (*)(std::FILE*)> f(std::fopen(path.c_str(), "wb"), &std::fclose);
        if (!f) throw io_error("cannot create '" + path + "': " + std::strerror(errno));
        emit([&](const void* p, std::size_t n) {
            if (n && std::fwrite(p, 1, n, f.get()) != n)
                throw io_error("cannot write '" + path + "': " + std::strerror(errno));
        });
        std::FILE* raw = f.release();
        if (std::fclose(raw) != 0) throw io_error("cannot write '" + path + "': " + std::strerror(errno));
    }
    std::vector<std::byte> write_to_memory() const {
        std::vector<std::byte> out;
        emit([&](const void* p, std::size_t n) {
            const auto* b = static_cast<const std::byte*>(p);
            out.insert(out.end(), b, b + n);
        });
        return out;
    }

private:
    struct kv {
        std::string key;
        value_type type;
        std::vector<std::byte> enc;
    };
    struct tensor {
        std::string name;
        ggml_type type;
        std::vector<std::uint64_t> ne;
        std::uint64_t n_bytes = 0;
        std::uint64_t offset = 0;
        const std::byte* ref = nullptr;
        std::shared_ptr<void> keep;
        fill_fn fill;
    };

    static void append(std::vector<std::byte>& out, const void* p, std::size_t n) {
        const auto* b = static_cast<const std::byte*>(p);
        out.insert(out.end(), b, b + n);
    }
    template <class T> static void append_pod(std::vector<std::byte>& out, T v) { append(out, &v, sizeof v); }
    static void append_string(std::vector<std::byte>& out, std::string_view s) {
        append_pod<std::uint64_t>(out, s.size());
        append(out, s.data(), s.size());
    }

    template <class T> static constexpr value_type scalar_type() {
        static_assert(!std::is_same_v<T, char>, "gguf writer: cast char to std::int8_t or std::uint8_t");
        if constexpr (std::is_same_v<T, bool>) return value_type::BOOL;
        else if constexpr (std::is_same_v<T, float>) return value_type::FLOAT32;
        else if constexpr (std::is_same_v<T, double>) return value_type::FLOAT64;
        else if constexpr (std::is_integral_v<T> && std::is_signed_v<T>) {
            constexpr value_type s[] = {value_type::INT8, value_type::INT16, value_type::INT32, value_type::INT64};
            return s[std::bit_width(sizeof(T)) - 1];
        } else if constexpr (std::is_integral_v<T>) {
            constexpr value_type u[] = {value_type::UINT8, value_type::UINT16, value_type::UINT32, value_type::UINT64};
            return u[std::bit_width(sizeof(T)) - 1];
        } else static_assert(sizeof(T) == 0, "gguf writer: unsupported metadata type");
    }
    template <class T> static constexpr bool is_string_like =
        std::is_convertible_v<const T&, std::string_view>;

    /// Appends the encoding of v, returns its GGUF type.
    template <class T> static value_type encode(std::vector<std::byte>& out, const T& v) {
        if constexpr (is_string_like<T>) {
            append_string(out, std::string_view(v));
            return value_type::STRING;
        } else if constexpr (detail::is_vector<T>::value) {
            using E = typename T::value_type;
            value_type et;
            if constexpr (is_string_like<E>) et = value_type::STRING;
            else if constexpr (detail::is_vector<E>::value) et = value_type::ARRAY;
            else et = scalar_type<E>();
            append_pod<std::uint32_t>(out, static_cast<std::uint32_t>(et));
            append_pod<std::uint64_t>(out, v.size());
            for (const auto& e : v) {
                if constexpr (std::is_same_v<E, bool>) append_pod<std::uint8_t>(out, e ? 1 : 0);
                else encode(out, static_cast<const E&>(e));
            }
            return value_type::ARRAY;
        } else if constexpr (std::is_same_v<T, bool>) {
            append_pod<std::uint8_t>(out, v ? 1 : 0);
            return value_type::BOOL;
        } else {
            constexpr value_type t = scalar_type<T>();
            append_pod<T>(out, v);
            return t;
        }
    }

    void put(std::string_view key, value_type t, std::vector<std::byte> enc) {
        for (auto& e : kv_)
            if (e.key == key) {
                e.type = t;
                e.enc = std::move(enc);
                return;
            }
        kv_.push_back({std::string(key), t, std::move(enc)});
    }

    tensor& add_info(std::string_view name, ggml_type type, std::vector<std::uint64_t> ne) {
        const std::string ctx = "gguf writer: tensor '" + std::string(name) + "'";
        for (const auto& t : tensors_)
            if (t.name == name) throw argument_error(ctx + " added twice");
        if (ne.size() > max_dims)
            throw argument_error(ctx + " has " + std::to_string(ne.size()) + " dimensions, at most 4 allowed");
        const auto tr = traits_of(static_cast<std::uint32_t>(type));
        if (!tr) throw argument_error(ctx + " has unknown type id " + std::to_string(std::uint32_t(type)));
        std::uint64_t n = 1;
        for (auto d : ne) {
            if (d != 0 && n > std::uint64_t(INT64_MAX) / d)
                throw argument_error(ctx + " element count overflows 64 bits");
            n *= d;
        }
        const std::uint64_t ne0 = ne.empty() ? 1 : ne[0];
        if (ne0 % tr->block_size != 0)
            throw argument_error(ctx + " ne[0] = " + std::to_string(ne0) + " is not a multiple of " +
                                 std::string(tr->name) + "'s block size " + std::to_string(tr->block_size));
        tensor t;
        t.name = std::string(name);
        t.type = type;
        t.ne = std::move(ne);
        t.n_bytes = n / tr->block_size * tr->type_size;
        t.offset = next_offset_;
        next_offset_ = align(t.offset + t.n_bytes);
        tensors_.push_back(std::move(t));
        return tensors_.back();
    }
    static void check_size(const tensor& t, std::size_t n) {
        if (n != t.n_bytes)
            throw argument_error("gguf writer: tensor '" + t.name + "' needs " + std::to_string(t.n_bytes) +
                                 " bytes of " + std::string(type_name(t.type)) + ", " + std::to_string(n) +
                                 " given");
    }
    std::uint64_t align(std::uint64_t x) const { return (x + alignment_ - 1) / alignment_ * alignment_; }

    template <class Sink> void emit(Sink&& sink) const {
        std::vector<std::byte> head;
        append(head, "GGUF", 4);
        append_pod<std::uint32_t>(head, 3);
        append_pod<std::uint64_t>(head, tensors_.size());
        const bool add_alignment = alignment_ != default_alignment && !has("general.alignment");
        append_pod<std::uint64_t>(head, kv_.size() + (add_alignment ? 1 : 0));
        for (const auto& e : kv_) {
            if (e.key == "general.alignment" &&
                (e.type != value_type::UINT32 || detail::load<std::uint32_t>(e.enc.data()) != alignment_))
                throw argument_error("gguf writer: general.alignment must be the UINT32 " +
                                     std::to_string(alignment_) + " given to the writer");
            append_string(head, e.key);
            append_pod<std::uint32_t>(head, static_cast<std::uint32_t>(e.type));
            append(head, e.enc.data(), e.enc.size());
        }
        if (add_alignment) {
            append_string(head, "general.alignment");
            append_pod<std::uint32_t>(head, static_cast<std::uint32_t>(value_type::UINT32));
            append_pod<std::uint32_t>(head, alignment_);
        }
        for (const auto& t : tensors_) {
            append_string(head, t.name);
            append_pod<std::uint32_t>(head, static_cast<std::uint32_t>(t.ne.size()));
            for (auto d : t.ne) append_pod<std::uint64_t>(head, d);
            append_pod<std::uint32_t>(head, static_cast<std::uint32_t>(t.type));
            append_pod<std::uint64_t>(head, t.offset);
        }
        head.resize(static_cast<std::size_t>(align(head.size())));
        sink(head.data(), head.size());

        const std::vector<std::byte> zeros(alignment_);
        std::vector<std::byte> buf;
        std::uint64_t pos = 0;
        for (const auto& t : tensors_) {
            sink(zeros.data(), static_cast<std::size_t>(t.offset - pos));
            const auto n = static_cast<std::size_t>(t.n_bytes);
            if (t.fill) {
                if (n == 0) { pos = t.offset; continue; } // nothing to produce, no buffer to hand out
                buf.assign(n, std::byte{0});
                t.fill(buf.data(), n);
                sink(buf.data(), n);
                std::vector<std::byte>().swap(buf); // give the memory back between tensors
            } else {
                if (!t.ref && n) throw argument_error("gguf writer: tensor '" + t.name + "' has no data");
                sink(t.ref, n);
            }
            pos = t.offset + t.n_bytes;
        }
        // Pad the data section to the alignment, as llama.cpp does.
        sink(zeros.data(), static_cast<std::size_t>(align(pos) - pos));
    }

    std::uint32_t alignment_;
    std::vector<kv> kv_;
    std::vector<tensor> tensors_;
    std::uint64_t next_offset_ = 0;
};

} // namespace archetype::gguf
