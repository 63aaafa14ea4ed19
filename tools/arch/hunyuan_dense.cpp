// The archetype program's run_decoder for presets::hunyuan_dense_architecture (one entry per translation unit).
#include "archetype/models/presets/hunyuan_dense.hpp"
#include "../run_decoder.hpp"

namespace archetype::tools {
ARCHETYPE_TOOLS_DECODER(presets::hunyuan_dense_architecture);
}
