// expect: every model argument must be a policy
#include "archetype/models/decoder.hpp"
using namespace archetype;
using Bad = Decoder<GQA<32, 8>, RoPE, int>;
std::string s = describe<Bad>();
