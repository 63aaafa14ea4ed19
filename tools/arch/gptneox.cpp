// The archetype program's run_decoder for presets::gptneox_architecture (one entry per translation unit).
#include "archetype/models/presets/gptneox.hpp"
#include "../run_decoder.hpp"

namespace archetype::tools {
ARCHETYPE_TOOLS_DECODER(presets::gptneox_architecture);
}
