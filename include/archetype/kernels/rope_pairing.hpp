#pragma once
// The pairing of rotated dimensions, shared by kernels/rope.hpp and its reference twin.
namespace archetype::kernels {

/// `adjacent` rotates (x[2i], x[2i+1]) (GGUF llama, ggml mode 0);
/// `neox` rotates (x[i], x[i + n_rot/2]) (ggml NeoX mode, HF layout).
enum class rope_pairing { adjacent, neox };

} // namespace archetype::kernels
