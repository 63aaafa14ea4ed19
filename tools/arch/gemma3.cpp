// The archetype program's run_decoder for presets::gemma3_architecture (one entry per translation unit).
#include "archetype/models/presets/gemma3.hpp"
#include "../run_decoder.hpp"

namespace archetype::tools {
ARCHETYPE_TOOLS_DECODER(presets::gemma3_architecture);
}
