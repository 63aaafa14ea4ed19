// expect-ok: the mission's spelling compiles (control case: proves the harness can pass)
#include "archetype/models/decoder.hpp"
using namespace archetype;
using Mistral = Decoder<GQA<32, 8>, RoPE, SlidingWindow<4096>, RollingCache>;
std::string s = describe<Mistral>();
