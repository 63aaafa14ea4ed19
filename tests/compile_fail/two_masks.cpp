// expect: two mask policies given
#include "archetype/models/decoder.hpp"
using namespace archetype;
using Bad = Decoder<Causal, SlidingWindow<128>>;
std::string s = describe<Bad>();
