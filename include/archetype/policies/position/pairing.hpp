#pragma once
// How rotary dimensions are paired, as a policy parameter.
#include "archetype/core/policy.hpp"

namespace archetype {

/// adjacent (x[2i], x[2i+1]) as ggml's normal mode and GGUF `llama`; neox
/// (x[i], x[i + n/2]) as Hugging Face layouts; from_file: the file's architecture
/// decides (its registered gguf_conventions::rope_pairing).
enum class rope_pairing_policy { from_file, adjacent, neox };

} // namespace archetype
