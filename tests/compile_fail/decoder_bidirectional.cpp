// expect: a Decoder is causal
#include "archetype/models/decoder.hpp"
using namespace archetype;
using Bad = Decoder<MHA<4>, Bidirectional>;
std::string s = describe<Bad>();
