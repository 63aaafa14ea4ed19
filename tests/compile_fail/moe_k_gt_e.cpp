// expect: MoE<E, K, FFN> needs 1 <= K <= E
#include "archetype/models/decoder.hpp"
using namespace archetype;
using Bad = Decoder<MHA<4>, MoE<4, 5, SwiGLU>>;
std::string s = describe<Bad>();
