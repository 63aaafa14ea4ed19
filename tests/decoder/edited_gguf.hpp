#pragma once
// A copy of a GGUF file with an edit applied (keys set or erased, tensors added), written
// to a temporary file that goes with the object: how the refusal and key-ledger tests make
// hostile variants of a fixture.
#include <filesystem>
#include <functional>
#include <string>
#include <unistd.h>

#include "archetype/io/gguf.hpp"
#include "archetype/io/gguf_writer.hpp"

namespace test_util {

struct edited_gguf {
    std::string path;
    edited_gguf(const std::string& src, const std::string& tag,
                const std::function<void(archetype::gguf::writer&, const archetype::gguf::file&)>& edit) {
        const auto f = archetype::gguf::file::open(src);
        archetype::gguf::writer w;
        for (const auto& e : f.metadata()) w.set(e.key, e.value);
        for (const auto& t : f.tensors()) w.add_tensor(t.name, t.type, t.ne, t.data);
        edit(w, f);
        path = (std::filesystem::temp_directory_path() /
                ("archetype_edited_" + std::to_string(::getpid()) + "_" + tag + ".gguf"))
                   .string();
        w.write(path);
    }
    edited_gguf(const edited_gguf&) = delete;
    edited_gguf& operator=(const edited_gguf&) = delete;
    ~edited_gguf() { std::filesystem::remove(path); }
};

} // namespace test_util
