// Writes the suite 'server''s model: a seeded random-weight llama-layout decoder with a
// byte-level vocabulary (tests/decoder/random_decoder.hpp), small enough that
// `archetype serve` answers in milliseconds and large enough that a stream of thousands
// of tokens lasts a second (the disconnect and SIGTERM cases cut one short), with Q8_0
// matrices so that decode batches run the quantised kernels a real model runs.
//   write_tiny_model OUT.gguf
#include <cstdio>
#include <exception>

#include "../decoder/random_decoder.hpp"

int main(int argc, char** argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: write_tiny_model OUT.gguf\n");
        return 2;
    }
    try {
        random_decoder::spec s;
        s.n_vocab = 272;
        s.n_embd = 256;
        s.n_layer = 4;
        s.n_head = 8;
        s.n_head_kv = 4;
        s.n_ff = 768;
        s.n_ctx = 4096;
        s.seed = 42;
        s.scale = 0.15f;
        s.matrix_type = archetype::ggml_type::Q8_0;
        s.byte_vocab = true;
        random_decoder::write(s, argv[1]);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "write_tiny_model: %s\n", e.what());
        return 1;
    }
    return 0;
}
