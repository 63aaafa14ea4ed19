// expect: two attention-scale rules given
#include "archetype/models/decoder.hpp"
using namespace archetype;
using Bad = Decoder<GQA<8, 2>, QueryPreAttnScale<46>, AttentionScaleKey>;
std::string s = describe<Bad>();
