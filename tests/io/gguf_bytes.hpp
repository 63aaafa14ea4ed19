#pragma once
// A tiny builder of raw GGUF bytes for tests: it writes exactly what it is told,
// including the malformed values a hostile file would carry (the writer in
// io/gguf_writer.hpp refuses to produce those).
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <span>
#include <string_view>
#include <vector>

namespace archetype::test {

struct gguf_bytes {
    std::vector<std::byte> b;

    template <class T> gguf_bytes& pod(T v) {
        const auto* p = reinterpret_cast<const std::byte*>(&v);
        b.insert(b.end(), p, p + sizeof v);
        return *this;
    }
    gguf_bytes& u8(std::uint8_t v) { return pod(v); }
    gguf_bytes& u32(std::uint32_t v) { return pod(v); }
    gguf_bytes& i32(std::int32_t v) { return pod(v); }
    gguf_bytes& u64(std::uint64_t v) { return pod(v); }
    gguf_bytes& f32(float v) { return pod(v); }
    gguf_bytes& raw(std::string_view s) {
        for (char c : s) b.push_back(static_cast<std::byte>(c));
        return *this;
    }
    gguf_bytes& str(std::string_view s) { return u64(s.size()).raw(s); }
    gguf_bytes& header(std::uint64_t n_tensors, std::uint64_t n_kv, std::uint32_t version = 3) {
        return raw("GGUF").u32(version).u64(n_tensors).u64(n_kv);
    }
    // key + type id; the value follows
    gguf_bytes& key(std::string_view k, std::uint32_t type) { return str(k).u32(type); }
    gguf_bytes& kv_u32(std::string_view k, std::uint32_t v) { return key(k, 4).u32(v); }
    gguf_bytes& kv_str(std::string_view k, std::string_view v) { return key(k, 8).str(v); }
    gguf_bytes& tensor(std::string_view name, std::initializer_list<std::uint64_t> ne, std::uint32_t type,
                       std::uint64_t offset) {
        str(name).u32(static_cast<std::uint32_t>(ne.size()));
        for (auto d : ne) u64(d);
        return u32(type).u64(offset);
    }
    gguf_bytes& pad(std::size_t align = 32) {
        while (b.size() % align) b.push_back(std::byte{0});
        return *this;
    }
    gguf_bytes& fill(std::size_t n, std::uint8_t v = 0) {
        b.insert(b.end(), n, std::byte{v});
        return *this;
    }
    std::span<const std::byte> span() const { return b; }
};

} // namespace archetype::test
