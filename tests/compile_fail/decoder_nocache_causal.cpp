// expect: NoCache keeps no past tokens, so a causal Decoder could not decode
#include "archetype/models/decoder.hpp"
using namespace archetype;
using Bad = Decoder<MHA<4>, NoCache>;
std::string s = describe<Bad>();
