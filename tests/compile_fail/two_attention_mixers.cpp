// expect: at most one of A and B may attend
#include "archetype/models/decoder.hpp"
using namespace archetype;
using Bad = Decoder<GQA<8, 2>, ParallelMixers<SelfAttention, SelfAttentionWith<qk_norm::rms>>>;
std::string s = describe<Bad>();
