#pragma once
// A registered decoder entry driven without its type: the loaded model and its sessions
// behind two small interfaces. tools/arch/<entry>.cpp instantiates open_handle<Entry>
// beside the program's run_decoder<Entry> (run_decoder.hpp), so one object file per
// preset holds the compiled model for both the program and the zoo tests
// (tests/zoo/test_zoo_family.cpp), which call open_entry(name, file) instead of
// instantiating every preset a second time (issue 37, CI lever L1: ~20 CPU-s a family).
// The calls go straight to decoder_model<D> / decoder_session<D> (entry_handle_of.hpp);
// nothing here changes what they compute.
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "archetype/io/gguf.hpp"
#include "archetype/models/decoder_model.hpp"
#include "archetype/runtime/decoder_session.hpp"
#include "archetype/runtime/sequence_snapshot.hpp"

namespace archetype::tools {

/// A decoder_session<D>'s sequence operations.
class session_handle {
public:
    virtual ~session_handle() = default;
    virtual void prefill(seq_id s, std::span<const std::int32_t> tokens, float* logits) = 0;
    virtual void copy_sequence(seq_id from, seq_id to) = 0;
    virtual void remove_sequence(seq_id s) = 0;
    virtual sequence_snapshot save_sequence(seq_id s) const = 0;
    virtual void restore_sequence(seq_id s, const sequence_snapshot& snap) = 0;
    virtual bool can_truncate() const = 0;
    virtual void truncate_sequence(seq_id s, std::int64_t n_keep) = 0;
    virtual std::int64_t n_past(seq_id s) const = 0;
    virtual std::size_t recurrent_state_bytes_per_sequence() const = 0;
    virtual const runtime::kv_cache& cache() const = 0;
};

/// A loaded decoder_model<D>.
class model_handle {
public:
    virtual ~model_handle() = default;
    virtual std::size_t n_vocab() const = 0;
    virtual const decoder_hparams& hparams() const = 0;
    virtual const gguf::file& file() const = 0;
    /// The structure's cache policy keeps windowed layers in rings (cache::rolling).
    virtual bool rolling_cache() const = 0;
    /// A session over this model (which must outlive it).
    virtual std::unique_ptr<session_handle> session(const decoder_session_options& o) const = 0;
};

/// Loads a file as registry entry Entry (load_model<Entry>) behind a model_handle. Only
/// declared here: tools/arch/<entry>.cpp instantiates it (run_decoder.hpp includes the
/// definition, entry_handle_of.hpp), so no other file compiles a preset.
template <class Entry>
std::unique_ptr<model_handle> open_handle(gguf::file file);

/// Loads a file as the compiled entry named `entry` (tools/arch/<entry>.cpp; tools/decoder_dispatch.cpp):
/// an argument_error when no entry has that name or the program was built without it.
std::unique_ptr<model_handle> open_entry(std::string_view entry, gguf::file file);

} // namespace archetype::tools
