#pragma once
// The element type of a session's key/value cache (decoder_session_options::kv_type).
namespace archetype {

/// Element type of the key/value cache.
enum class kv_cache_type {
    f32, ///< float32: exact (the default)
    f16  ///< IEEE half: half the memory and half the bytes attention reads at depth
         ///< (llama.cpp's default); K and V are rounded to half when stored
};

} // namespace archetype
