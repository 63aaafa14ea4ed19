// expect-ok: the design's MiniLM spelling compiles
#include "archetype/models/encoder.hpp"
using namespace archetype;
using MiniLM = Encoder<MHA<12>, LearnedPositions<512>, LayerNorm, GeluMLP, MeanPooling, L2Normalize>;
std::string s = describe<MiniLM>();
