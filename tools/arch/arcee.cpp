// The archetype program's run_decoder for presets::arcee_architecture (one entry per translation unit).
#include "archetype/models/presets/arcee.hpp"
#include "../run_decoder.hpp"

namespace archetype::tools {
ARCHETYPE_TOOLS_DECODER(presets::arcee_architecture);
}
