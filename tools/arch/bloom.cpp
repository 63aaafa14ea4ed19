// The archetype program's run_decoder for presets::bloom_architecture (one entry per translation unit).
#include "archetype/models/presets/bloom.hpp"
#include "../run_decoder.hpp"

namespace archetype::tools {
ARCHETYPE_TOOLS_DECODER(presets::bloom_architecture);
}
