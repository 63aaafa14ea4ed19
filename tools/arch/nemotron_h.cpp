// The archetype program's run_decoder for presets::nemotron_h_architecture (one entry per translation unit).
#include "archetype/models/presets/nemotron_h.hpp"
#include "../run_decoder.hpp"

namespace archetype::tools {
ARCHETYPE_TOOLS_DECODER(presets::nemotron_h_architecture);
}
