// expect: an Encoder runs each batch whole and keeps no KV cache
#include "archetype/models/encoder.hpp"
using namespace archetype;
using Bad = Encoder<MHA<12>, FullCache>;
std::string s = describe<Bad>();
