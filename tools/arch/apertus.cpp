// The archetype program's run_decoder for presets::apertus_architecture (one entry per translation unit).
#include "archetype/models/presets/apertus.hpp"
#include "../run_decoder.hpp"

namespace archetype::tools {
ARCHETYPE_TOOLS_DECODER(presets::apertus_architecture);
}
