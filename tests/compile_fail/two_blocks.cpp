// expect: two block shapes given
#include "archetype/models/decoder.hpp"
using namespace archetype;
using Bad = Decoder<GQA<8, 2>, SequentialBlock, ParallelResidual>;
std::string s = describe<Bad>();
