// The archetype program's run_decoder for presets::mixtral_architecture (one entry per translation unit).
#include "archetype/models/presets/mixtral.hpp"
#include "../run_decoder.hpp"

namespace archetype::tools {
ARCHETYPE_TOOLS_DECODER(presets::mixtral_architecture);
}
