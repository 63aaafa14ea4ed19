// expect: two attention-score caps given
#include "archetype/models/decoder.hpp"
using namespace archetype;
using Bad = Decoder<GQA<8, 2>, AttentionSoftCap, NoScoreCap>;
std::string s = describe<Bad>();
