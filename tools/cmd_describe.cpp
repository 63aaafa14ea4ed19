// archetype describe --model FILE
// Prints the resolved architecture of a model file: the compiled structure the
// program uses for its architecture (policies per axis) and the file's figures.
// Every family the registry knows: the registered decoders (tools/arch/), RWKV-5/6
// (GGUF or rwkv.cpp .bin) and BERT encoders, each by its model's describe().
#include <cstdio>
#include <string>
#include <string_view>

#include "archetype/core/error.hpp"
#include "archetype/io/gguf.hpp"
#include "archetype/models/architectures.hpp"
#include "archetype/models/encoder_model.hpp"
#include "archetype/runtime/rwkv_api.hpp"
#include "model_file.hpp"
#include "commands.hpp"
#include "decoder_jobs.hpp"

namespace archetype::tools {

int cmd_describe(int argc, char** argv) {
    std::string path;
    for (int i = 1; i < argc; ++i) {
        const std::string_view o = argv[i];
        if (o == "--help" || o == "-h") {
            std::printf("usage: archetype describe --model FILE\n");
            return 0;
        }
        if (i + 1 >= argc) throw argument_error("option '" + std::string(o) + "' needs a value");
        if (o == "--model") path = argv[++i];
        else throw argument_error("unknown option '" + std::string(o) + "'");
    }
    if (path.empty()) throw argument_error("--model FILE is required");
    if (!hf::is_checkpoint(path) && takes(path, rwkv_architectures{}))
        return with_architecture<rwkv_architectures>(path, [&]<class E>(std::type_identity<E>) {
            std::fputs(describe(load_model<typename E::model>(path)).c_str(), stdout);
            return 0;
        });
    auto file = open_model_file(path);
    if (takes_file(file, encoder_architectures{}))
        return with_architecture<encoder_architectures>(file, [&]<class E>(std::type_identity<E>) {
            // (with_architecture is done with `file` once it calls this visitor)
            std::fputs(describe(load_model<E>(std::move(file))).c_str(), stdout);
            return 0;
        });
    return run_registered_decoder(std::move(file), decoder_job{});
}

} // namespace archetype::tools
