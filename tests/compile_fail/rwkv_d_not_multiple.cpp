// expect: D must be a multiple of the head size H
#include "archetype/models/rwkv.hpp"
using namespace archetype;
using Bad = Rwkv6<2048, 96>;
std::string s = describe<Bad>();
