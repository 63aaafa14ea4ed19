#pragma once
// describe<Model>(): the readable summary of a model type's resolved
// architecture (one line per axis), for every model template (Decoder,
// Encoder, Rwkv5, Rwkv6 ...), which each provide a static describe().
#include <concepts>
#include <string>

namespace archetype {

template <class Model>
    requires requires { { Model::describe() } -> std::convertible_to<std::string>; }
std::string describe() {
    return Model::describe();
}

} // namespace archetype
