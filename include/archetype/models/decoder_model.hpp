#pragma once
// Loading a Decoder<...> from a llama.cpp transformer GGUF of any architecture
// whose tensors follow llama.cpp's names (llama, mellum, gemma3, qwen2, ...). The file's hyperparameters are checked against the compiled
// structure (a static dimension or window that disagrees is a shape_error naming
// both values); where the file is silent the compiled policy decides. Weights
// are views into the file's mapping (no copy). `output.weight` absent -> the
// output head is the token embedding (tied).
//
// Each policy binds its own tensors and reads its own keys (its *_impl
// specialisation, policies/impl.hpp): the loader below only walks the layers and
// hands each policy a binder. What the file's architecture implies beyond its keys
// (RoPE pairing, window pattern defaults, ...) is its gguf_conventions, from the
// architecture registry (models/decoder_architectures.hpp) or the caller. Every tensor of
// the file must be bound by some policy: a file with a tensor the compiled
// structure does not use is a shape_error naming it (no silently dropped bias).
//
//   using Mistral = Decoder<GQA<32, 8>, RoPE, SlidingWindow<4096>, RollingCache>;
//   auto model = archetype::load_model<Mistral>("mistral.gguf");
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <algorithm>
#include <memory>
#include <new>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "archetype/core/error.hpp"
#include "archetype/core/half.hpp"
#include "archetype/core/weight_buffer.hpp"
#include "archetype/io/arch/conventions.hpp"
#include "archetype/io/arch/llama.hpp"
#include "archetype/io/gguf.hpp"
#include "archetype/io/key_ledger.hpp"
#include "archetype/kernels/convert.hpp"
#include "archetype/kernels/matmul.hpp"
#include "archetype/layers/attention.hpp"
#include "archetype/layers/ffn.hpp"
#include "archetype/layers/norm.hpp"
#include "archetype/layers/rope.hpp"
#include "archetype/models/decoder_architectures.hpp"
#include "archetype/models/decoder.hpp"
#include "archetype/models/layer_range.hpp"
#include "archetype/policies/impl.hpp"

namespace archetype {

namespace detail {
template <class T>
inline constexpr bool is_decoder_v = false;
template <class... Ps>
inline constexpr bool is_decoder_v<Decoder<Ps...>> = true;
} // namespace detail

template <class T>
concept DecoderType = detail::is_decoder_v<T>;

namespace detail {
template <class F>
struct ffn_weights_of {
    using type = layers::ffn_weights_t<F>;
};
template <class F>
    requires ffn_has_memory<F>
struct ffn_weights_of<F> {
    using type = typename ffn_impl<F>::weights;
};
} // namespace detail

/// Options of load_model for decoders.
struct decoder_options {
    /// Override of the architecture's RoPE base (0 = file / compiled policy).
    float rope_freq_base = 0.f;
    /// Q4_0 and Q8_0 projection matrices (rows % 16 == 0) are reordered at load into
    /// their x16 layouts (kernels/quant/interleaved.hpp), which the decode kernel reads
    /// with no shuffle and no second pass (Q4_0 1.4-1.55x faster from cache, Q8_0
    /// see docs/weights.md): same size, owned by the model, the file's pages of those
    /// tensors released; outputs bitwise unchanged. false: every weight stays a
    /// zero-copy view of the file. Only where the build has the x16 kernels
    /// (kernels::has_x16). An untied token embedding (row lookups only) stays a view;
    /// a tied one is also the output head, and is repacked with it.
    bool repack = true;
    /// What the file's architecture implies beyond its keys; null = the conventions of the
    /// file's general.architecture in the library's registry (llama's when unregistered).
    const arch::gguf_conventions* conventions = nullptr;
    /// A metadata key that no policy of the compiled structure reads (io/key_ledger.hpp):
    /// error (default) refuses the file naming the key; warn prints it and loads.
    unread_keys unread = unread_keys::error;
    /// Keys a user's architecture accepts without reading, beyond the shared list.
    std::span<const known_unused_key> known_unused_keys{};
    /// The layers to load (a pipeline stage, models/layer_range.hpp); default: all.
    /// The token embedding is bound only when the range starts at layer 0, the output
    /// norm and head only when it ends at the last layer.
    layer_range layers{};
};

/// Everything the run time needs, resolved from file + compiled structure.
struct decoder_hparams {
    std::string arch;
    transformer_dims dims;
    std::size_t n_ctx_train = 0;
    float norm_eps = 1e-5f;
    layers::attention_dims attn;
    bool rotary = true;
    layers::rope_params rope;
    layers::rope_params rope_swa; // windowed layers (differs from rope in its base for gemma3)
    std::vector<bool> windowed;  // per layer
    std::size_t window = 0;      // window of the windowed layers
};

template <DecoderType D>
class decoder_model {
public:
    using model_type = D;
    using ffn_policy = typename D::ffn;
    using norm_policy = typename D::norm;
    using position_weights = typename position_impl<typename D::position>::weights;
    using embedding_weights = typename embedding_impl<typename D::embedding>::weights;

    using logits_weights = typename logits_impl<typename D::logits>::weights;
    using score_cap_weights = typename score_cap_impl<typename D::score_cap>::weights;

    /// What a layer's feed-forward keeps: its policy's own weights where it runs itself
    /// (detail::ffn_has_memory: the RWKV channel mixes), else a dense block or experts.
    using ffn_weights = typename detail::ffn_weights_of<ffn_policy>::type;
    /// What the block shape keeps per layer (block_impl<D::block>::weights: its norms, and
    /// whatever a user's block adds).
    using block_weights = typename detail::block_weights<typename D::block>::type;
    /// One layer: what its block shape binds, its mixer's and its feed-forward's weights.
    struct layer : block_weights {
        typename mixer_impl<typename D::mixer>::weights attn;
        ffn_weights ffn;
        /// Whether the layer has a mixer / a feed-forward (both, unless its block shape
        /// says otherwise: block_impl<B>::parts, policies/block_single.hpp).
        bool mixes = true, feeds = true;
    };

    const decoder_hparams& hparams() const noexcept { return hp_; }
    const gguf::file& file() const noexcept { return *file_; }
    const std::vector<layer>& layers_() const noexcept { return layers_v_; }
    /// Layer il (0-based in the whole model; only the layers of layers() are bound).
    const layer& layer_at(std::size_t il) const noexcept { return layers_v_[il]; }
    /// The layers this model holds: all of them, or a pipeline stage's share.
    const layer_range& layers() const noexcept { return range_; }
    /// Whether it holds the token embedding (its range starts at layer 0) / the
    /// output norm and head (its range ends at the last layer).
    bool has_embedding() const noexcept { return range_.starts_model(); }
    bool has_head() const noexcept { return range_.ends_model(hp_.dims.n_layer); }
    const kernels::weight_view& token_embd() const noexcept { return tok_embd_; }
    const kernels::weight_view& output() const noexcept { return output_; }
    const layers::norm_weights& output_norm() const noexcept { return output_norm_; }
    /// The output head's bias [n_vocab] (Phi-2's output.bias), or null.
    const float* output_bias() const noexcept { return output_bias_; }
    /// What the logits policy read (logits_impl<L>::weights).
    const logits_weights& logit_policy() const noexcept { return logits_w_; }
    /// What the attention-score cap policy read (score_cap_impl<C>::weights).
    const score_cap_weights& score_cap() const noexcept { return score_cap_w_; }
    /// What the position policy bound from the file (position_impl<P>::weights).
    const position_weights& positions() const noexcept { return pos_w_; }
    /// What the embedding policy read (embedding_impl<E>::weights).
    const embedding_weights& embedding() const noexcept { return emb_w_; }
    /// Bytes of the weights the model holds itself (repacked Q4_0 / Q8_0 matrices; 0 when
    /// every weight is a view of the file).
    std::size_t owned_bytes() const noexcept { return owned_bytes_; }
    /// Bytes of the GEMM panels pack_panels made (0 when none).
    std::size_t panel_bytes() const noexcept { return panel_bytes_; }

    /// Packs the F32 / F16 / BF16 projection matrices of the held layers into the GEMM panels
    /// of kernels/encoder_gemm.hpp (owned by the model): every product with them then runs
    /// gemm_prepacked, whatever its row count. For models whose passes are many rows (the
    /// encoders, models/encoder_model.hpp); a second copy of those matrices, in F32. Which:
    /// the attention's Q, K and V (when the three share a type: one stacked GEMM's worth)
    /// and its output; the feed-forward's up, gate and down when `ffn`.
    void pack_panels(bool ffn) {
        auto pack = [&](kernels::weight_view& w) {
            if (w.panels || !kernels::prepacked_weights::packable(w)) return;
            auto p = std::make_shared<const kernels::prepacked_weights>(w);
            w.panels = p.get();
            panel_bytes_ += p->n_panels() * kernels::detail::NR * p->cols() * sizeof(float);
            panels_.push_back(std::move(p));
        };
        for (std::size_t il = range_.first; il <= range_.last() && range_.count; ++il) {
            auto& L = layers_v_[il];
            if constexpr (requires { L.attn.wq; L.attn.wk; L.attn.wv; L.attn.wo; })
                if (L.mixes) {
                    auto& a = L.attn;
                    if (a.wq.type == a.wk.type && a.wq.type == a.wv.type) {
                        pack(a.wq);
                        pack(a.wk);
                        pack(a.wv);
                    }
                    pack(a.wo);
                }
            if constexpr (requires { L.ffn.up; L.ffn.gate; L.ffn.down; })
                if (ffn && L.feeds) {
                    pack(L.ffn.up);
                    pack(L.ffn.gate);
                    pack(L.ffn.down);
                }
        }
    }
    /// Bytes of the file's tensors this model bound (all of them, or a pipeline stage's share).
    std::size_t weight_bytes() const noexcept { return weight_bytes_; }
    std::size_t n_vocab() const noexcept { return hp_.dims.n_vocab; }
    std::size_t n_embd() const noexcept { return hp_.dims.n_embd; }

    /// The resolved architecture with the file's dimensions.
    std::string describe() const {
        using detail::describe_line;
        const auto& d = hp_.dims;
        std::string s = D::describe();
        s += "File\n";
        s += describe_line("arch", hp_.arch);
        s += describe_line("dims", "n_embd " + std::to_string(d.n_embd) + ", layers " + std::to_string(d.n_layer) +
                                       ", heads " + std::to_string(d.n_head) + "/" + std::to_string(d.n_head_kv) +
                                       " x " + std::to_string(d.head_dim) + ", ffn " + std::to_string(d.n_ff) +
                                       ", vocab " + std::to_string(d.n_vocab));
        if (hp_.rotary)
            s += describe_line("rope", std::string(hp_.rope.pairing == kernels::rope_pairing::neox ? "neox" : "adjacent") +
                                           " pairs, " + std::to_string(hp_.rope.n_rot) + " dims, base " +
                                           std::to_string(hp_.rope.freq_base) + ", freq scale " +
                                           std::to_string(hp_.rope.freq_scale) +
                                           (hp_.rope.ext_factor != 0.f ? ", YaRN" : "") +
                                           (hp_.rope.freq_factors ? ", per-pair factors (rope_freqs.weight)" : ""));
        std::string pat;
        for (std::size_t il = 0; il < hp_.windowed.size(); ++il) pat += hp_.windowed[il] ? 'W' : 'G';
        s += describe_line("layers", pat + (hp_.window ? " (W = window " + std::to_string(hp_.window) + ", G = global)"
                                                       : " (G = global causal)"));
        if (d.n_expert > 1)
            s += describe_line("experts", std::to_string(d.n_expert_used) + " of " + std::to_string(d.n_expert));
        if (hp_.rotary && hp_.rope_swa.freq_base != hp_.rope.freq_base)
            s += describe_line("rope (W)", "base " + std::to_string(hp_.rope_swa.freq_base) + " on windowed layers");
        if (hp_.attn.scale != 1.f / std::sqrt(float(d.head_dim)))
            s += describe_line("attn scale", std::to_string(hp_.attn.scale));
        // what a quirk policy read from the file, where it says (LogitSoftCap, AttentionSoftCap)
        if constexpr (requires { logits_impl<typename D::logits>::describe(logits_w_); })
            s += logits_impl<typename D::logits>::describe(logits_w_);
        if constexpr (requires { score_cap_impl<typename D::score_cap>::describe(score_cap_w_); })
            s += score_cap_impl<typename D::score_cap>::describe(score_cap_w_);
        if constexpr (requires { layers_v_[0].attn.q_norm; })
            s += describe_line("qk norm", layers_v_.empty() || !layers_v_[range_.first].attn.q_norm ? "no" : "per-head RMSNorm");
        if (range_.count != d.n_layer) s += describe_line("holds", "layers " + range_.to_string() + " (a pipeline stage)");
        s += describe_line("output", std::string(d.tied_output ? "tied to token_embd" : "output.weight") +
                                         (output_bias_ ? " + output.bias" : ""));
        if (owned_bytes_)
            s += describe_line("repacked", std::to_string(owned_.size()) + " Q4_0 / Q8_0 matrices (" +
                                               std::to_string(owned_bytes_) + " bytes) in the 16-row interleaved layouts");
        s += describe_line("context", std::to_string(hp_.n_ctx_train) + " (training)");
        const auto f = D::figures(d, hp_.n_ctx_train);
        // the held layers whose mixer keeps KV cells (all but a hybrid's recurrent ones), and
        // the recurrent mixers' state
        std::size_t kv_layers = 0, state_floats = 0;
        std::string kinds;
        bool all_feed = true;
        for (std::size_t il = range_.first; il <= range_.last(); ++il) {
            const auto& L = layers_v_[il];
            const bool kv = L.mixes && detail::mixer_keeps_kv<typename D::mixer>(L.attn);
            kv_layers += kv;
            all_feed = all_feed && L.feeds;
            kinds += !L.mixes ? '-' : kv ? 'A' : 'R';
            if (L.mixes) state_floats += detail::mixer_state_floats<typename D::mixer>(L.attn);
            if constexpr (detail::ffn_has_memory<ffn_policy>) // RWKV's channel-mix shift
                if (L.feeds) state_floats += ffn_impl<ffn_policy>::state_floats(L.ffn);
        }
        const bool hybrid = kv_layers != range_.count;
        // figures() counts attention and feed-forward layers; a model with other mixers (a
        // hybrid, parallel mixers with state) or layers without a feed-forward: the file's tensors
        if (!hybrid && all_feed && state_floats == 0) s += describe_line("params", std::to_string(f.parameters));
        else s += describe_line("params", std::to_string(weight_elements_) + " (the bound tensors' elements)");
        if (hybrid) s += describe_line("mixers", kinds + " (A = attention, R = recurrent, - = feed-forward only)");
        s += describe_line("KV cache", std::to_string(hybrid ? f.cache_bytes / d.n_layer * kv_layers : f.cache_bytes) +
                                           " bytes per sequence at the training context");
        // a mixer that says more about its cache (MLA: the latent row against decompressed heads)
        if constexpr (requires { mixer_impl<typename D::mixer>::describe_cache(layers_v_[0].attn); }) {
            if (!layers_v_.empty())
                s += describe_line("KV per token", mixer_impl<typename D::mixer>::describe_cache(layers_v_[range_.first].attn));
        } else if (kv_layers) {
            s += describe_line("KV per token", std::to_string(kv_layers * D::kv_bytes_per_token_per_layer(d.n_head_kv, d.head_dim)) +
                                                   " bytes (" + std::to_string(kv_layers) +
                                                   (kv_layers == 1 ? " attention layer)" : " attention layers)"));
        }
        if (state_floats)
            s += describe_line("state", std::to_string(state_floats * sizeof(float)) +
                                            " bytes per sequence (recurrent mixers" +
                                            (detail::ffn_has_memory<ffn_policy> ? " and feed-forwards" : "") +
                                            ", any context)");
        return s;
    }

    /// Opens and checks `path`.
    static decoder_model load(const std::string& path, const decoder_options& opt = {}) {
        decoder_model m;
        m.file_.emplace(gguf::file::open(path));
        m.init(opt);
        return m;
    }
    /// From an already opened file (kept alive by the model).
    static decoder_model load(gguf::file f, const decoder_options& opt = {}) {
        decoder_model m;
        m.file_.emplace(std::move(f));
        m.init(opt);
        return m;
    }

private:
    decoder_model() = default;

    using heads = typename D::heads;
    using mask = typename D::mask;
    using position = typename D::position;

    void check_dim(dim_t compiled, std::size_t file, const std::string& key) const {
        if (compiled != dynamic && compiled != file)
            throw shape_error(heads::describe() + " but the file has " + key + " = " + std::to_string(file));
    }

public:
    /// What a policy's bind() hook is given: the file, its keys, the hyperparameters
    /// resolved so far, and tensor lookups that check shape and type and record the
    /// tensor as used.
    class binder {
    public:
        binder(decoder_model& m, const arch::llama_hparams& keys, const arch::gguf_conventions& conv,
               const decoder_options& opt)
            : m_(m), keys_(keys), conv_(conv), opt_(opt), prefix_(keys.arch + ".") {}
        const gguf::file& file() const noexcept { return *m_.file_; }
        const arch::llama_hparams& keys() const noexcept { return keys_; }
        const arch::gguf_conventions& conventions() const noexcept { return conv_; }
        const decoder_options& options() const noexcept { return opt_; }
        /// The layer whose tensors are being bound (in a mixer's or block's bind hook).
        std::size_t layer_index() const noexcept { return layer_; }
        void set_layer(std::size_t il) noexcept { layer_ = il; }
        /// "{arch}." — the prefix of the file's architecture keys.
        const std::string& prefix() const noexcept { return prefix_; }
        decoder_hparams& hparams() noexcept { return m_.hp_; }

        /// A tensor of exactly this shape (ggml order; trailing 1s ignored), any type.
        const gguf::tensor_info& tensor(const std::string& name, std::vector<std::uint64_t> ne) {
            const auto& t = file().tensor(name);
            std::size_t nd = t.ne.size();
            while (nd > ne.size() && t.ne[nd - 1] == 1) --nd;
            bool ok = nd == ne.size();
            for (std::size_t i = 0; ok && i < nd; ++i) ok = t.ne[i] == ne[i];
            if (!ok) {
                gguf::tensor_info want;
                want.ne = ne;
                throw shape_error("tensor '" + name + "' has shape " + t.shape_string() + ", expected " + want.shape_string());
            }
            m_.bound_.push_back(&t);
            return t;
        }
        /// An F32 vector of n values.
        const float* vector_f32(const std::string& name, std::size_t n) {
            const auto& t = tensor(name, {n});
            if (t.type != ggml_type::F32)
                throw shape_error("tensor '" + name + "' is " + std::string(type_name(t.type)) + ", expected F32");
            return reinterpret_cast<const float*>(t.data);
        }
        /// The same, or null when the file has no such tensor.
        const float* optional_vector_f32(const std::string& name, std::size_t n) {
            return file().find_tensor(name) ? vector_f32(name, n) : nullptr;
        }
        /// A projection matrix [cols, rows]: a view of the file, or (Q4_0 / Q8_0, repack)
        /// the x16 copy.
        kernels::weight_view matrix(const std::string& name, std::size_t cols, std::size_t rows) {
            return m_.repacked(lookup_matrix(name, cols, rows));
        }
        /// Rows [first, first + n) of a matrix [cols, rows] — one part of a fused projection
        /// (attn_qkv, a merged gate/up): a view of those rows, or their own x16 copy.
        kernels::weight_view matrix_rows(const std::string& name, std::size_t cols, std::size_t rows, std::size_t first,
                                         std::size_t n) {
            auto w = lookup_matrix(name, cols, rows);
            if (first + n > rows)
                throw shape_error("rows " + std::to_string(first) + ".." + std::to_string(first + n - 1) + " of '" +
                                  name + "', which has " + std::to_string(rows));
            w.data = w.row(first);
            w.rows = n;
            return m_.repacked(w);
        }
        /// A matrix read by rows (embeddings): always the file's view.
        kernels::weight_view lookup_matrix(const std::string& name, std::size_t cols, std::size_t rows) {
            const auto& t = tensor(name, {cols, rows});
            m_.check_storage(t);
            return gguf::as_weight(t);
        }
        /// Expert e of a stacked expert tensor [cols, rows, n_expert].
        kernels::weight_view expert(const std::string& name, std::size_t cols, std::size_t rows, std::size_t n_exp,
                                    std::size_t e) {
            const auto& t = tensor(name, {cols, rows, n_exp});
            m_.check_storage(t);
            gguf::check_computable(t);
            kernels::weight_view w;
            w.type = t.type;
            w.cols = cols;
            w.rows = rows;
            w.data = t.data + e * rows * w.row_bytes();
            return w;
        }
        /// Marks a tensor as used without reading it (a 1-expert router: its softmax is 1).
        void ignore(const std::string& name) {
            if (const auto* t = file().find_tensor(name)) m_.bound_.push_back(t);
        }

    private:
        decoder_model& m_;
        const arch::llama_hparams& keys_;
        const arch::gguf_conventions& conv_;
        const decoder_options& opt_;
        std::string prefix_;
        std::size_t layer_ = 0;
    };

private:
    kernels::weight_view repacked(kernels::weight_view w) {
        const std::size_t rows = w.rows, cols = w.cols;
        const auto L = kernels::x16_layout_for(w.type);
        if (kernels::has_x16 && repack_ && L != quant::weight_layout::rows && quant::x16::fits(rows, cols)) {
            const std::size_t n = rows * w.row_bytes();
            std::shared_ptr<std::uint8_t> buf = allocate_weight_buffer(n);
            const auto* src = static_cast<const std::uint8_t*>(w.data);
            quant::x16::repack(L, src, rows, cols, buf.get());
            file_->release_pages(static_cast<const std::byte*>(w.data), n);
            w.data = buf.get();
            w.layout = L;
            owned_.push_back(std::move(buf));
            owned_bytes_ += n;
        }
        return w;
    }
    void check_storage(const gguf::tensor_info& t) const {
        using S = typename D::storage;
        if constexpr (S::fixed)
            if (t.type != S::type)
                throw shape_error("tensor '" + t.name + "' is " + std::string(type_name(t.type)) + " but the model is compiled for " +
                                  S::describe());
        const auto tr = traits_of(t.type);
        if (tr.block_size == 0 || t.ne[0] % tr.block_size != 0)
            throw shape_error("tensor '" + t.name + "' of type " + std::string(type_name(t.type)) + " has " +
                              std::to_string(t.ne[0]) + " columns, not a multiple of its block size");
    }

    template <class P>
    layers::ffn_weights dense_ffn(binder& b, const std::string& blk, std::size_t n_embd, std::size_t n_ff) {
        if constexpr (requires { ffn_impl<P>::bind(b, blk, n_embd, n_ff); }) {
            return ffn_impl<P>::bind(b, blk, n_embd, n_ff); // a policy with its own tensors
        } else {
            layers::ffn_weights w;
            // a gated block whose gate and up are one ffn_up of 2 x n_ff rows (Phi-3), gate first
            const bool fused = P::gated && !file_->find_tensor(blk + "ffn_gate.weight") &&
                               file_->find_tensor(blk + "ffn_up.weight") &&
                               file_->tensor(blk + "ffn_up.weight").ne.size() >= 2 &&
                               file_->tensor(blk + "ffn_up.weight").ne[1] == 2 * n_ff;
            if (fused) {
                w.gate = b.matrix_rows(blk + "ffn_up.weight", n_embd, 2 * n_ff, 0, n_ff);
                w.up = b.matrix_rows(blk + "ffn_up.weight", n_embd, 2 * n_ff, n_ff, n_ff);
                if (const float* bias = b.optional_vector_f32(blk + "ffn_up.bias", 2 * n_ff)) {
                    w.gate_bias = bias;
                    w.up_bias = bias + n_ff;
                }
            } else {
                if constexpr (P::gated) {
                    w.gate = b.matrix(blk + "ffn_gate.weight", n_embd, n_ff);
                    w.gate_bias = b.optional_vector_f32(blk + "ffn_gate.bias", n_ff);
                }
                w.up = b.matrix(blk + "ffn_up.weight", n_embd, n_ff);
                w.up_bias = b.optional_vector_f32(blk + "ffn_up.bias", n_ff);
            }
            w.down = b.matrix(blk + "ffn_down.weight", n_ff, n_embd);
            w.down_bias = b.optional_vector_f32(blk + "ffn_down.bias", n_embd);
            // an activation with parameters per layer reads them from the file (XieluMLP)
            if constexpr (requires { ffn_impl<P>::bind_activation(b, w.act); })
                ffn_impl<P>::bind_activation(b, w.act);
            return w;
        }
    }
    static layers::ffn_weights expert_ffn(binder& b, const std::string& blk, std::size_t n_embd, std::size_t n_ff,
                                          std::size_t n_exp, std::size_t e, bool gated) {
        layers::ffn_weights w;
        if (gated) w.gate = b.expert(blk + "ffn_gate_exps.weight", n_embd, n_ff, n_exp, e);
        w.up = b.expert(blk + "ffn_up_exps.weight", n_embd, n_ff, n_exp, e);
        w.down = b.expert(blk + "ffn_down_exps.weight", n_ff, n_embd, n_exp, e);
        // per-expert biases [rows, n_expert] (gpt-oss), bound whenever the file has them
        auto bias = [&](const std::string& name, std::size_t rows) -> const float* {
            if (!b.file().find_tensor(name)) return nullptr;
            const auto& t = b.tensor(name, {rows, n_exp});
            if (t.type != ggml_type::F32)
                throw shape_error("tensor '" + name + "' is " + std::string(type_name(t.type)) + ", expected F32");
            return reinterpret_cast<const float*>(t.data) + e * rows;
        };
        if (gated) w.gate_bias = bias(blk + "ffn_gate_exps.bias", n_ff);
        w.up_bias = bias(blk + "ffn_up_exps.bias", n_ff);
        w.down_bias = bias(blk + "ffn_down_exps.bias", n_embd);
        return w;
    }
    /// Layer il's mixture of experts: a dense block on the policy's leading dense layers,
    /// else the router (with its rule), the experts and the shared expert.
    void bind_moe(binder& b, const std::string& blk, std::size_t il, std::size_t n_dense, const arch::llama_hparams& h,
                  std::size_t n_ff, layers::moe_weights& M) {
        using F = ffn_policy;
        const std::size_t E = h.n_embd;
        using dense_rule = dense_layers_impl<typename F::dense>;
        bool dense = il < n_dense;
        if constexpr (requires { dense_rule::dense(b, il); }) dense = dense || dense_rule::dense(b, il);
        if (dense) {
            M.dense = true;
            M.dense_ffn = dense_ffn<typename F::expert>(b, blk, E, h.n_ff);
            return;
        }
        M.router = b.matrix(blk + "ffn_gate_inp.weight", E, h.n_expert);
        M.router_bias = b.optional_vector_f32(blk + "ffn_gate_inp.bias", h.n_expert);
        M.n_used = h.n_expert_used;
        router_impl<typename F::router>::bind(b, blk, M);
        M.experts.resize(h.n_expert);
        for (std::size_t e = 0; e < h.n_expert; ++e)
            M.experts[e] = expert_ffn(b, blk, E, n_ff, h.n_expert, e, F::expert::gated);
        shared_expert_impl<typename F::shared>::bind(b, blk, E, h.n_ff, n_ff, M);
    }

    void init(const decoder_options& opt) {
        repack_ = opt.repack;
        const arch::gguf_conventions conv =
            opt.conventions ? *opt.conventions : conventions_of(file_->architecture(), decoder_architectures{});
        const auto h = arch::read_llama_hparams(*file_, conv);
        range_ = opt.layers.resolved(h.n_layer);
        binder b(*this, h, conv, opt);
        output_norm_name_ = conv.output_norm;
        hp_.arch = h.arch;
        auto& d = hp_.dims;
        d.n_layer = h.n_layer;
        d.n_embd = h.n_embd;
        d.n_vocab = h.n_vocab;
        d.n_head = h.n_head;
        d.n_head_kv = h.n_head_kv;
        d.head_dim = h.head_dim;
        hp_.n_ctx_train = h.n_ctx_train;
        const float eps = norm_impl<typename D::base_norm>::eps(h); // the norm policy's own key
        hp_.norm_eps = eps;
        check_dim(D::n_head, h.n_head, h.arch + ".attention.head_count");
        check_dim(D::n_head_kv, h.n_head_kv, h.arch + ".attention.head_count_kv");
        check_dim(D::head_dim, h.head_dim, "head dimension");
        // the mask policy's window and windowed layers, checked against the file's keys
        auto lw = mask_impl<mask>::layers(h);
        // a bidirectional mask answers for {arch}.attention.causal (llama.cpp's encoders write
        // false; a causal file would run with every query seeing later tokens)
        if constexpr (!mask::causal)
            if (const std::string ck = h.arch + ".attention.causal"; file_->get_or<bool>(ck, false))
                throw shape_error(ck + " = true: the file is a causal model, but " + mask::describe() +
                                  " lets every query see later tokens");
        hp_.window = lw.window;
        hp_.windowed = std::move(lw.windowed);
        d.window = hp_.window;

        // attention
        hp_.attn.n_head = h.n_head;
        hp_.attn.n_head_kv = h.n_head_kv;
        hp_.attn.head_dim = h.head_dim;
        hp_.attn.scale = attn_scale_impl<typename D::attn_scale>::scale(b); // the scale rule's own keys
        hp_.attn.norm_eps = eps;
        score_cap_impl<typename D::score_cap>::bind(b, score_cap_w_); // the policy's own key
        embedding_impl<typename D::embedding>::bind(b, emb_w_);
        hp_.rotary = position::rotary;
        position_impl<position>::bind(b, pos_w_);

        // tensors
        const std::size_t E = h.n_embd;
        // a pipeline stage binds the embedding only at the first layer, the head only at the last
        const bool first_stage = has_embedding(), last_stage = has_head();
        // (a post-norm block's last norm ends the model: no output_norm, policies/block_post_norm.hpp)
        if (last_stage && detail::block_final_norm<typename D::block>)
            output_norm_ = {b.vector_f32(output_norm_name_ + ".weight", E),
                            b.optional_vector_f32(output_norm_name_ + ".bias", E), eps};
        d.tied_output = !file_->find_tensor("output.weight");
        if (!d.tied_output) {
            if (first_stage) tok_embd_ = b.lookup_matrix("token_embd.weight", E, h.n_vocab);
            if (last_stage) output_ = b.matrix("output.weight", E, h.n_vocab);
        } else if (first_stage || last_stage) {
            // Tied: the one matrix is the output head, read whole every step, and the
            // embedding, one row per token: it takes the x16 layout like any projection
            // (embedding rows are gathered back from it, see kernels::embedding_row).
            tok_embd_ = b.matrix("token_embd.weight", E, h.n_vocab);
            output_ = tok_embd_;
        }
        // the head's bias (Phi-2), bound whenever the file has one (llama.cpp's TENSOR_NOT_REQUIRED)
        if (last_stage) output_bias_ = b.optional_vector_f32("output.bias", h.n_vocab);
        logits_impl<typename D::logits>::bind(b, logits_w_);
        constexpr bool moe = layers::detail::is_moe_v<ffn_policy>;
        // a layer with experts (the first layers of DeepSeek / GLM-4.5 may be dense)
        const bool file_moe = std::any_of(file_->tensors().begin(), file_->tensors().end(), [](const auto& t) {
            return t.name.ends_with(".ffn_gate_exps.weight") || t.name.ends_with(".ffn_up_exps.weight");
        });
        if (file_moe && h.n_expert == 0)
            throw shape_error("the file has expert tensors but no " + h.arch + ".expert_count");
        std::size_t n_ff = file_moe ? h.n_ff_exp : h.n_ff;
        if (n_ff == 0 && detail::block_feeds_forward<typename D::block>)
            throw format_error("the file gives no feed-forward length");
        d.n_ff = n_ff;
        if constexpr (moe) {
            using F = ffn_policy;
            if (!file_moe)
                throw shape_error(F::describe() + " but the file has a dense feed-forward (no ffn_*_exps tensors)");
            if (F::experts != dynamic && F::experts != h.n_expert)
                throw shape_error(F::describe() + " but the file has " + h.arch + ".expert_count = " + std::to_string(h.n_expert));
            if (F::top_k != dynamic && F::top_k != h.n_expert_used)
                throw shape_error(F::describe() + " but the file has " + h.arch + ".expert_used_count = " +
                                  std::to_string(h.n_expert_used));
            if (F::expert::hidden != dynamic && F::expert::hidden != n_ff)
                throw shape_error(F::describe() + " but the file's expert feed-forward length is " + std::to_string(n_ff));
            d.n_expert = h.n_expert;
            d.n_expert_used = h.n_expert_used;
        } else {
            if (ffn_policy::hidden != dynamic && ffn_policy::hidden != n_ff)
                throw shape_error(ffn_policy::describe() + " but the file has " + h.arch + ".feed_forward_length = " +
                                  std::to_string(n_ff));
            if (file_moe && h.n_expert != 1)
                throw shape_error(ffn_policy::describe() + " is dense but the file is a mixture of " +
                                  std::to_string(h.n_expert) + " experts: use MoE<E, K, " + ffn_policy::describe() + ">");
        }

        // the activation the converter recorded, against the compiled feed-forward's (ModernBERT)
        if (const std::string ak = h.arch + ".hidden_activation"; file_->has(ak))
            detail::check_hidden_activation<ffn_policy>(ak, file_->get<std::string>(ak));
        std::size_t n_dense = 0; // the feed-forward's leading dense layers
        if constexpr (moe) n_dense = dense_layers_impl<typename ffn_policy::dense>::leading(b);
        layers_v_.resize(h.n_layer);
        for (std::size_t il = range_.first; il <= range_.last(); ++il) {
            const std::string blk = "blk." + std::to_string(il) + ".";
            auto& L = layers_v_[il];
            b.set_layer(il);
            // the norms (and whatever else) the block shape has
            block_impl<typename D::block>::template bind<D>(b, il, blk, static_cast<block_weights&>(L), eps);
            // the sublayers this layer has (both, unless the block shape has one per layer)
            const layer_parts parts = detail::block_parts<typename D::block>(b, il);
            L.mixes = parts.mixer;
            L.feeds = parts.ffn;
            if (parts.mixer) mixer_impl<typename D::mixer>::bind(b, blk, L.attn);
            if (!parts.ffn) continue;
            if constexpr (moe) {
                bind_moe(b, blk, il, n_dense, h, n_ff, L.ffn);
            } else if constexpr (detail::ffn_has_memory<ffn_policy>) {
                // a feed-forward that runs itself (the RWKV channel mixes) binds its own tensors
                if (file_moe)
                    throw shape_error(ffn_policy::describe() + " but the file has expert tensors (ffn_*_exps)");
                L.ffn = ffn_impl<ffn_policy>::bind(b, blk, E, n_ff);
            } else if (file_moe) {
                b.ignore(blk + "ffn_gate_inp.weight"); // one expert: its routing weight is 1
                L.ffn = expert_ffn(b, blk, E, n_ff, 1, 0, ffn_policy::gated);
            } else {
                // a width per layer where the file gives one (nemotron_h)
                const std::size_t ff = h.n_ff_per_layer.empty() ? n_ff : h.n_ff_per_layer[il];
                if (ff == 0) throw format_error(h.arch + ".feed_forward_length[" + std::to_string(il) + "] = 0 on a layer "
                                                "with a feed-forward");
                L.ffn = dense_ffn<ffn_policy>(b, blk, E, ff);
            }
        }
        check_all_bound();
        // the key ledger: a pipeline stage binds only its layers, and a key that only a mixer
        // of another stage's layers reads (a hybrid's shortconv.l_cache) is that stage's to
        // answer for: the ledger is checked where the model holds every layer
        if (range_.count == h.n_layer) check_keys_read(*file_, opt.unread, opt.known_unused_keys);
    }

    /// Every tensor of the file was bound by some policy: one left over means the
    /// compiled structure would silently drop part of the model.
    /// (A pipeline stage answers for its own layers' tensors and the ends it holds: the
    /// other stages check theirs.)
    void check_all_bound() {
        std::vector<const gguf::tensor_info*> used = bound_;
        std::sort(used.begin(), used.end());
        used.erase(std::unique(used.begin(), used.end()), used.end());
        for (const auto* t : used) {
            weight_bytes_ += t->n_bytes;
            weight_elements_ += t->n_elements();
        }
        for (const auto& t : file_->tensors())
            if (!std::binary_search(used.begin(), used.end(), &t) && stage_answers_for(t.name))
                throw shape_error("tensor '" + t.name + "' of the file is not used by the compiled structure: the model would run without it; "
                                  "compose the policy that "
                                  "reads it (for example SelfAttention binds attn_q.bias, PrePostNorm binds "
                                  "post_attention_norm.weight)");
    }

    /// Whether this model's range answers for tensor `name` being bound: a layer's
    /// tensors by the stage holding the layer, the embedding and head by the end stages.
    bool stage_answers_for(const std::string& name) const {
        const long il = layer_of_tensor(name);
        if (il >= 0) return range_.contains(std::size_t(il));
        if (name == "token_embd.weight") return has_embedding() || (hp_.dims.tied_output && has_head());
        if (name.starts_with("output.") || name.starts_with(output_norm_name_ + ".")) return has_head();
        return true; // position tables, rope factors, ...: bound by every stage
    }

    std::optional<gguf::file> file_;
    layer_range range_{};
    decoder_hparams hp_;
    std::vector<layer> layers_v_;
    kernels::weight_view tok_embd_{}, output_{};
    position_weights pos_w_{};
    embedding_weights emb_w_{};
    bool repack_ = true;
    std::vector<std::shared_ptr<std::uint8_t>> owned_; // repacked matrices (stable addresses across moves)
    std::size_t owned_bytes_ = 0;
    std::vector<std::shared_ptr<const kernels::prepacked_weights>> panels_; // pack_panels (stable addresses)
    std::size_t panel_bytes_ = 0;
    std::size_t weight_bytes_ = 0;
    std::size_t weight_elements_ = 0; // of the bound tensors (describe's params for hybrids)
    std::vector<const gguf::tensor_info*> bound_;      // tensors some policy bound (load time only)
    layers::norm_weights output_norm_{};
    std::string output_norm_name_ = "output_norm"; // gguf_conventions::output_norm
    const float* output_bias_ = nullptr;
    logits_weights logits_w_{};
    score_cap_weights score_cap_w_{};
};

/// The one describe spelling of the three families (decoder, encoder, RWKV).
template <DecoderType D>
std::string describe(const decoder_model<D>& m) {
    return m.describe();
}

namespace detail {
/// Whether the decoder registered for `arch` scales its embedding rows by sqrt(n_embd) (its
/// preset names ScaledEmbedding: gemma, gemma2, gemma3), or nullopt when no entry has that name.
template <class... Es>
std::optional<bool> registered_scaled_embedding(std::string_view arch, architecture_list<Es...>) {
    std::optional<bool> r;
    // a fold over ||: stops at the first entry of that name
    (void)((std::string_view(Es::gguf_name) == arch &&
            (r = std::is_same_v<typename Es::model::embedding, ScaledEmbedding>, true)) ||
           ...);
    return r;
}
/// The embedding scale is the architecture's, not stored in the file: a Decoder<...> loaded
/// without an entry must agree with the preset registered for the file's architecture.
template <DecoderType D>
void check_embedding_scale(const gguf::file& f) {
    const auto registered = registered_scaled_embedding(f.architecture(), decoder_architectures{});
    constexpr bool scaled = std::is_same_v<typename D::embedding, ScaledEmbedding>;
    if (registered && *registered != scaled)
        throw shape_error(D::embedding::describe() + " but '" + std::string(f.architecture()) + "' files " +
                          (scaled ? "use the embedding as stored: use PlainEmbedding"
                                  : "scale the embedding by sqrt(n_embd): use ScaledEmbedding"));
}
} // namespace detail

/// Loads a decoder model; Model is a Decoder<...> type. Without conventions in `opt`, the
/// file's architecture's come from the registry, and its embedding scale must be the
/// registered preset's (a gemma3 file with PlainEmbedding is a shape_error).
template <DecoderType Model>
decoder_model<Model> load_model(const std::string& path, const decoder_options& opt = {}) {
    auto f = gguf::file::open(path);
    if (!opt.conventions) detail::check_embedding_scale<Model>(f);
    return decoder_model<Model>::load(std::move(f), opt);
}

/// Loads a file as registry entry A's structure with A's conventions
/// (models/registry.hpp), e.g. load_model<presets::qwen2_architecture>("qwen2.gguf").
/// An entry with accepts() must accept the file: entries of one name tell their files
/// apart by it (granitehybrid's NoPE and RoPE entries by rope.scaling.finetuned, a key
/// neither structure reads), so another entry of that name would run it silently wrong.
template <ArchitectureEntry A>
    requires DecoderType<typename A::model>
decoder_model<typename A::model> load_model(gguf::file f, decoder_options opt = {}) {
    if constexpr (requires { { A::accepts(f) } -> std::convertible_to<bool>; })
        if (!A::accepts(f))
            throw shape_error("this '" + std::string(f.architecture()) + "' file is not one the entry for '" +
                              std::string(A::gguf_name) + "' given to load_model takes (its accepts() is false): "
                              "load it through the registry (with_architecture), which picks the entry that does");
    static constexpr arch::gguf_conventions conv = conventions_of<A>();
    if (!opt.conventions) opt.conventions = &conv;
    // keys the entry's converter writes that its structure does not read, with the reason
    // (the entry's `known_unused_keys`, io/key_ledger.hpp), unless the caller gives its own
    if constexpr (requires { std::span<const known_unused_key>(A::known_unused_keys); })
        if (opt.known_unused_keys.empty()) opt.known_unused_keys = A::known_unused_keys;
    return decoder_model<typename A::model>::load(std::move(f), opt);
}
template <ArchitectureEntry A>
    requires DecoderType<typename A::model>
decoder_model<typename A::model> load_model(const std::string& path, const decoder_options& opt = {}) {
    return load_model<A>(gguf::file::open(path), opt);
}

} // namespace archetype
