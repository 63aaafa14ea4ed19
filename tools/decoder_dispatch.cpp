// From a file to its registered decoder entry; run_decoder<Entry> itself is
// compiled in tools/arch/<entry>.cpp (only declared here).
#include "archetype/models/decoder_architectures.hpp"
#include "decoder_jobs.hpp"
#include "entry_handle.hpp"

namespace archetype::tools {

namespace {
// Which entries this program compiled: meson passes ARCHETYPE_CLI_ENTRIES =
// X(name, 0|1) for every tools/arch/<name>.cpp of its list (-Dcli_decoder_entries,
// -Dcli_decoders); entry `name` is presets::name_architecture.
template <class E>
inline constexpr bool compiled_in = false;
#define X(name, on) template <> inline constexpr bool compiled_in<presets::name##_architecture> = on;
ARCHETYPE_CLI_ENTRIES
#undef X

template <class... Es>
bool any_accepts(const gguf::file& f, architecture_list<Es...>) {
    return (entry_accepts<Es>(f) || ...);
}
} // namespace

bool is_registered_decoder(const gguf::file& file) { return any_accepts(file, decoder_architectures{}); }

int run_registered_decoder(gguf::file file, const decoder_job& job) {
    const gguf::file* f = &file;
    return with_architecture<decoder_architectures>(*f, [&]<class E>(std::type_identity<E>) -> int {
        if constexpr (compiled_in<E>) {
            return run_decoder<E>(std::move(file), job);
        } else {
            // the registry recognises the file, but this program was built without its entry
            throw shape_error("decoder architecture '" + std::string(f->architecture()) +
                              "' is recognised but not compiled into this archetype program (built with "
                              "-Dcli_decoders=false or a -Dcli_decoder_entries list without its entry)");
        }
    });
}

namespace {
template <class E>
std::unique_ptr<model_handle> open_if_compiled(std::string_view entry, gguf::file& file) {
    if constexpr (compiled_in<E>) {
        return open_handle<E>(std::move(file)); // instantiated in tools/arch/<entry>.cpp
    } else {
        throw argument_error("decoder entry '" + std::string(entry) +
                             "' is not compiled into this build (-Dcli_decoders=false or a -Dcli_decoder_entries "
                             "list without it)");
    }
}
} // namespace

std::unique_ptr<model_handle> open_entry(std::string_view entry, gguf::file file) {
#define X(name, on) \
    if (entry == #name) return open_if_compiled<presets::name##_architecture>(entry, file);
    ARCHETYPE_CLI_ENTRIES
#undef X
    throw argument_error("no decoder entry is named '" + std::string(entry) + "' (tools/arch/<name>.cpp)");
}

} // namespace archetype::tools
