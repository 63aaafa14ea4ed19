// The archetype program's run_decoder for presets::phi2_architecture (one entry per translation unit).
#include "archetype/models/presets/phi2.hpp"
#include "../run_decoder.hpp"

namespace archetype::tools {
ARCHETYPE_TOOLS_DECODER(presets::phi2_architecture);
}
