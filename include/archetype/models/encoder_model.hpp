#pragma once
// encoder_model<Enc>: an Encoder<...> structure bound to the weights of a GGUF
// file (llama.cpp architecture `bert`, or any a registry entry maps to an Encoder).
// The weights are the core's: a decoder_model of Enc::core (models/encoder.hpp: the
// encoder's axes with a bidirectional mask, NoCache, its block shape, BertEmbedding
// and EncoderHead), which binds every tensor and reads every key through the same
// binder, tensor ledger and key ledger as the decoders. The file stays memory-mapped
// (no x16 repacking: the encoder's products are those of the stored types); the
// F32 / F16 / BF16 projection matrices are packed once into GEMM panels
// (decoder_model::pack_panels: the attention's, and the feed-forward's when it is not
// gated), a second copy of them in F32 that the encoder's batches of many rows run on.
//
//   auto model = archetype::load_model<MiniLM>("all-MiniLM-L6-v2.gguf");
//
// Before the core binds, the encoder reads the file as llama.cpp's encoders do
// (io/arch/bert.hpp: hp, the limits, the default pooling) and checks what the type
// fixes (heads, feed-forward size, learned positions, storage type) with its own
// messages; every shape is then checked by the core's binder (shape_error naming the
// tensor), so the forward pass never indexes past a tensor.
//
// Other formats bind through the second constructor: hyperparameters plus tensors
// described in GGUF terms (ne order, ggml type) under GGUF names, and an owner keeping
// their memory mapped (models/bert_safetensors.hpp reads sentence-transformers
// directories this way): they are written once into a GGUF in memory, which the core
// loads like a file.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "archetype/core/dtype.hpp"
#include "archetype/core/error.hpp"
#include "archetype/io/arch/bert.hpp"
#include "archetype/io/gguf.hpp"
#include "archetype/io/gguf_writer.hpp"
#include "archetype/io/key_ledger.hpp"
#include "archetype/models/decoder_model.hpp"
#include "archetype/models/encoder.hpp"
#include "archetype/models/registry.hpp"

namespace archetype {

template <class Enc>
class encoder_model {
    static_assert(EncoderModel<Enc>, "archetype: encoder_model<Enc> takes an Encoder<...> type");

public:
    using architecture = Enc;
    /// The model as the core runs it (models/encoder.hpp).
    using core_type = typename Enc::core;

    /// The file as llama.cpp's encoders read it (dimensions, limits, the default pooling).
    arch::bert_hparams hp;

    std::size_t n_embd() const noexcept { return hp.n_embd; }
    std::size_t n_vocab() const noexcept { return hp.n_vocab; }
    /// Longest sequence accepted: the learned-position table, else the training context.
    std::size_t max_sequence() const noexcept { return max_seq_; }
    /// Window of the windowed layers (the mask policy's static one, else the file's); 0 = none.
    std::size_t window() const noexcept { return core_->hparams().window; }
    /// Whether layer il attends through the window (else to its whole sequence).
    bool layer_windowed(std::size_t il) const noexcept {
        const auto& w = core_->hparams().windowed;
        return il < w.size() && w[il];
    }
    /// RoPE base of layer il: {arch}.rope.freq_base_swa on windowed layers when the file gives it.
    float rope_base(std::size_t il) const noexcept {
        return layer_windowed(il) && hp.rope_freq_base_swa > 0.f ? hp.rope_freq_base_swa : hp.rope_freq_base;
    }
    /// The core model: layers, embedding and head (decoder_model<Enc::core>).
    const decoder_model<core_type>& core() const noexcept { return *core_; }
    /// What EncoderHead bound: the file's pooling and the rank classifier (cls, cls.output).
    const typename logits_impl<EncoderHead>::weights& head() const noexcept { return core_->logit_policy(); }
    bool has_rank_head() const noexcept { return head().cls.data || head().cls_out.data; }
    /// Floats of one pooled output under RankPooling.
    std::size_t n_rank_outputs() const noexcept {
        return head().cls_out.data ? head().cls_out.rows : head().cls.data ? head().cls.rows : hp.n_embd;
    }
    /// The resolved architecture with the file's dimensions (the same spelling as
    /// decoder_model::describe and rwkv_model::describe; also the free describe(m)).
    std::string describe() const {
        using detail::describe_line;
        std::string s = Enc::describe();
        s += "File\n";
        s += describe_line("arch", hp.arch);
        s += describe_line("dims", "n_embd " + std::to_string(hp.n_embd) + ", layers " + std::to_string(hp.n_layer) +
                                       ", heads " + std::to_string(hp.n_head) + " x " + std::to_string(hp.head_dim) +
                                       ", ffn " + std::to_string(hp.n_ff) + ", vocab " + std::to_string(hp.n_vocab));
        s += describe_line("positions", positions_ ? "learned, " + std::to_string(positions_) + " rows" : "none in the file");
        s += describe_line("token types", token_types_ ? std::to_string(token_types_) : std::string("none"));
        s += describe_line("pooling", std::string(pooling_name(hp.pooling)) + " (the file's default)");
        if (window()) {
            std::string which;
            for (std::size_t il = 0; il < hp.n_layer; ++il)
                if (layer_windowed(il)) which += (which.empty() ? "" : ",") + std::to_string(il);
            s += describe_line("window", std::to_string(window()) + " (symmetric) on layers " + which);
        }
        s += describe_line("max sequence", std::to_string(max_seq_));
        return s;
    }

    /// The GGUF file (for a model bound from another format: the GGUF it was written to).
    const gguf::file& file() const { return core_->file(); }

    /// A `bert` file.
    static encoder_model load(const std::string& path, unread_keys unread = unread_keys::error) {
        return encoder_model(std::make_shared<gguf::file>(gguf::file::open(path)), unread);
    }
    /// A file of any architecture name, with what its registry entry says the name implies
    /// (load_model<Entry> passes the entry's conventions).
    static encoder_model load(const std::string& path, const arch::gguf_conventions& conv,
                              unread_keys unread = unread_keys::error) {
        return encoder_model(std::make_shared<gguf::file>(gguf::file::open(path)), conv, unread);
    }
    /// `unread`: what a metadata key no policy reads does (io/key_ledger.hpp).
    explicit encoder_model(std::shared_ptr<gguf::file> f, unread_keys unread = unread_keys::error) {
        if (f->architecture() != "bert")
            throw shape_error("general.architecture is '" + std::string(f->architecture()) + "', expected 'bert'");
        init(std::move(*f), unread);
    }
    encoder_model(std::shared_ptr<gguf::file> f, const arch::gguf_conventions& conv,
                  unread_keys unread = unread_keys::error)
        : conv_(conv) {
        init(std::move(*f), unread);
    }
    /// Weights from another format: `tensors` keyed by their GGUF name, pointing into
    /// memory that `owner` keeps alive while they are written into a GGUF in memory.
    encoder_model(arch::bert_hparams h, std::map<std::string, gguf::tensor_info> tensors,
                  std::shared_ptr<const void> owner) {
        // errors name each tensor as its own file does (tensor_info::name), not its GGUF name
        try {
            init(gguf_of(h, tensors), unread_keys::error);
        } catch (const shape_error& e) {
            throw shape_error(named_as_stored(e.what(), tensors));
        } catch (const format_error& e) {
            throw format_error(named_as_stored(e.what(), tensors));
        }
        hp.pooling = h.pooling; // the directory's (max pooling has no pooling_type value)
        (void)owner;            // (the tensors' bytes are copied into the GGUF: the mapping may go)
    }

private:
    arch::gguf_conventions conv_{};
    std::shared_ptr<decoder_model<core_type>> core_; // shared: the model stays copyable, its address stable
    std::size_t max_seq_ = 0, positions_ = 0, token_types_ = 0;

    static std::size_t rows_of(const gguf::file& f, const char* name) {
        const auto* t = f.find_tensor(name);
        return !t ? 0 : t->ne.size() >= 2 ? std::size_t(t->ne[1]) : 1;
    }

    /// The encoder's reading and checks, then the core's binding.
    void init(gguf::file f, unread_keys unread) {
        hp = arch::read_encoder_hparams(f, conv_);
        using heads = typename Enc::heads;
        auto check_static = [](const char* what, dim_t want, std::size_t got) {
            if (want != dynamic && want != got)
                throw shape_error(std::string("the model type fixes ") + what + " = " + std::to_string(want) +
                                  " but the file has " + std::to_string(got));
        };
        check_static("the query head count", heads::n_head, hp.n_head);
        check_static("the key/value head count", heads::n_head_kv, hp.n_head_kv);
        check_static("the head dimension", heads::head_dim, hp.head_dim);
        check_static("the feed-forward size", Enc::ffn::hidden, hp.n_ff);
        positions_ = rows_of(f, "position_embd.weight");
        token_types_ = rows_of(f, "token_types.weight");
        max_seq_ = hp.n_ctx_train;
        if constexpr (detail::is_learned_positions<typename Enc::position>) {
            if (!positions_) throw format_error("missing tensor 'position_embd.weight'");
            check_static("the learned-position count", Enc::position::max_positions, positions_);
            max_seq_ = positions_;
        }
        if constexpr (requires { Enc::storage::type; }) {
            const char* name = f.find_tensor("blk.0.attn_qkv.weight") ? "blk.0.attn_qkv.weight" : "blk.0.attn_q.weight";
            const auto& t = f.tensor(name);
            if (t.type != Enc::storage::type)
                throw shape_error("the model type requires " + std::string(type_name(Enc::storage::type)) +
                                  " weights but '" + t.name + "' is " + std::string(type_name(t.type)));
        }
        decoder_options o;
        o.conventions = &conv_;
        o.unread = unread;
        o.repack = false; // the stored types' products, as the encoder always ran them
        core_ = std::make_shared<decoder_model<core_type>>(decoder_model<core_type>::load(std::move(f), o));
        core_->pack_panels(!Enc::ffn::gated);
    }

    /// `message` with each quoted GGUF tensor name replaced by the stored tensor's own name.
    static std::string named_as_stored(std::string message, const std::map<std::string, gguf::tensor_info>& tensors) {
        for (const auto& [name, t] : tensors) {
            if (t.name.empty() || t.name == name) continue;
            const std::string from = "'" + name + "'", to = "'" + t.name + "'";
            for (std::size_t at = message.find(from); at != std::string::npos; at = message.find(from, at + to.size()))
                message.replace(at, from.size(), to);
        }
        return message;
    }
    /// A GGUF in memory holding `h` under the `bert` keys and the tensors.
    static gguf::file gguf_of(const arch::bert_hparams& h, const std::map<std::string, gguf::tensor_info>& tensors) {
        gguf::writer w;
        const std::string a = h.arch.empty() ? std::string("bert") : h.arch;
        w.set("general.architecture", a);
        w.set(a + ".context_length", std::uint64_t(h.n_ctx_train));
        w.set(a + ".embedding_length", std::uint64_t(h.n_embd));
        w.set(a + ".block_count", std::uint64_t(h.n_layer));
        w.set(a + ".feed_forward_length", std::uint64_t(h.n_ff));
        w.set(a + ".attention.head_count", std::uint64_t(h.n_head));
        w.set(a + ".attention.head_count_kv", std::uint64_t(h.n_head_kv));
        w.set(a + ".attention.layer_norm_epsilon", h.norm_eps);
        w.set(a + ".attention.causal", false);
        if (const int p = int(h.pooling); p >= 0 && p <= int(pooling_type::rank)) w.set(a + ".pooling_type", std::int32_t(p));
        w.set(a + ".vocab_size", std::uint64_t(h.n_vocab));
        if (h.n_token_types) w.set("tokenizer.ggml.token_type_count", std::uint64_t(h.n_token_types));
        for (const auto& [name, t] : tensors) w.add_tensor(name, t.type, t.ne, t.data);
        return gguf::file::from_owned_bytes(w.write_to_memory());
    }
};

/// The one describe spelling of the loaded models of the three families (decoder,
/// encoder, RWKV): describe(m) == m.describe(); describe<Type>() for a type alone.
template <class Enc>
std::string describe(const encoder_model<Enc>& m) {
    return m.describe();
}

/// Opens a `bert` GGUF file for the Encoder type Enc.
template <class Enc>
    requires EncoderModel<Enc>
encoder_model<Enc> load_model(const std::string& path) {
    return encoder_model<Enc>::load(path);
}

/// Opens a file as registry entry A's encoder with A's conventions (models/registry.hpp),
/// e.g. load_model<presets::modern_bert_architecture>("modernbert.gguf"); a file of
/// another architecture is a shape_error naming both.
template <ArchitectureEntry A>
    requires EncoderModel<typename A::model>
encoder_model<typename A::model> load_model(gguf::file file) {
    auto f = std::make_shared<gguf::file>(std::move(file));
    if (!entry_accepts<A>(*f))
        throw shape_error("general.architecture is '" + std::string(f->architecture()) + "', expected '" +
                          std::string(A::gguf_name) + "'");
    return encoder_model<typename A::model>(std::move(f), conventions_of<A>());
}
template <ArchitectureEntry A>
    requires EncoderModel<typename A::model>
encoder_model<typename A::model> load_model(const std::string& path) {
    return load_model<A>(gguf::file::open(path));
}

} // namespace archetype
