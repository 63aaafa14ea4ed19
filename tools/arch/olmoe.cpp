// The archetype program's run_decoder for presets::olmoe_architecture (one entry per translation unit).
#include "archetype/models/presets/olmoe.hpp"
#include "../run_decoder.hpp"

namespace archetype::tools {
ARCHETYPE_TOOLS_DECODER(presets::olmoe_architecture);
}
