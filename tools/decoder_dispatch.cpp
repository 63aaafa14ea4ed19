// From a file to its registered decoder entry; run_decoder<Entry> itself is
// compiled in tools/arch/<entry>.cpp (only declared here).
#include "archetype/models/decoder_architectures.hpp"
#include "decoder_jobs.hpp"

namespace archetype::tools {

namespace {
// Which entries this program compiled: meson passes -DARCHETYPE_CLI_HAS_<name>=0|1 for
// every tools/arch/<name>.cpp (-Dcli_decoder_entries, -Dcli_decoders).
template <class E>
inline constexpr bool compiled_in = false;
#define ARCHETYPE_CLI_ENTRY(name) \
    template <> inline constexpr bool compiled_in<presets::name##_architecture> = ARCHETYPE_CLI_HAS_##name;
ARCHETYPE_CLI_ENTRY(llama)
ARCHETYPE_CLI_ENTRY(llama_swa)
ARCHETYPE_CLI_ENTRY(mellum)
ARCHETYPE_CLI_ENTRY(mellum_swa)
ARCHETYPE_CLI_ENTRY(gemma3)
ARCHETYPE_CLI_ENTRY(qwen2)
ARCHETYPE_CLI_ENTRY(qwen3)
ARCHETYPE_CLI_ENTRY(qwen3moe)
ARCHETYPE_CLI_ENTRY(stablelm)
ARCHETYPE_CLI_ENTRY(starcoder2)
ARCHETYPE_CLI_ENTRY(starcoder2_swa)
ARCHETYPE_CLI_ENTRY(gpt2)
ARCHETYPE_CLI_ENTRY(phi3)
ARCHETYPE_CLI_ENTRY(phi3_swa)
ARCHETYPE_CLI_ENTRY(smollm3)
ARCHETYPE_CLI_ENTRY(bloom)
#undef ARCHETYPE_CLI_ENTRY

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

} // namespace archetype::tools
