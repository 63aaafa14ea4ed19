// The archetype program's run_decoder for presets::granitemoe_architecture (one entry per translation unit).
#include "archetype/models/presets/granitemoe.hpp"
#include "../run_decoder.hpp"

namespace archetype::tools {
ARCHETYPE_TOOLS_DECODER(presets::granitemoe_architecture);
}
