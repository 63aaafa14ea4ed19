// The archetype program's run_decoder for presets::gemma2_architecture (one entry per translation unit).
#include "archetype/models/presets/gemma2.hpp"
#include "../run_decoder.hpp"

namespace archetype::tools {
ARCHETYPE_TOOLS_DECODER(presets::gemma2_architecture);
}
