// expect: a post-norm block norms the stream after each residual add
#include "archetype/models/decoder.hpp"
using namespace archetype;
using Bad = Decoder<MHA<4>, Bidirectional, NoCache, PostNormBlock, PrePostNorm<LayerNorm>>;
std::string s = describe<Bad>();
