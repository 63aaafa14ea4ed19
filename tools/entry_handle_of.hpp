#pragma once
// The definition of open_handle<Entry> (entry_handle.hpp): decoder_model<D> and
// decoder_session<D> behind model_handle / session_handle, each call forwarded as is.
// Included by run_decoder.hpp only, that is by tools/arch/<entry>.cpp.
#include <memory>
#include <utility>

#include "entry_handle.hpp"

namespace archetype::tools {

namespace detail {
template <DecoderType D>
class session_handle_of final : public session_handle {
public:
    session_handle_of(const decoder_model<D>& m, const decoder_session_options& o) : s_(archetype::session(m, o)) {}
    void prefill(seq_id s, std::span<const std::int32_t> tokens, float* logits) override {
        s_.prefill(s, tokens, logits);
    }
    void copy_sequence(seq_id from, seq_id to) override { s_.copy_sequence(from, to); }
    void remove_sequence(seq_id s) override { s_.remove_sequence(s); }
    sequence_snapshot save_sequence(seq_id s) const override { return s_.save_sequence(s); }
    void restore_sequence(seq_id s, const sequence_snapshot& snap) override { s_.restore_sequence(s, snap); }
    bool can_truncate() const override { return s_.can_truncate(); }
    void truncate_sequence(seq_id s, std::int64_t n_keep) override { s_.truncate_sequence(s, n_keep); }
    std::int64_t n_past(seq_id s) const override { return s_.n_past(s); }
    std::size_t recurrent_state_bytes_per_sequence() const override { return s_.recurrent_state_bytes_per_sequence(); }
    const runtime::kv_cache& cache() const override { return s_.cache(); }

private:
    decoder_session<D> s_;
};

template <DecoderType D>
class model_handle_of final : public model_handle {
public:
    explicit model_handle_of(decoder_model<D> m) : m_(std::move(m)) {}
    std::size_t n_vocab() const override { return m_.n_vocab(); }
    const decoder_hparams& hparams() const override { return m_.hparams(); }
    const gguf::file& file() const override { return m_.file(); }
    bool rolling_cache() const override { return D::cache::rolling; }
    std::unique_ptr<session_handle> session(const decoder_session_options& o) const override {
        return std::make_unique<session_handle_of<D>>(m_, o);
    }

private:
    decoder_model<D> m_;
};
} // namespace detail

template <class Entry>
std::unique_ptr<model_handle> open_handle(gguf::file file) {
    return std::make_unique<detail::model_handle_of<typename Entry::model>>(load_model<Entry>(std::move(file)));
}

} // namespace archetype::tools
