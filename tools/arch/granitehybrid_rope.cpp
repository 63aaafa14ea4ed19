// The archetype program's run_decoder for presets::granitehybrid_rope_architecture (one entry per translation unit).
#include "archetype/models/presets/granitehybrid.hpp"
#include "../run_decoder.hpp"

namespace archetype::tools {
ARCHETYPE_TOOLS_DECODER(presets::granitehybrid_rope_architecture);
}
