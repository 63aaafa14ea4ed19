// The archetype program's run_decoder for presets::olmo2_architecture (one entry per translation unit).
#include "archetype/models/presets/olmo2.hpp"
#include "../run_decoder.hpp"

namespace archetype::tools {
ARCHETYPE_TOOLS_DECODER(presets::olmo2_architecture);
}
