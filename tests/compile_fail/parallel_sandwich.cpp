// expect: a parallel residual block norms the stream once before both sublayers
#include "archetype/models/decoder.hpp"
using namespace archetype;
using Bad = Decoder<GQA<8, 2>, PrePostNorm<RMSNorm>, ParallelResidual>;
std::string s = describe<Bad>();
