// expect: RWKV keeps a recurrent state, not a KV cache
#include "archetype/models/rwkv.hpp"
using namespace archetype;
using Bad = Rwkv6<2048, 64, FullCache>;
std::string s = describe<Bad>();
