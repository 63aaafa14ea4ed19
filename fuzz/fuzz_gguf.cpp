// libFuzzer target for the GGUF reader: parse arbitrary bytes, then touch every
// metadata value (typed access and printing), every tensor info and the first and
// last byte of every tensor's data. A file that parses is copied through the
// writer and must parse again with the same tensors. Any crash, sanitizer report
// or escaped non-archetype exception is a bug.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "archetype/io/gguf.hpp"
#include "archetype/io/gguf_writer.hpp"

namespace gguf = archetype::gguf;

namespace {
volatile std::uint64_t sink;

template <class T> void try_get(const gguf::file& f, std::string_view key) {
    try {
        (void)f.get<T>(key);
    } catch (const archetype::error&) {
    }
}

void touch(const gguf::file& f) {
    std::uint64_t acc = f.version() + f.alignment() + f.data_offset() + f.architecture().size();
    for (const auto& e : f.metadata()) {
        acc += e.value.to_string().size() + e.value.type_string().size();
        try_get<std::uint8_t>(f, e.key);
        try_get<std::int64_t>(f, e.key);
        try_get<std::uint64_t>(f, e.key);
        try_get<double>(f, e.key);
        try_get<bool>(f, e.key);
        try_get<std::string>(f, e.key);
        try_get<std::vector<std::int32_t>>(f, e.key);
        try_get<std::vector<std::string>>(f, e.key);
        try_get<std::vector<std::vector<float>>>(f, e.key);
        acc += f.has(e.key) + static_cast<std::uint32_t>(f.type_of(e.key));
    }
    for (const auto& t : f.tensors()) {
        acc += t.n_elements() + t.n_bytes + t.offset + t.shape_string().size();
        if (t.n_bytes) acc += std::to_integer<unsigned>(t.data[0]) + std::to_integer<unsigned>(t.data[t.n_bytes - 1]);
        if (f.find_tensor(t.name) != &t) std::abort();
        try {
            acc += gguf::as_weight(t).row_bytes();
        } catch (const archetype::shape_error&) {
        }
    }
    sink = acc;
}
} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(data), size);
    std::optional<gguf::file> f;
    try {
        f.emplace(gguf::file::from_memory(bytes));
    } catch (const archetype::format_error&) {
        return 0;
    }
    touch(*f);

    // Round trip through the writer (skipped when the file's alignment key is
    // valid for the reader but not of the UINT32 type the writer insists on).
    std::vector<std::byte> copy;
    try {
        gguf::writer w(static_cast<std::uint32_t>(f->alignment()));
        for (const auto& e : f->metadata()) w.set(e.key, e.value);
        for (const auto& t : f->tensors()) w.add_tensor(t.name, t.type, t.ne, t.data);
        copy = w.write_to_memory();
    } catch (const archetype::argument_error&) {
        return 0;
    }
    const auto g = gguf::file::from_memory(copy); // must not throw
    if (g.tensors().size() != f->tensors().size() || g.metadata().size() != f->metadata().size()) std::abort();
    for (std::size_t i = 0; i < g.tensors().size(); ++i) {
        const auto& a = f->tensors()[i];
        const auto& b = g.tensors()[i];
        if (a.name != b.name || a.ne != b.ne || a.type != b.type || a.n_bytes != b.n_bytes ||
            (a.n_bytes && std::memcmp(a.data, b.data, a.n_bytes) != 0))
            std::abort();
    }
    return 0;
}
