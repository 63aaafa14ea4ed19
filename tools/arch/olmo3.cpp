// The archetype program's run_decoder for presets::olmo3_architecture (one entry per translation unit).
#include "archetype/models/presets/olmo3.hpp"
#include "../run_decoder.hpp"

namespace archetype::tools {
ARCHETYPE_TOOLS_DECODER(presets::olmo3_architecture);
}
