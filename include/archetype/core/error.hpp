#pragma once
// Exception types. Every error the library raises derives from archetype::error,
// so a program can catch one type; the subclasses say which layer refused.
#include <stdexcept>
#include <string>

namespace archetype {

/// Base of every exception thrown by archetype.
struct error : std::runtime_error {
    using std::runtime_error::runtime_error;
};
/// A model file (GGUF, safetensors, rwkv.cpp .bin) is malformed, truncated or hostile.
struct format_error : error {
    using error::error;
};
/// A value of the wrong type was requested from a file's metadata.
struct type_error : error {
    using error::error;
};
/// A file's hyperparameters disagree with the compiled architecture, or shapes disagree.
struct shape_error : error {
    using error::error;
};
/// A caller passed a bad argument at run time (token id past the vocabulary, unknown sequence...).
struct argument_error : error {
    using error::error;
};
/// A capacity was exceeded (context length, cache cells).
struct capacity_error : error {
    using error::error;
};
/// An operating-system call failed (open, mmap...).
struct io_error : error {
    using error::error;
};

} // namespace archetype
