// The archetype program's run_decoder for presets::command_r_qknorm_architecture (one entry per translation unit).
#include "archetype/models/presets/command_r.hpp"
#include "../run_decoder.hpp"

namespace archetype::tools {
ARCHETYPE_TOOLS_DECODER(presets::command_r_qknorm_architecture);
}
