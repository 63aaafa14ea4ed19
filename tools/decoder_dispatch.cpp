// From a file to its registered decoder entry; run_decoder<Entry> itself is
// compiled in tools/arch/<entry>.cpp (only declared here).
#include "archetype/models/decoder_architectures.hpp"
#include "decoder_jobs.hpp"

namespace archetype::tools {

namespace {
template <class... Es>
bool any_accepts(const gguf::file& f, architecture_list<Es...>) {
    return (entry_accepts<Es>(f) || ...);
}
} // namespace

bool is_registered_decoder(const gguf::file& file) { return any_accepts(file, decoder_architectures{}); }

int run_registered_decoder(gguf::file file, const decoder_job& job) {
#ifdef ARCHETYPE_CLI_NO_DECODERS
    // Built with -Dcli_decoders=false: the registry still recognises the file,
    // but no run_decoder<Entry> was compiled into this program.
    (void)job;
    throw shape_error("this archetype program was built with -Dcli_decoders=false: decoder architecture '" +
                      std::string(file.architecture()) + "' is recognised but not compiled in");
#else
    const gguf::file* f = &file;
    return with_architecture<decoder_architectures>(*f, [&]<class E>(std::type_identity<E>) {
        return run_decoder<E>(std::move(file), job);
    });
#endif
}

} // namespace archetype::tools
