// expect: an Encoder sees its whole sequence: use Bidirectional, SymmetricWindow<W> or Interleave
#include "archetype/models/encoder.hpp"
using namespace archetype;
using Bad = Encoder<MHA<12>, LearnedPositions<512>, Causal>;
std::string s = describe<Bad>();
