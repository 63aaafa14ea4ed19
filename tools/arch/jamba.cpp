// The archetype program's run_decoder for presets::jamba_architecture (one entry per translation unit).
#include "archetype/models/presets/jamba.hpp"
#include "../run_decoder.hpp"

namespace archetype::tools {
ARCHETYPE_TOOLS_DECODER(presets::jamba_architecture);
}
