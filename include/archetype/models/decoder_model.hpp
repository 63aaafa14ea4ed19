#pragma once
// Loading a Decoder<...> from a GGUF file of llama.cpp's `llama`, `mellum` or
// `gemma3` architecture. The file's hyperparameters are checked against the compiled
// structure (a static dimension or window that disagrees is a shape_error naming
// both values); where the file is silent the compiled policy decides. Weights
// are views into the file's mapping (no copy). `output.weight` absent -> the
// output head is the token embedding (tied).
//
// Positions: the compiled policy decides, whatever the file's architecture uses
// (llama/mellum/gemma3 files are RoPE models): RoPE and NoPE, ALiBi and
// Sinusoidal (nothing read from the file), LearnedPositions<N>
// (`position_embd.weight`, [n_embd, positions]), RelativeBias<B>
// (`blk.N.attn_rel_b.weight`, [n_head, B] per layer, or layer 0's for all);
// see layers/positions.hpp and docs/decoder.md.
//
//   using Mistral = Decoder<GQA<32, 8>, RoPE, SlidingWindow<4096>, RollingCache>;
//   auto model = archetype::load_model<Mistral>("mistral.gguf");
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "archetype/core/error.hpp"
#include "archetype/core/half.hpp"
#include "archetype/core/weight_buffer.hpp"
#include "archetype/io/arch/llama.hpp"
#include "archetype/io/gguf.hpp"
#include "archetype/kernels/convert.hpp"
#include "archetype/kernels/matmul.hpp"
#include "archetype/layers/attention.hpp"
#include "archetype/layers/ffn.hpp"
#include "archetype/layers/norm.hpp"
#include "archetype/layers/rope.hpp"
#include "archetype/models/decoder.hpp"

namespace archetype {

namespace detail {
template <class T>
inline constexpr bool is_decoder_v = false;
template <class... Ps>
inline constexpr bool is_decoder_v<Decoder<Ps...>> = true;

template <class T>
inline constexpr bool is_interleave_v = requires { T::period; };
} // namespace detail

template <class T>
concept DecoderType = detail::is_decoder_v<T>;

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
    float embd_scale = 1.f;       // ScaledEmbedding: sqrt(n_embd)
    float logit_softcap = 0.f;    // 0 = none; else logits = c * tanh(logits / c)
    std::vector<bool> windowed;  // per layer
    std::size_t window = 0;      // window of the windowed layers
    /// Position scheme other than RoPE (layers/positions.hpp): none (RoPE, NoPE),
    /// additive attention biases (ALiBi, T5 relative buckets) or absolute vectors
    /// added to the embeddings (sinusoidal, learned).
    enum class positions { none, alibi, relative, sinusoidal, learned } pos_kind = positions::none;
    std::size_t n_pos = 0;         // LearnedPositions: rows of position_embd.weight (positions 0 .. n_pos-1)
    std::size_t rel_buckets = 0;   // RelativeBias: buckets of attn_rel_b
};

template <DecoderType D>
class decoder_model {
public:
    using model_type = D;
    using ffn_policy = typename D::ffn;
    using norm_policy = typename D::norm;

    struct layer {
        layers::norm_weights attn_norm, ffn_norm;
        layers::norm_weights attn_post_norm, ffn_post_norm; // PrePostNorm only
        layers::attention_weights attn;
        layers::ffn_weights_t<ffn_policy> ffn;
    };

    const decoder_hparams& hparams() const noexcept { return hp_; }
    const gguf::file& file() const noexcept { return *file_; }
    const std::vector<layer>& layers_() const noexcept { return layers_v_; }
    const layer& layer_at(std::size_t il) const noexcept { return layers_v_[il]; }
    const kernels::weight_view& token_embd() const noexcept { return tok_embd_; }
    const kernels::weight_view& output() const noexcept { return output_; }
    const layers::norm_weights& output_norm() const noexcept { return output_norm_; }
    /// LearnedPositions: position_embd.weight, one row (n_embd) per position.
    const kernels::weight_view& position_embd() const noexcept { return pos_embd_; }
    /// RelativeBias: layer il's table [bucket][head] (layer 0's when the file has one table, as T5).
    const float* relative_bias(std::size_t il) const noexcept {
        return rel_bias_[rel_bias_.size() == 1 ? 0 : il].data();
    }
    /// Bytes of the weights the model holds itself (repacked Q4_0 / Q8_0 matrices; 0 when
    /// every weight is a view of the file).
    std::size_t owned_bytes() const noexcept { return owned_bytes_; }
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
                                           (hp_.rope.ext_factor != 0.f ? ", YaRN" : ""));
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
        if (hp_.logit_softcap != 0.f) s += describe_line("softcap", std::to_string(hp_.logit_softcap) + " (final logits)");
        s += describe_line("qk norm", layers_v_.empty() || !layers_v_[0].attn.q_norm ? "no" : "per-head RMSNorm");
        s += describe_line("output", d.tied_output ? "tied to token_embd" : "output.weight");
        if (owned_bytes_)
            s += describe_line("repacked", std::to_string(owned_.size()) + " Q4_0 / Q8_0 matrices (" +
                                               std::to_string(owned_bytes_) + " bytes) in the 16-row interleaved layouts");
        s += describe_line("context", std::to_string(hp_.n_ctx_train) + " (training)");
        const auto f = D::figures(d, hp_.n_ctx_train);
        s += describe_line("params", std::to_string(f.parameters));
        s += describe_line("KV cache", std::to_string(f.cache_bytes) + " bytes per sequence at the training context");
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

    const gguf::tensor_info& tensor(const std::string& name, std::vector<std::uint64_t> ne) const {
        const auto& t = file_->tensor(name);
        std::size_t nd = t.ne.size();
        while (nd > ne.size() && t.ne[nd - 1] == 1) --nd;
        bool ok = nd == ne.size();
        for (std::size_t i = 0; ok && i < nd; ++i) ok = t.ne[i] == ne[i];
        if (!ok) {
            gguf::tensor_info want;
            want.ne = ne;
            throw shape_error("tensor '" + name + "' has shape " + t.shape_string() + ", expected " + want.shape_string());
        }
        return t;
    }
    const float* vector_f32(const std::string& name, std::size_t n) const {
        const auto& t = tensor(name, {n});
        if (t.type != ggml_type::F32)
            throw shape_error("tensor '" + name + "' is " + std::string(type_name(t.type)) + ", expected F32");
        return reinterpret_cast<const float*>(t.data);
    }
    /// A projection matrix: a view of the file, or (Q4_0 / Q8_0, repack) the x16 copy.
    kernels::weight_view matrix(const std::string& name, std::size_t cols, std::size_t rows) {
        auto w = lookup_matrix(name, cols, rows);
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
    /// A matrix read by rows (embeddings): always the file's view.
    kernels::weight_view lookup_matrix(const std::string& name, std::size_t cols, std::size_t rows) const {
        const auto& t = tensor(name, {cols, rows});
        check_storage(t);
        return gguf::as_weight(t);
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
    /// Expert e of a stacked expert tensor [cols, rows, n_expert].
    kernels::weight_view expert(const std::string& name, std::size_t cols, std::size_t rows, std::size_t n_exp,
                                std::size_t e) const {
        const auto& t = tensor(name, {cols, rows, n_exp});
        check_storage(t);
        kernels::weight_view w;
        w.type = t.type;
        w.cols = cols;
        w.rows = rows;
        w.data = t.data + e * rows * w.row_bytes();
        return w;
    }

    layers::ffn_weights dense_ffn(const std::string& b, std::size_t n_embd, std::size_t n_ff) {
        layers::ffn_weights w;
        if constexpr (ffn_policy::gated) w.gate = matrix(b + "ffn_gate.weight", n_embd, n_ff);
        w.up = matrix(b + "ffn_up.weight", n_embd, n_ff);
        w.down = matrix(b + "ffn_down.weight", n_ff, n_embd);
        return w;
    }
    layers::ffn_weights expert_ffn(const std::string& b, std::size_t n_embd, std::size_t n_ff, std::size_t n_exp,
                                   std::size_t e, bool gated) const {
        layers::ffn_weights w;
        if (gated) w.gate = expert(b + "ffn_gate_exps.weight", n_embd, n_ff, n_exp, e);
        w.up = expert(b + "ffn_up_exps.weight", n_embd, n_ff, n_exp, e);
        w.down = expert(b + "ffn_down_exps.weight", n_ff, n_embd, n_exp, e);
        return w;
    }

    void init(const decoder_options& opt) {
        repack_ = opt.repack;
        static_assert(std::is_same_v<typename D::base_norm, RMSNorm>,
                      "archetype: llama, mellum and gemma3 files use RMSNorm: use RMSNorm (the default)");
        const auto h = arch::read_llama_hparams(*file_);
        hp_.arch = h.arch;
        auto& d = hp_.dims;
        d.n_layer = h.n_layer;
        d.n_embd = h.n_embd;
        d.n_vocab = h.n_vocab;
        d.n_head = h.n_head;
        d.n_head_kv = h.n_head_kv;
        d.head_dim = h.head_dim;
        hp_.n_ctx_train = h.n_ctx_train;
        hp_.norm_eps = h.rms_eps;
        check_dim(D::n_head, h.n_head, h.arch + ".attention.head_count");
        check_dim(D::n_head_kv, h.n_head_kv, h.arch + ".attention.head_count_kv");
        check_dim(D::head_dim, h.head_dim, "head dimension");

        // mask / windows
        hp_.windowed.assign(h.n_layer, false);
        const std::size_t file_w = h.n_swa;
        auto window_of = [&](dim_t compiled, const std::string& what) -> std::size_t {
            if (compiled != dynamic) {
                if (file_w != 0 && file_w != compiled)
                    throw shape_error(what + " but the file has " + h.arch + ".attention.sliding_window = " +
                                      std::to_string(file_w));
                return compiled;
            }
            if (file_w == 0)
                throw shape_error(what + " takes the window from the file, but the file has no " + h.arch +
                                  ".attention.sliding_window");
            return file_w;
        };
        if constexpr (!mask::windowed) {
            if (file_w != 0)
                for (std::size_t il = 0; il < h.n_layer; ++il)
                    if (h.swa_layers[il])
                        throw shape_error(mask::describe() + " but the file has " + h.arch +
                                          ".attention.sliding_window = " + std::to_string(file_w) + " on layer " +
                                          std::to_string(il));
        } else if constexpr (!detail::is_interleave_v<mask>) {
            hp_.window = window_of(mask::window, mask::describe());
            for (std::size_t il = 0; il < h.n_layer; ++il) {
                if (h.swa_pattern_in_file && !h.swa_layers[il])
                    throw shape_error(mask::describe() + " windows every layer but the file's " + h.arch +
                                      ".attention.sliding_window_pattern makes layer " + std::to_string(il) + " global");
                hp_.windowed[il] = true;
            }
        } else {
            static_assert(!detail::is_interleave_v<mask> || !mask::global::windowed,
                          "archetype: Interleave<N, Local, Global>: the decoder run time needs Global = Causal");
            hp_.window = window_of(mask::local::window, mask::describe());
            for (std::size_t il = 0; il < h.n_layer; ++il) {
                if constexpr (mask::period == dynamic) {
                    if (!h.swa_pattern_in_file)
                        throw shape_error(mask::describe() + " takes the layer pattern from the file, but the file has no " +
                                          h.arch + ".attention.sliding_window_pattern");
                    hp_.windowed[il] = h.swa_layers[il];
                } else {
                    hp_.windowed[il] = mask::is_local(il);
                    if (h.swa_pattern_in_file && h.swa_layers[il] != hp_.windowed[il])
                        throw shape_error(mask::describe() + " makes layer " + std::to_string(il) +
                                          (hp_.windowed[il] ? " windowed" : " global") + " but the file's " + h.arch +
                                          ".attention.sliding_window_pattern says " +
                                          (h.swa_layers[il] ? "windowed" : "global"));
                }
            }
        }
        d.window = hp_.window;

        // attention
        hp_.attn.n_head = h.n_head;
        hp_.attn.n_head_kv = h.n_head_kv;
        hp_.attn.head_dim = h.head_dim;
        hp_.attn.scale = h.attn_scale != 0.f ? h.attn_scale : 1.f / std::sqrt(float(h.head_dim));
        hp_.logit_softcap = h.final_logit_softcap;
        // the embedding scale is the architecture's, not stored in the file: check the policy agrees
        using Emb = typename D::embedding;
        if (Emb::scaled != (h.arch == "gemma3"))
            throw shape_error(Emb::describe() + " but '" + h.arch + "' files " +
                              (Emb::scaled ? "use the embedding as stored: use PlainEmbedding"
                                           : "scale the embedding by sqrt(n_embd): use ScaledEmbedding"));
        if constexpr (Emb::scaled) hp_.embd_scale = std::sqrt(float(h.n_embd));
        hp_.attn.norm_eps = h.rms_eps;

        // position
        hp_.rotary = position::rotary;
        if constexpr (position::rotary) {
            auto& r = hp_.rope;
            r.n_rot = h.n_rot;
            r.freq_base = h.rope_freq_base;
            if constexpr (position::base != 0) {
                if (file_->has(h.arch + ".rope.freq_base") && h.rope_freq_base != float(position::base))
                    throw shape_error(position::describe() + " but the file has " + h.arch +
                                      ".rope.freq_base = " + std::to_string(h.rope_freq_base));
                r.freq_base = float(position::base);
            }
            if (opt.rope_freq_base > 0.f) r.freq_base = opt.rope_freq_base;
            if constexpr (position::pairing == rope_pairing_policy::from_file)
                r.pairing = h.rope_neox ? kernels::rope_pairing::neox : kernels::rope_pairing::adjacent;
            else
                r.pairing = position::pairing == rope_pairing_policy::neox ? kernels::rope_pairing::neox
                                                                            : kernels::rope_pairing::adjacent;
            r.freq_scale = h.rope_freq_scale;
            if constexpr (position::scale_num != position::scale_den)
                r.freq_scale = float(position::scale_den) / float(position::scale_num);
            r.ext_factor = h.yarn_ext_factor;
            r.attn_factor = h.yarn_attn_factor;
            r.beta_fast = h.yarn_beta_fast;
            r.beta_slow = h.yarn_beta_slow;
            r.n_ctx_orig = h.rope_n_ctx_orig;
            hp_.rope_swa = r;
            // llama.cpp's override (cparams.rope_freq_base) leaves the windowed layers' own base alone
            if (h.arch == "gemma3") {
                hp_.rope_swa.freq_base = h.rope_freq_base_swa;
                hp_.rope_swa.freq_scale = 1.f;
            }
        }

        using K = decoder_hparams::positions;
        constexpr std::string_view pn = position::name;
        hp_.pos_kind = pn == "ALiBi" ? K::alibi : pn == "RelativeBias" ? K::relative : pn == "Sinusoidal" ? K::sinusoidal
                       : pn == "LearnedPositions" ? K::learned : K::none;

        // tensors
        const std::size_t E = h.n_embd, qw = h.n_head * h.head_dim, kw = h.n_head_kv * h.head_dim, hd = h.head_dim;
        output_norm_ = {vector_f32("output_norm.weight", E), nullptr, h.rms_eps};
        if (file_->find_tensor("output.weight")) {
            tok_embd_ = lookup_matrix("token_embd.weight", E, h.n_vocab);
            output_ = matrix("output.weight", E, h.n_vocab);
        } else {
            // Tied: the one matrix is the output head, read whole every step, and the
            // embedding, one row per token: it takes the x16 layout like any projection
            // (embedding rows are gathered back from it, see embedding_row).
            tok_embd_ = matrix("token_embd.weight", E, h.n_vocab);
            output_ = tok_embd_;
            d.tied_output = true;
        }
        if (hp_.pos_kind == K::learned) load_learned_positions(E);
        if (hp_.pos_kind == K::relative) load_relative_bias(h.n_layer, h.n_head);
        constexpr bool moe = layers::detail::is_moe_v<ffn_policy>;
        const bool file_moe = file_->find_tensor("blk.0.ffn_gate_exps.weight") || file_->find_tensor("blk.0.ffn_up_exps.weight");
        if (file_moe && h.n_expert == 0)
            throw shape_error("the file has expert tensors but no " + h.arch + ".expert_count");
        std::size_t n_ff = file_moe ? h.n_ff_exp : h.n_ff;
        if (n_ff == 0) throw format_error("the file gives no feed-forward length");
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

        constexpr qk_norm qkn = D::mixer::qk;
        layers_v_.resize(h.n_layer);
        for (std::size_t il = 0; il < h.n_layer; ++il) {
            const std::string b = "blk." + std::to_string(il) + ".";
            auto& L = layers_v_[il];
            L.attn_norm = {vector_f32(b + "attn_norm.weight", E), nullptr, h.rms_eps};
            L.ffn_norm = {vector_f32(b + "ffn_norm.weight", E), nullptr, h.rms_eps};
            if constexpr (D::sandwich_norms) {
                L.attn_post_norm = {vector_f32(b + "post_attention_norm.weight", E), nullptr, h.rms_eps};
                L.ffn_post_norm = {vector_f32(b + "post_ffw_norm.weight", E), nullptr, h.rms_eps};
            } else if (file_->find_tensor(b + "post_attention_norm.weight") || file_->find_tensor(b + "post_ffw_norm.weight")) {
                throw shape_error(norm_policy::describe() + " but the file has norms after the sublayers (" + b +
                                  "post_attention_norm.weight): use PrePostNorm<" + norm_policy::describe() + ">");
            }
            L.attn.wq = matrix(b + "attn_q.weight", E, qw);
            L.attn.wk = matrix(b + "attn_k.weight", E, kw);
            L.attn.wv = matrix(b + "attn_v.weight", E, kw);
            L.attn.wo = matrix(b + "attn_output.weight", qw, E);
            const bool has_qn = file_->find_tensor(b + "attn_q_norm.weight") != nullptr;
            if constexpr (qkn == qk_norm::none) {
                if (has_qn)
                    throw shape_error("SelfAttentionWith<qk_norm::none> but the file has " + b + "attn_q_norm.weight");
            } else {
                if (has_qn || qkn == qk_norm::rms) {
                    L.attn.q_norm = vector_f32(b + "attn_q_norm.weight", hd);
                    L.attn.k_norm = vector_f32(b + "attn_k_norm.weight", hd);
                }
            }
            if constexpr (moe) {
                auto& M = L.ffn;
                M.router = matrix(b + "ffn_gate_inp.weight", E, h.n_expert);
                M.n_used = h.n_expert_used;
                M.experts.resize(h.n_expert);
                for (std::size_t e = 0; e < h.n_expert; ++e)
                    M.experts[e] = expert_ffn(b, E, n_ff, h.n_expert, e, ffn_policy::expert::gated);
            } else {
                L.ffn = file_moe ? expert_ffn(b, E, n_ff, 1, 0, ffn_policy::gated) : dense_ffn(b, E, n_ff);
            }
        }
    }

    // LearnedPositions<N>: the file's table; its rows are the positions a session may use.
    void load_learned_positions(std::size_t E) {
        const auto& t = file_->tensor("position_embd.weight"); // names the tensor when it is missing
        const std::size_t n = t.ne.size() >= 2 ? std::size_t(t.ne[1]) : 0;
        if constexpr (position::name == std::string_view("LearnedPositions")) {
            if (position::max_positions != dynamic && position::max_positions != n)
                throw shape_error(position::describe() + " but the file's position_embd.weight has " + std::to_string(n) +
                                  " positions");
        }
        if (n == 0) throw shape_error("tensor 'position_embd.weight' has shape " + t.shape_string() + ", expected [" +
                                      std::to_string(E) + ", positions]");
        pos_embd_ = lookup_matrix("position_embd.weight", E, n);
        hp_.n_pos = n;
    }
    // RelativeBias<B>: blk.N.attn_rel_b.weight [n_head, B] (ggml order) per layer, or
    // only layer 0's shared by all layers (T5's files); F32 or F16, kept as float.
    void load_relative_bias(std::size_t n_layer, std::size_t n_head) {
        if constexpr (position::name == std::string_view("RelativeBias")) {
            const std::size_t B = position::buckets;
            hp_.rel_buckets = B;
            const bool per_layer = n_layer > 1 && file_->find_tensor("blk.1.attn_rel_b.weight") != nullptr;
            rel_bias_.resize(per_layer ? n_layer : 1);
            for (std::size_t il = 0; il < rel_bias_.size(); ++il) {
                const std::string name = "blk." + std::to_string(il) + ".attn_rel_b.weight";
                const auto& t = tensor(name, {n_head, B});
                auto& v = rel_bias_[il];
                v.resize(n_head * B);
                if (t.type == ggml_type::F32)
                    std::memcpy(v.data(), t.data, v.size() * sizeof(float));
                else if (t.type == ggml_type::F16)
                    for (std::size_t i = 0; i < v.size(); ++i) {
                        std::uint16_t hbits;
                        std::memcpy(&hbits, t.data + 2 * i, 2);
                        v[i] = fp16_to_fp32(hbits);
                    }
                else
                    throw shape_error("tensor '" + name + "' is " + std::string(type_name(t.type)) + ", expected F32 or F16");
            }
        } else {
            (void)n_layer;
            (void)n_head;
        }
    }

    std::optional<gguf::file> file_;
    decoder_hparams hp_;
    std::vector<layer> layers_v_;
    kernels::weight_view tok_embd_{}, output_{}, pos_embd_{};
    bool repack_ = true;
    std::vector<std::shared_ptr<std::uint8_t>> owned_; // repacked matrices (stable addresses across moves)
    std::size_t owned_bytes_ = 0;
    std::vector<std::vector<float>> rel_bias_; // RelativeBias: per layer (or one shared) [bucket][head]
    layers::norm_weights output_norm_{};
};

/// Loads a decoder model; Model is a Decoder<...> type.
template <DecoderType Model>
decoder_model<Model> load_model(const std::string& path, const decoder_options& opt = {}) {
    return decoder_model<Model>::load(path, opt);
}

} // namespace archetype
