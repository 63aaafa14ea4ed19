// The archetype program's run_decoder for presets::falcon_40b_architecture (one entry per translation unit).
#include "archetype/models/presets/falcon.hpp"
#include "../run_decoder.hpp"

namespace archetype::tools {
ARCHETYPE_TOOLS_DECODER(presets::falcon_40b_architecture);
}
