// expect-ok: the mission's spelling Rwkv6<2048, 64> compiles
#include "archetype/models/rwkv.hpp"
using namespace archetype;
using Finch = Rwkv6<2048, 64>;
std::string s = describe<Finch>();
