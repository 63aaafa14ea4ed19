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
    const gguf::file* f = &file;
    return with_architecture<decoder_architectures>(*f, [&]<class E>(std::type_identity<E>) {
        return run_decoder<E>(std::move(file), job);
    });
}

} // namespace archetype::tools
