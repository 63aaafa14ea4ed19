#pragma once
// BERT-family sentence encoders (GGUF `bert`): every dimension, the pooling and the
// GELU form from the file (models/encoder.hpp's defaults: learned positions,
// post-norm, GeluMLP). Tensor names and hyperparameters: models/encoder_model.hpp.
#include "archetype/models/encoder.hpp"

namespace archetype::presets {

using Bert = Encoder<>;

struct bert_architecture {
    static constexpr std::string_view gguf_name = "bert";
    using model = Bert;
};

} // namespace archetype::presets
