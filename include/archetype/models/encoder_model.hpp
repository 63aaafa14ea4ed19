#pragma once
// encoder_model<Enc>: an Encoder<...> structure bound to the weights of a GGUF
// file (llama.cpp architecture `bert`). The file stays memory-mapped; 2-D
// weights are views into it (matmul works on the stored type), 1-D vectors
// (biases, norms) are used in place when F32 and converted once otherwise.
//
//   auto model = archetype::load_model<MiniLM>("all-MiniLM-L6-v2.gguf");
//
// Every shape is checked against the hyperparameters and the compiled policies
// at load (shape_error naming the tensor), so the forward pass never indexes
// past a tensor.
//
// Other formats bind through the second constructor: hyperparameters plus
// tensors described in GGUF terms (ne order, ggml type) under GGUF names, and
// an owner keeping their memory mapped (models/bert_safetensors.hpp reads
// sentence-transformers directories this way); the same checks apply.
#include <algorithm>
#include <cstddef>
#include <cstring>
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
#include "archetype/io/key_ledger.hpp"
#include "archetype/kernels/convert.hpp"
#include "archetype/kernels/matmul.hpp"
#include "archetype/layers/ffn.hpp"
#include "archetype/models/encoder.hpp"
#include "archetype/models/registry.hpp"

namespace archetype {

/// One encoder block's weights. Post-norm (BERT) uses attn_output_norm after
/// the attention residual and layer_output_norm after the FFN residual;
/// pre-norm uses attn_norm / ffn_norm before each sub-layer.
struct encoder_layer_weights {
    kernels::weight_view wq{}, wk{}, wv{}, wo{};
    const float *bq = nullptr, *bk = nullptr, *bv = nullptr, *bo = nullptr;
    const float *norm1_w = nullptr, *norm1_b = nullptr; // after attention (post) / before it (pre)
    const float *norm2_w = nullptr, *norm2_b = nullptr; // after the FFN (post) / before it (pre)
    layers::ffn_weights ffn{};
    /// Wq, Wk, Wv stacked as one [(Hq + 2 Hkv) rows x n_embd] matrix, so the
    /// three projections are one GEMM (A packed once, one wider N); a view into
    /// the file when the three are stored back to back, else a copy. Empty
    /// (data null) when their types differ. bqkv: the three biases stacked
    /// (zeros for a missing one), null when none has a bias.
    kernels::weight_view wqkv{};
    const float* bqkv = nullptr;
};

template <class Enc>
class encoder_model {
    static_assert(EncoderModel<Enc>, "archetype: encoder_model<Enc> takes an Encoder<...> type");

public:
    using architecture = Enc;

    arch::bert_hparams hp;
    kernels::weight_view tok_embd{}, pos_embd{}, type_embd{};
    bool has_positions = false, has_token_types = false;
    const float *embd_norm_w = nullptr, *embd_norm_b = nullptr; // token_embd_norm (BERT)
    const float *out_norm_w = nullptr, *out_norm_b = nullptr;   // output_norm (pre-norm encoders)
    std::vector<encoder_layer_weights> layers;
    // RankPooling classifier (llama.cpp: cls, cls.output); absent tensors stay empty
    kernels::weight_view cls{}, cls_out{};
    const float *cls_b = nullptr, *cls_out_b = nullptr;
    bool has_cls = false, has_cls_out = false;

    std::size_t n_embd() const noexcept { return hp.n_embd; }
    std::size_t n_vocab() const noexcept { return hp.n_vocab; }
    /// Longest sequence accepted: the learned-position table, else the training context.
    std::size_t max_sequence() const noexcept { return max_seq_; }
    /// Window of the windowed layers (the mask policy's static one, else the file's); 0 = none.
    std::size_t window() const noexcept { return window_; }
    /// Whether layer il attends through the window (else to its whole sequence).
    bool layer_windowed(std::size_t il) const noexcept { return il < windowed_.size() && windowed_[il]; }
    /// RoPE base of layer il: {arch}.rope.freq_base_swa on windowed layers when the file gives it.
    float rope_base(std::size_t il) const noexcept {
        return layer_windowed(il) && hp.rope_freq_base_swa > 0.f ? hp.rope_freq_base_swa : hp.rope_freq_base;
    }
    /// Floats of one pooled output under RankPooling.
    std::size_t n_rank_outputs() const noexcept {
        return has_cls_out ? cls_out.rows : has_cls ? cls.rows : hp.n_embd;
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
        s += describe_line("positions", has_positions ? "learned, " + std::to_string(pos_embd.rows) + " rows" : "none in the file");
        s += describe_line("token types", has_token_types ? std::to_string(type_embd.rows) : std::string("none"));
        s += describe_line("pooling", std::string(pooling_name(hp.pooling)) + " (the file's default)");
        if (window_) {
            std::string which;
            for (std::size_t il = 0; il < windowed_.size(); ++il)
                if (windowed_[il]) which += (which.empty() ? "" : ",") + std::to_string(il);
            s += describe_line("window", std::to_string(window_) + " (symmetric) on layers " + which);
        }
        s += describe_line("max sequence", std::to_string(max_seq_));
        return s;
    }

    /// The GGUF file (argument_error for a model bound from another format).
    const gguf::file& file() const {
        if (!file_) throw argument_error("this encoder model was not loaded from a GGUF file");
        return *file_;
    }

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
    explicit encoder_model(std::shared_ptr<gguf::file> f, unread_keys unread = unread_keys::error) : file_(std::move(f)) {
        hp = arch::read_bert_hparams(*file_);
        bind();
        check_keys_read(*file_, unread);
    }
    encoder_model(std::shared_ptr<gguf::file> f, const arch::gguf_conventions& conv,
                  unread_keys unread = unread_keys::error)
        : file_(std::move(f)), conv_(conv) {
        hp = arch::read_encoder_hparams(*file_, conv_);
        bind();
        check_keys_read(*file_, unread);
    }
    /// Weights from another format: `tensors` keyed by their GGUF name (each
    /// tensor_info's own name is the one errors show, e.g. the original file's),
    /// pointing into memory that `owner` keeps alive.
    encoder_model(arch::bert_hparams h, std::map<std::string, gguf::tensor_info> tensors,
                  std::shared_ptr<const void> owner)
        : ext_tensors_(std::move(tensors)), ext_owner_(std::move(owner)) {
        hp = std::move(h);
        bind();
    }

private:
    std::shared_ptr<gguf::file> file_;
    arch::gguf_conventions conv_{};
    std::map<std::string, gguf::tensor_info> ext_tensors_; // when not GGUF
    std::shared_ptr<const void> ext_owner_;
    std::vector<std::unique_ptr<float[]>> owned_; // 1-D tensors converted to F32
    std::vector<std::unique_ptr<std::byte[]>> owned_bytes_; // stacked QKV copies
    std::size_t max_seq_ = 0, window_ = 0;
    std::vector<bool> windowed_;                   // per layer
    mutable std::vector<const gguf::tensor_info*> bound_; // every tensor a weight was taken from

    static std::string dims(std::initializer_list<std::size_t> d) {
        std::string s = "[";
        bool first = true;
        for (auto x : d) { s += (first ? "" : ", ") + std::to_string(x); first = false; }
        return s + "]";
    }

    /// The tensor with this GGUF name, or null.
    const gguf::tensor_info* find_tensor(const std::string& name) const {
        if (file_) return file_->find_tensor(name);
        const auto it = ext_tensors_.find(name);
        return it == ext_tensors_.end() ? nullptr : &it->second;
    }
    const gguf::tensor_info& tensor(const std::string& name) const {
        if (const auto* t = find_tensor(name)) {
            bound_.push_back(t);
            return *t;
        }
        throw format_error("missing tensor '" + name + "'");
    }
    /// Every tensor of the file was bound: one left over means the compiled structure
    /// would silently run without part of the model.
    void check_all_bound() const {
        std::vector<const gguf::tensor_info*> used = bound_;
        std::sort(used.begin(), used.end());
        auto check = [&](const gguf::tensor_info& t) {
            if (!std::binary_search(used.begin(), used.end(), &t))
                throw shape_error("tensor '" + t.name + "' of the file is not used by the compiled structure: the "
                                  "model would run without it; compose the policy that reads it (for example "
                                  "LayerNorm binds the norm biases that LayerNormNoBias does not)");
        };
        if (file_) for (const auto& t : file_->tensors()) check(t);
        else for (const auto& [name, t] : ext_tensors_) check(t);
    }
    /// Rows [r0, r0 + n) of a matrix, as a matrix of their own.
    static kernels::weight_view row_slice(const kernels::weight_view& w, std::size_t r0, std::size_t n) {
        kernels::weight_view v = w;
        v.data = w.row(r0);
        v.rows = n;
        return v;
    }
    /// The file's {arch}.hidden_activation against the compiled FFN policy (policies/ffn.hpp).
    void check_activation() const {
        if (!hp.hidden_act.empty())
            detail::check_hidden_activation<typename Enc::ffn>(hp.arch + ".hidden_activation", hp.hidden_act);
    }
    /// A 2-D tensor with ne = [cols, rows]; shape_error if it differs.
    kernels::weight_view matrix(const std::string& name, std::size_t cols, std::size_t rows) const {
        const auto& t = tensor(name);
        auto w = gguf::as_weight(t);
        if (w.cols != cols || w.rows != rows || t.ne.size() < 2)
            throw shape_error("tensor '" + t.name + "' has shape " + t.shape_string() + ", expected " + dims({cols, rows}));
        if (!traits_of(static_cast<std::uint32_t>(w.type)))
            throw format_error("tensor '" + t.name + "' has an unknown type");
        return w;
    }
    /// A matrix of any row count (checked by the caller).
    kernels::weight_view matrix_any_rows(const std::string& name, std::size_t cols) const {
        const auto& t = tensor(name);
        auto w = gguf::as_weight(t);
        if (w.cols != cols || t.ne.size() < 2)
            throw shape_error("tensor '" + t.name + "' has shape " + t.shape_string() + ", expected [" +
                              std::to_string(cols) + ", rows]");
        return w;
    }
    /// A 1-D tensor of n floats (F32 in place; F16/BF16 converted once).
    const float* vec(const std::string& name, std::size_t n) {
        const auto& t = tensor(name);
        std::size_t nd = t.ne.size();
        while (nd > 1 && t.ne[nd - 1] == 1) --nd;
        if (nd != 1 || t.ne[0] != n)
            throw shape_error("tensor '" + t.name + "' has shape " + t.shape_string() + ", expected [" +
                              std::to_string(n) + "]");
        if (t.type == ggml_type::F32) return reinterpret_cast<const float*>(t.data);
        auto buf = std::make_unique<float[]>(n);
        const auto* src = reinterpret_cast<const std::uint16_t*>(t.data);
        if (t.type == ggml_type::F16) kernels::f16_to_f32(src, buf.get(), n);
        else if (t.type == ggml_type::BF16) kernels::bf16_to_f32(src, buf.get(), n);
        else throw shape_error("tensor '" + t.name + "' is " + std::string(type_name(t.type)) +
                               "; 1-D tensors must be F32, F16 or BF16");
        owned_.push_back(std::move(buf));
        return owned_.back().get();
    }
    const float* vec_opt(const std::string& name, std::size_t n) {
        return find_tensor(name) ? vec(name, n) : nullptr;
    }
    /// Stacks Wq, Wk, Wv (and their biases) of one layer; see encoder_layer_weights.
    void stack_qkv(encoder_layer_weights& L) {
        if (L.wq.type != L.wk.type || L.wq.type != L.wv.type || L.wq.cols != L.wk.cols || L.wq.cols != L.wv.cols)
            return;
        const std::size_t rb = L.wq.row_bytes();
        const std::size_t nq = L.wq.rows * rb, nk = L.wk.rows * rb, nv = L.wv.rows * rb;
        const auto* q = static_cast<const std::byte*>(L.wq.data);
        L.wqkv = L.wq;
        L.wqkv.rows = L.wq.rows + L.wk.rows + L.wv.rows;
        if (static_cast<const std::byte*>(L.wk.data) != q + nq || static_cast<const std::byte*>(L.wv.data) != q + nq + nk) {
            auto buf = std::make_unique<std::byte[]>(nq + nk + nv);
            std::memcpy(buf.get(), L.wq.data, nq);
            std::memcpy(buf.get() + nq, L.wk.data, nk);
            std::memcpy(buf.get() + nq + nk, L.wv.data, nv);
            L.wqkv.data = buf.get();
            owned_bytes_.push_back(std::move(buf));
        }
        if (L.bq || L.bk || L.bv) {
            auto b = std::make_unique<float[]>(L.wqkv.rows);
            float* d = b.get();
            for (auto [src, n] : {std::pair{L.bq, L.wq.rows}, std::pair{L.bk, L.wk.rows}, std::pair{L.bv, L.wv.rows}}) {
                if (src) std::copy(src, src + n, d);
                else std::fill(d, d + n, 0.f);
                d += n;
            }
            L.bqkv = b.get();
            owned_.push_back(std::move(b));
        }
    }
    /// Embedding tables are read row by row, so only types with a scalar row decode work.
    static void check_table(const std::string& name, const kernels::weight_view& w) {
        if (w.type != ggml_type::F32 && w.type != ggml_type::F16 && w.type != ggml_type::BF16)
            throw shape_error("tensor '" + name + "' is " + std::string(type_name(w.type)) +
                              "; embedding tables must be F32, F16 or BF16");
    }

    void bind() {
        const std::size_t E = hp.n_embd, H = hp.n_head, Hkv = hp.n_head_kv, D = hp.head_dim;
        using heads = typename Enc::heads;
        auto check_static = [](const char* what, dim_t want, std::size_t got) {
            if (want != dynamic && want != got)
                throw shape_error(std::string("the model type fixes ") + what + " = " + std::to_string(want) +
                                  " but the file has " + std::to_string(got));
        };
        check_static("the query head count", heads::n_head, H);
        check_static("the key/value head count", heads::n_head_kv, Hkv);
        check_static("the head dimension", heads::head_dim, D);
        check_static("the feed-forward size", Enc::ffn::hidden, hp.n_ff);
        if constexpr (requires { Enc::storage::type; }) {
            const auto& t = tensor(find_tensor("blk.0.attn_qkv.weight") ? "blk.0.attn_qkv.weight" : "blk.0.attn_q.weight");
            if (t.type != Enc::storage::type)
                throw shape_error("the model type requires " + std::string(type_name(Enc::storage::type)) +
                                  " weights but '" + t.name + "' is " + std::string(type_name(t.type)));
        }

        tok_embd = matrix("token_embd.weight", E, hp.n_vocab);
        check_table("token_embd.weight", tok_embd);
        if (find_tensor("token_types.weight")) {
            type_embd = matrix_any_rows("token_types.weight", E);
            check_table("token_types.weight", type_embd);
            has_token_types = true;
        }
        using position = typename Enc::position;
        max_seq_ = hp.n_ctx_train;
        if constexpr (detail::is_learned_positions<position>) {
            pos_embd = matrix_any_rows("position_embd.weight", E);
            check_table("position_embd.weight", pos_embd);
            check_static("the learned-position count", position::max_positions, pos_embd.rows);
            has_positions = true;
            max_seq_ = pos_embd.rows;
        }
        // the mask policy's hook decides which layers are windowed, checked against the file
        if (hp.n_swa != 0 && hp.swa_layers.size() != hp.n_layer) hp.swa_layers.assign(hp.n_layer, true);
        const auto lw = mask_impl<typename Enc::mask>::layers(hp);
        window_ = lw.window;
        windowed_ = lw.windowed;
        check_activation();
        embd_norm_w = vec_opt("token_embd_norm.weight", E);
        // (a LayerNormNoBias model binds no norm bias: one in the file is left unbound and refused)
        constexpr bool binds_norm_bias = !std::is_same_v<typename Enc::norm, LayerNormNoBias>;
        embd_norm_b = binds_norm_bias ? vec_opt("token_embd_norm.bias", E) : nullptr;
        out_norm_w = vec_opt("output_norm.weight", E);
        out_norm_b = binds_norm_bias ? vec_opt("output_norm.bias", E) : nullptr;
        constexpr bool post = Enc::placement == norm_placement::post;
        constexpr bool need_bias = Enc::norm::has_bias;

        layers.resize(hp.n_layer);
        for (std::size_t il = 0; il < hp.n_layer; ++il) {
            const std::string p = "blk." + std::to_string(il) + ".";
            auto& L = layers[il];
            if (find_tensor(p + "attn_qkv.weight")) { // fused Q|K|V rows (ModernBERT, nomic-bert)
                L.wqkv = matrix(p + "attn_qkv.weight", E, (H + 2 * Hkv) * D);
                L.wq = row_slice(L.wqkv, 0, H * D);
                L.wk = row_slice(L.wqkv, H * D, Hkv * D);
                L.wv = row_slice(L.wqkv, (H + Hkv) * D, Hkv * D);
                L.bqkv = vec_opt(p + "attn_qkv.bias", (H + 2 * Hkv) * D);
                if (L.bqkv) {
                    L.bq = L.bqkv;
                    L.bk = L.bqkv + H * D;
                    L.bv = L.bqkv + (H + Hkv) * D;
                }
            } else {
                L.wq = matrix(p + "attn_q.weight", E, H * D);
                L.wk = matrix(p + "attn_k.weight", E, Hkv * D);
                L.wv = matrix(p + "attn_v.weight", E, Hkv * D);
                L.bq = vec_opt(p + "attn_q.bias", H * D);
                L.bk = vec_opt(p + "attn_k.bias", Hkv * D);
                L.bv = vec_opt(p + "attn_v.bias", Hkv * D);
                stack_qkv(L);
            }
            L.wo = matrix(p + "attn_output.weight", H * D, E);
            L.bo = vec_opt(p + "attn_output.bias", E);
            const std::string n1 = post ? "attn_output_norm" : "attn_norm";
            const std::string n2 = post ? "layer_output_norm" : "ffn_norm";
            // ModernBERT's first layer has no attention norm (conventions: identity there)
            const bool norm1_optional = !post && il == 0 && conv_.first_attn_norm_optional;
            L.norm1_w = norm1_optional ? vec_opt(p + n1 + ".weight", E) : vec(p + n1 + ".weight", E);
            L.norm2_w = vec(p + n2 + ".weight", E);
            if constexpr (need_bias) {
                L.norm1_b = L.norm1_w ? vec(p + n1 + ".bias", E) : nullptr;
                L.norm2_b = vec(p + n2 + ".bias", E);
            } else if constexpr (std::is_same_v<typename Enc::norm, RMSNorm>) {
                // an RMSNorm encoder may carry a bias after the norm (llama.cpp's bert graph adds it)
                L.norm1_b = vec_opt(p + n1 + ".bias", E);
                L.norm2_b = vec_opt(p + n2 + ".bias", E);
            }
            const auto& up_t = tensor(p + "ffn_up.weight");
            if (Enc::ffn::gated && !find_tensor(p + "ffn_gate.weight") && up_t.ne.size() >= 2 &&
                up_t.ne[1] == 2 * hp.n_ff) {
                // gate and up fused in ffn_up (ModernBERT's Wi): the first n_ff rows are the
                // activated half, as transformers' `input, gate = Wi(x).chunk(2)` and llama.cpp's GLU split
                const auto both = matrix(p + "ffn_up.weight", E, 2 * hp.n_ff);
                L.ffn.gate = row_slice(both, 0, hp.n_ff);
                L.ffn.up = row_slice(both, hp.n_ff, hp.n_ff);
                if (const float* b = vec_opt(p + "ffn_up.bias", 2 * hp.n_ff)) {
                    L.ffn.gate_bias = b;
                    L.ffn.up_bias = b + hp.n_ff;
                }
            } else {
                L.ffn.up = matrix(p + "ffn_up.weight", E, hp.n_ff);
                L.ffn.up_bias = vec_opt(p + "ffn_up.bias", hp.n_ff);
                if constexpr (Enc::ffn::gated) {
                    L.ffn.gate = matrix(p + "ffn_gate.weight", E, hp.n_ff);
                    L.ffn.gate_bias = vec_opt(p + "ffn_gate.bias", hp.n_ff);
                }
            }
            L.ffn.down = matrix(p + "ffn_down.weight", hp.n_ff, E);
            L.ffn.down_bias = vec_opt(p + "ffn_down.bias", E);
        }
        if (find_tensor("cls.weight")) {
            cls = matrix_any_rows("cls.weight", E);
            cls_b = vec_opt("cls.bias", cls.rows);
            has_cls = true;
        }
        if (find_tensor("cls.output.weight")) {
            cls_out = matrix_any_rows("cls.output.weight", has_cls ? cls.rows : E);
            cls_out_b = vec_opt("cls.output.bias", cls_out.rows);
            has_cls_out = true;
        }
        check_all_bound();
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
