// The archetype program's run_decoder for presets::exaone4_architecture (one entry per translation unit).
#include "archetype/models/presets/exaone4.hpp"
#include "../run_decoder.hpp"

namespace archetype::tools {
ARCHETYPE_TOOLS_DECODER(presets::exaone4_architecture);
}
