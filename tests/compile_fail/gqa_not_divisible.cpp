// expect: GQA<Hq, Hkv> needs Hq to be a multiple of Hkv
#include "archetype/models/decoder.hpp"
using namespace archetype;
using Bad = Decoder<GQA<32, 7>, RoPE, SlidingWindow<4096>, RollingCache>;
std::string s = describe<Bad>();
