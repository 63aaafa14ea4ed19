// expect: RollingCache/SinkCache keep only a window of positions, but the mask has no window
#include "archetype/models/decoder.hpp"
using namespace archetype;
using Bad = Decoder<GQA<32, 8>, RoPE, RollingCache>;
std::string s = describe<Bad>();
