// expect: RoPE rotates pairs of dimensions, so the head dimension must be even
#include "archetype/models/decoder.hpp"
using namespace archetype;
using Bad = Decoder<GQA<32, 8, 127>, RoPE>;
std::string s = describe<Bad>();
