// expect: two attention-heads policies given (MHA/GQA/MQA): keep one
#include "archetype/models/decoder.hpp"
using namespace archetype;
using Bad = Decoder<MHA<8>, GQA<8, 2>, RoPE>;
static_assert(sizeof(Bad) > 0);
std::string s = describe<Bad>();
