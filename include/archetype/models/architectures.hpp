#pragma once
// Every architecture the library knows, one preset header each under
// models/presets/: the decoders (decoder_architectures.hpp), RWKV-5/6/7 and the
// encoders (BERT, ModernBERT). with_architecture<default_architectures>(file or path, visitor)
// maps a model file to its entry; an application appends its own with extend_t.
#include "archetype/models/decoder_architectures.hpp"
#include "archetype/models/presets/bert.hpp"
#include "archetype/models/presets/modern_bert.hpp"
#include "archetype/models/presets/nomic_bert.hpp"
#include "archetype/models/presets/rwkv5.hpp"
#include "archetype/models/presets/rwkv6.hpp"
#include "archetype/models/presets/rwkv7.hpp"
#include "archetype/models/registry.hpp"

namespace archetype {

/// rwkv.cpp .bin files are recognised by their bytes before any GGUF is opened.
using rwkv_architectures =
    architecture_list<presets::rwkv7_bin_architecture, presets::rwkv6_bin_architecture, presets::rwkv5_bin_architecture,
                      presets::rwkv6_architecture, presets::rwkv7_architecture>;

/// The encoders (archetype embed).
using encoder_architectures =
    architecture_list<presets::bert_architecture, presets::modern_bert_architecture, presets::nomic_bert_architecture>;

using default_architectures =
    extend_t<decoder_architectures, presets::rwkv7_bin_architecture, presets::rwkv6_bin_architecture,
             presets::rwkv5_bin_architecture, presets::rwkv6_architecture, presets::rwkv7_architecture,
             presets::bert_architecture, presets::modern_bert_architecture, presets::nomic_bert_architecture>;

} // namespace archetype
