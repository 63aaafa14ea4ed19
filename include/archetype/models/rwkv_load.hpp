#pragma once
// load_model<Rwkv5<...>/Rwkv6<...>/Rwkv7<...>>(path, options): opens an RWKV model
// file, recognised by its first bytes — "GGUF" (llama.cpp architecture rwkv6 or
// rwkv7) or 0x67676d66 (rwkv.cpp .bin, v5.2, v6 or v7, FP32/FP16) — checks every
// tensor's shape against its name and the file's hyperparameters, checks the
// compiled static dimensions (shape_error naming both values), requires every
// tensor of the file to be read (a stray one is a format_error naming it), and
// returns views into the mapping. Only tensors that must change are copied: misaligned data (the
// .bin format has no alignment), FP16 vectors, and v5 mix coefficients, which
// become maa = 1 - mix so that v5 and v6 share one token-shift formula.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <set>
#include <span>
#include <utility>
#include <string>
#include <string_view>
#include <vector>

#include "archetype/core/error.hpp"
#include "archetype/core/half.hpp"
#include "archetype/io/arch/rwkv6.hpp"
#include "archetype/io/arch/rwkv7.hpp"
#include "archetype/io/gguf.hpp"
#include "archetype/io/key_ledger.hpp"
#include "archetype/io/mapped_file.hpp"
#include "archetype/io/rwkv_bin.hpp"
#include "archetype/models/rwkv.hpp"

namespace archetype {

struct rwkv_load_options {
    /// eps of the ln_x GroupNorm. 64e-5 is the official value (ChatRWKV, llama.cpp,
    /// rwkv.cpp for v6); rwkv.cpp computes v5 with 1e-5.
    float group_norm_eps = 64e-5f;
    /// The layers to load (a pipeline stage, models/layer_range.hpp); default: all.
    layer_range layers{};
    /// A GGUF metadata key no policy reads (io/key_ledger.hpp): error (default) or warn.
    unread_keys unread = unread_keys::error;
    /// Keys a user's architecture accepts without reading, beyond the shared list.
    std::span<const known_unused_key> known_unused_keys{};
};

namespace detail {

inline std::string rwkv_shape_str(const std::vector<std::uint64_t>& ne) {
    std::string s = "[";
    for (std::size_t i = 0; i < ne.size(); ++i) s += (i ? ", " : "") + std::to_string(ne[i]);
    return s + "]";
}

// Shapes are compared without leading and trailing extents of 1: rwkv.cpp stores
// (H, N, 1) vectors as [1, N, H] and converters differ in how they squeeze.
inline std::vector<std::uint64_t> rwkv_trim_ones(std::vector<std::uint64_t> ne) {
    while (ne.size() > 1 && ne.back() == 1) ne.pop_back();
    while (ne.size() > 1 && ne.front() == 1) ne.erase(ne.begin());
    return ne;
}

/// Turns file tensors (rwkv_bin::tensor_info or gguf::tensor_info) into
/// views, copying into `owned` only what cannot be used in place.
class rwkv_tensor_binder {
public:
    explicit rwkv_tensor_binder(std::vector<std::vector<float>>& owned) : owned_(owned) {}

    template <class T>
    void expect(const T& t, std::vector<std::uint64_t> ne) {
        if (rwkv_trim_ones(t.ne) != rwkv_trim_ones(ne))
            throw format_error("tensor '" + t.name + "' has shape " + rwkv_shape_str(t.ne) + ", expected " +
                               rwkv_shape_str(ne));
        used_.insert(t.name);
    }
    /// A tensor the file carries and the model does not read, with the reason in the caller.
    void known_unused(const std::string& name) { used_.insert(name); }

    /// Every tensor of `tensors` was read (or declared unused): else a format_error naming the first other.
    template <class Tensors>
    void check_all_bound(const Tensors& tensors) const {
        for (const auto& t : tensors)
            if (!used_.count(t.name))
                throw format_error("tensor '" + t.name + "' is not read by this RWKV model (a tensor the loader does "
                                   "not know: refusing rather than dropping it)");
    }

    /// A float vector of the given shape (F32 in place when aligned; F16 converted).
    template <class T>
    const float* vec(const T& t, std::vector<std::uint64_t> ne) {
        expect(t, ne);
        const std::size_t n = static_cast<std::size_t>(t.n_elements());
        if (t.type == ggml_type::F32) {
            if (aligned(t.data, alignof(float))) return reinterpret_cast<const float*>(t.data);
            auto& buf = owned_.emplace_back(n);
            std::memcpy(buf.data(), t.data, n * sizeof(float));
            return buf.data();
        }
        if (t.type == ggml_type::F16) {
            auto& buf = owned_.emplace_back(n);
            for (std::size_t i = 0; i < n; ++i) {
                std::uint16_t h;
                std::memcpy(&h, t.data + 2 * i, 2);
                buf[i] = fp16_to_fp32(h);
            }
            return buf.data();
        }
        throw format_error("tensor '" + t.name + "' has type " + std::string(type_name(t.type)) +
                           ", a float (F32/F16) vector was expected");
    }

    /// A [rows x cols] matrix (ne = [cols, rows]) in its stored type.
    template <class T>
    kernels::weight_view mat(const T& t, std::size_t rows, std::size_t cols) {
        expect(t, {cols, rows});
        return view(t, rows, cols);
    }

    /// A matrix view of rows x cols at byte offset `off` inside t (slices of 3-D tensors).
    template <class T>
    kernels::weight_view view(const T& t, std::size_t rows, std::size_t cols, std::size_t off = 0) {
        const auto tr = traits_of(t.type);
        if (t.type != ggml_type::F32 && t.type != ggml_type::F16 && t.type != ggml_type::BF16 &&
            (tr.block_size <= 1 || cols % tr.block_size != 0))
            throw format_error("tensor '" + t.name + "' of type " + std::string(tr.name) + " cannot be a " +
                               std::to_string(rows) + " x " + std::to_string(cols) + " matrix");
        kernels::weight_view w;
        w.type = t.type;
        w.rows = rows;
        w.cols = cols;
        const std::size_t bytes = rows * w.row_bytes();
        if (off + bytes > t.n_bytes)
            throw format_error("tensor '" + t.name + "' is smaller than a " + std::to_string(rows) + " x " +
                               std::to_string(cols) + " matrix");
        const std::byte* p = t.data + off;
        const std::size_t align = t.type == ggml_type::F32 ? 4 : 2;
        if (aligned(p, align)) {
            w.data = p;
        } else { // the .bin format has no alignment: realign into an owned buffer
            auto& buf = owned_.emplace_back((bytes + sizeof(float) - 1) / sizeof(float));
            std::memcpy(buf.data(), p, bytes);
            w.data = buf.data();
        }
        return w;
    }

    std::vector<float>& own(std::size_t n) { return owned_.emplace_back(n); }

private:
    static bool aligned(const void* p, std::size_t a) {
        return reinterpret_cast<std::uintptr_t>(p) % a == 0;
    }
    std::vector<std::vector<float>>& owned_;
    std::set<std::string> used_;
};

inline std::string rwkv_version_name(int v) { return v == 5 ? "5.2" : std::to_string(v); }

/// The hyperparameters every RWKV GGUF gives (io/arch/rwkv_gguf.hpp), and the load options'.
inline void rwkv_set_gguf_dims(rwkv_hparams& hp, int version, const arch::rwkv_gguf_dims& d,
                               const rwkv_load_options& opt) {
    hp.version = version;
    hp.n_vocab = d.n_vocab;
    hp.n_embd = d.n_embd;
    hp.n_layer = d.n_layer;
    hp.head_size = d.head_size;
    hp.n_head = d.n_embd / d.head_size;
    hp.n_ffn = d.n_ffn;
    hp.ln_eps = d.ln_eps;
    hp.gn_eps = opt.group_norm_eps;
}

template <class Arch>
void rwkv_check_static(const rwkv_hparams& hp, int file_version) {
    if (file_version != Arch::version)
        throw shape_error("the file is an RWKV v" + rwkv_version_name(file_version) + " model, but " +
                          Arch::type_name() + " is RWKV v" + rwkv_version_name(Arch::version) +
                          ": load it as Rwkv" + std::to_string(file_version) + "<...>");
    if (Arch::embd != dynamic && Arch::embd != hp.n_embd)
        throw shape_error(Arch::type_name() + " was compiled for D = " + std::to_string(Arch::embd) +
                          " but the file has n_embd = " + std::to_string(hp.n_embd));
    if (Arch::head_size != dynamic && Arch::head_size != hp.head_size)
        throw shape_error(Arch::type_name() + " was compiled for head size H = " + std::to_string(Arch::head_size) +
                          " but the file has head size " + std::to_string(hp.head_size));
}

template <class Arch>
void rwkv_check_storage(const rwkv_weights& W) {
    using S = typename Arch::storage;
    if constexpr (S::fixed) {
        auto check = [](const kernels::weight_view& w, const std::string& what) {
            if (w.type != S::type)
                throw shape_error(Arch::type_name() + " requires " + std::string(type_name(S::type)) +
                                  " weights but " + what + " is " + std::string(type_name(w.type)));
        };
        if (W.has_head()) check(W.head, "the output head");
        for (std::size_t l = W.range.first; l < W.layers.size(); ++l) {
            const auto& L = W.layers[l];
            const std::string p = "layer " + std::to_string(l) + " ";
            for (auto* w : {&L.wr, &L.wk, &L.wv, &L.wg, &L.wo})
                if (w->data) check(*w, p + "time-mix matrix"); // v7 has no gate matrix
            for (auto* w : {&L.ffn_k, &L.ffn_v, &L.ffn_r})
                if (w->data) check(*w, p + "channel-mix matrix"); // nor a channel-mix receptance
        }
    }
}

/// RWKV-7 weights from either file kind (hp filled but for what the tensors
/// say): `gguf` picks llama.cpp's rwkv7 names, else rwkv.cpp's v7 names
/// (../shared/fixtures/README.md §3.2, §3.6).
template <class Arch, class File>
void rwkv7_bind(rwkv_model<Arch>& m, const File& f, bool gguf, const rwkv_load_options& opt) {
    auto& hp = m.weights.hp;
    auto T = [&](const std::string& name) -> const auto& { return f.tensor(name); };
    auto nm = [&](std::size_t l, const char* g, const char* b) {
        return gguf ? "blk." + std::to_string(l) + "." + g : "blocks." + std::to_string(l) + "." + b;
    };
    // the LoRA ranks, from the first LoRA matrices ([C, D]); the value residual's from layer 1
    auto rank = [&](const std::string& name) -> std::size_t {
        const auto& t = T(name);
        if (t.ne.size() != 2 || t.ne[0] != hp.n_embd)
            throw format_error("tensor '" + name + "' has shape " + rwkv_shape_str(t.ne) + ", expected [" +
                               std::to_string(hp.n_embd) + ", rank]");
        return static_cast<std::size_t>(t.ne[1]);
    };
    if (!gguf) {
        hp.n_lora_decay = rank(nm(0, "", "att.w1"));
        hp.n_lora_iclr = rank(nm(0, "", "att.a1"));
        hp.n_lora_gate = rank(nm(0, "", "att.g1"));
        hp.n_lora_vres = hp.n_layer > 1 ? rank(nm(1, "", "att.v1")) : 0;
    }
    rwkv_check_static<Arch>(hp, 7);
    const std::uint64_t C = hp.n_embd, V = hp.n_vocab, F = hp.n_ffn, N = hp.head_size, H = hp.n_head;
    rwkv_tensor_binder b(m.owned);
    auto& W = m.weights;
    W.range = opt.layers.resolved(hp.n_layer);
    if (W.range.first != 0)
        throw shape_error("an RWKV-7 model cannot be split into stages that start after layer 0 (layers " +
                          std::to_string(W.range.first) + ".." + std::to_string(W.range.last()) +
                          "): every layer mixes its values toward layer 0's (v_first), which a stage would need "
                          "from the one before it");
    if (W.has_embedding()) {
        W.emb = b.mat(T(gguf ? "token_embd.weight" : "emb.weight"), V, C);
        W.ln0_w = b.vec(T(gguf ? "token_embd_norm.weight" : "blocks.0.ln0.weight"), {C});
        W.ln0_b = b.vec(T(gguf ? "token_embd_norm.bias" : "blocks.0.ln0.bias"), {C});
    }
    if (W.has_head()) {
        W.ln_out_w = b.vec(T(gguf ? "output_norm.weight" : "ln_out.weight"), {C});
        W.ln_out_b = b.vec(T(gguf ? "output_norm.bias" : "ln_out.bias"), {C});
        W.head = b.mat(T(gguf ? "output.weight" : "head.weight"), V, C);
    }
    const std::size_t DW = hp.n_lora_decay, DA = hp.n_lora_iclr, DV = hp.n_lora_vres, DG = hp.n_lora_gate;
    for (std::size_t l = 0; l <= W.range.last(); ++l) { // grown layer by layer (see rwkv_load_bin)
        auto& L = W.layers.emplace_back();
        L.ln1_w = b.vec(T(nm(l, "attn_norm.weight", "ln1.weight")), {C});
        L.ln1_b = b.vec(T(nm(l, "attn_norm.bias", "ln1.bias")), {C});
        L.ln2_w = b.vec(T(nm(l, "attn_norm_2.weight", "ln2.weight")), {C});
        L.ln2_b = b.vec(T(nm(l, "attn_norm_2.bias", "ln2.bias")), {C});
        const auto& lerp = T(nm(l, "time_mix_lerp_fused.weight", "att.x_rwkvag"));
        const float* fused = b.vec(lerp, gguf ? std::vector<std::uint64_t>{C, 1, 1, 6} : std::vector<std::uint64_t>{C, 1, 6});
        for (std::size_t c = 0; c < 6; ++c) L.lerp7[c] = fused + c * C;
        L.decay = b.vec(T(nm(l, "time_mix_w0.weight", "att.w0")), {C});
        L.decay_w1 = b.mat(T(nm(l, "time_mix_w1.weight", "att.w1")), DW, C);
        L.decay_w2 = b.mat(T(nm(l, "time_mix_w2.weight", "att.w2")), C, DW);
        L.iclr0 = b.vec(T(nm(l, "time_mix_a0.weight", "att.a0")), {C});
        L.iclr_w1 = b.mat(T(nm(l, "time_mix_a1.weight", "att.a1")), DA, C);
        L.iclr_w2 = b.mat(T(nm(l, "time_mix_a2.weight", "att.a2")), C, DA);
        if (l > 0) {
            L.vres0 = b.vec(T(nm(l, "time_mix_v0.weight", "att.v0")), {C});
            L.vres_w1 = b.mat(T(nm(l, "time_mix_v1.weight", "att.v1")), DV, C);
            L.vres_w2 = b.mat(T(nm(l, "time_mix_v2.weight", "att.v2")), C, DV);
        } else if (gguf) {
            // llama.cpp requires layer 0's v0/v1/v2; the converter writes copies of the a-LoRA
            // there (layer 0 has no value residual): present, never read
            for (const char* s : {"time_mix_v0.weight", "time_mix_v1.weight", "time_mix_v2.weight"})
                if (f.find_tensor(nm(0, s, ""))) b.known_unused(nm(0, s, ""));
        }
        L.gate_w1 = b.mat(T(nm(l, "time_mix_g1.weight", "att.g1")), DG, C);
        L.gate_w2 = b.mat(T(nm(l, "time_mix_g2.weight", "att.g2")), C, DG);
        L.k_k = b.vec(T(nm(l, "time_mix_k_k.weight", "att.k_k")), {C});
        L.k_a = b.vec(T(nm(l, "time_mix_k_a.weight", "att.k_a")), {C});
        L.r_k = b.vec(T(nm(l, "time_mix_r_k.weight", "att.r_k")), gguf ? std::vector<std::uint64_t>{C} : std::vector<std::uint64_t>{N, H});
        L.wr = b.mat(T(nm(l, "time_mix_receptance.weight", "att.receptance.weight")), C, C);
        L.wk = b.mat(T(nm(l, "time_mix_key.weight", "att.key.weight")), C, C);
        L.wv = b.mat(T(nm(l, "time_mix_value.weight", "att.value.weight")), C, C);
        L.wo = b.mat(T(nm(l, "time_mix_output.weight", "att.output.weight")), C, C);
        L.lnx_w = b.vec(T(nm(l, "time_mix_ln.weight", "att.ln_x.weight")), {C});
        L.lnx_b = b.vec(T(nm(l, "time_mix_ln.bias", "att.ln_x.bias")), {C});
        L.ffn_maa_k = b.vec(T(nm(l, "channel_mix_lerp_k.weight", "ffn.x_k")), {C});
        L.ffn_k = b.mat(T(nm(l, "channel_mix_key.weight", "ffn.key.weight")), F, C);
        L.ffn_v = b.mat(T(nm(l, "channel_mix_value.weight", "ffn.value.weight")), C, F);
    }
    if (W.range.count == hp.n_layer) b.check_all_bound(f.tensors());
}

template <class Arch>
void rwkv_load_bin(rwkv_model<Arch>& m, std::span<const std::byte> bytes, std::shared_ptr<const void> owner,
                   const rwkv_load_options& opt) {
    const auto f = std::make_shared<const rwkv_bin::file>(rwkv_bin::file::from_memory(bytes));
    const auto& h = f->hdr();
    auto& hp = m.weights.hp;
    int version;
    if (f->find_tensor("blocks.0.att.time_maa_x")) version = 6;
    else if (f->find_tensor("blocks.0.att.x_rwkvag")) version = 7;
    else if (f->find_tensor("blocks.0.att.time_faaaa") && f->find_tensor("blocks.0.att.time_mix_g")) version = 5;
    else throw format_error("not an RWKV v5.2 or v6 model (no blocks.0.att.time_maa_x or time_faaaa/time_mix_g; "
                            "RWKV v4 and v5.0 are not supported)");
    // heads: time_faaaa [1, N, H] (v5.2, v6) or r_k [N, H] (v7; [N] for one head)
    const char* heads_of = version == 7 ? "blocks.0.att.r_k" : "blocks.0.att.time_faaaa";
    const auto fn = version == 7 ? rwkv_trim_ones(f->tensor(heads_of).ne) : f->tensor(heads_of).ne;
    std::size_t N, H;
    if (fn.size() == 3 && fn[0] == 1) { N = fn[1]; H = fn[2]; }
    else if (fn.size() == 2) { N = fn[0]; H = fn[1]; }
    else if (fn.size() == 1 && version == 7) { N = fn[0]; H = 1; }
    else throw format_error("tensor '" + std::string(heads_of) + "' has shape " + rwkv_shape_str(fn) + ", expected [1, N, H]");
    hp.version = version;
    hp.n_vocab = h.n_vocab;
    hp.n_embd = h.n_embed;
    hp.n_layer = h.n_layer;
    hp.head_size = N;
    hp.n_head = H;
    if (N * H != hp.n_embd)
        throw format_error(std::string(heads_of) + " gives " + std::to_string(H) + " heads of " + std::to_string(N) +
                           ", which do not make n_embed = " + std::to_string(hp.n_embd));
    const auto& fk = f->tensor("blocks.0.ffn.key.weight");
    if (fk.ne.size() != 2) throw format_error("tensor 'blocks.0.ffn.key.weight' has shape " + rwkv_shape_str(fk.ne) + ", expected [n_embed, n_ffn]");
    hp.n_ffn = fk.ne[1];
    if (version == 6) {
        const auto& w1 = f->tensor("blocks.0.att.time_maa_w1");
        const auto& d1 = f->tensor("blocks.0.att.time_decay_w1");
        if (w1.ne.size() != 2 || w1.ne[1] % 5 != 0)
            throw format_error("tensor 'blocks.0.att.time_maa_w1' has shape " + rwkv_shape_str(w1.ne) + ", expected [n_embed, 5 * D_MIX]");
        if (d1.ne.size() != 2) throw format_error("tensor 'blocks.0.att.time_decay_w1' has shape " + rwkv_shape_str(d1.ne) + ", expected [n_embed, D_DECAY]");
        hp.n_lora_mix = w1.ne[1] / 5;
        hp.n_lora_decay = d1.ne[1];
    }
    hp.ln_eps = 1e-5f; // rwkv.cpp's fixed LayerNorm eps
    hp.gn_eps = opt.group_norm_eps;
    const auto keep = [&] {
        m.source = "rwkv.cpp .bin v" + std::to_string(h.version) + " " +
                   std::string(rwkv_bin::data_type_name(h.data_type)) + " (RWKV v" + rwkv_version_name(version) + ")";
        m.keep_alive = std::make_shared<std::pair<std::shared_ptr<const void>, std::shared_ptr<const rwkv_bin::file>>>(
            std::move(owner), f);
    };
    rwkv_check_static<Arch>(hp, version); // a version mismatch, or a static dimension the file does not have
    if constexpr (Arch::version == 7) {
        rwkv7_bind(m, *f, false, opt);
        keep();
        return;
    }

    const std::uint64_t C = hp.n_embd, V = hp.n_vocab, F = hp.n_ffn, DM = hp.n_lora_mix, DD = hp.n_lora_decay;
    rwkv_tensor_binder b(m.owned);
    auto T = [&](const std::string& name) -> const rwkv_bin::tensor_info& { return f->tensor(name); };
    auto& W = m.weights;
    W.range = opt.layers.resolved(hp.n_layer);
    if (W.has_embedding()) {
        W.emb = b.mat(T("emb.weight"), V, C);
        W.ln0_w = b.vec(T("blocks.0.ln0.weight"), {C});
        W.ln0_b = b.vec(T("blocks.0.ln0.bias"), {C});
    }
    if (W.has_head()) {
        W.ln_out_w = b.vec(T("ln_out.weight"), {C});
        W.ln_out_b = b.vec(T("ln_out.bias"), {C});
        W.head = b.mat(T("head.weight"), V, C);
    }
    // grown layer by layer: a hostile n_layer fails at the first missing tensor, never in an allocation
    for (std::size_t l = 0; l <= W.range.last(); ++l) {
        auto& L = W.layers.emplace_back();
        if (l < W.range.first) continue; // another stage's layer
        const std::string p = "blocks." + std::to_string(l) + ".";
        L.ln1_w = b.vec(T(p + "ln1.weight"), {C});
        L.ln1_b = b.vec(T(p + "ln1.bias"), {C});
        L.ln2_w = b.vec(T(p + "ln2.weight"), {C});
        L.ln2_b = b.vec(T(p + "ln2.bias"), {C});
        L.u = b.vec(T(p + "att.time_faaaa"), {1, N, H});
        L.decay = b.vec(T(p + "att.time_decay"), {1, N, H}); // v6: raw w0; v5.2: exp(-exp(w0)) already
        L.wr = b.mat(T(p + "att.receptance.weight"), C, C);
        L.wk = b.mat(T(p + "att.key.weight"), C, C);
        L.wv = b.mat(T(p + "att.value.weight"), C, C);
        L.wg = b.mat(T(p + "att.gate.weight"), C, C);
        L.wo = b.mat(T(p + "att.output.weight"), C, C);
        L.lnx_w = b.vec(T(p + "att.ln_x.weight"), {C});
        L.lnx_b = b.vec(T(p + "att.ln_x.bias"), {C});
        L.ffn_k = b.mat(T(p + "ffn.key.weight"), F, C);
        L.ffn_v = b.mat(T(p + "ffn.value.weight"), C, F);
        L.ffn_r = b.mat(T(p + "ffn.receptance.weight"), C, C);
        if (version == 6) {
            L.maa_x = b.vec(T(p + "att.time_maa_x"), {C});
            const char* names[5] = {"w", "k", "v", "r", "g"};
            for (std::size_t c = 0; c < 5; ++c) L.maa[c] = b.vec(T(p + "att.time_maa_" + names[c]), {C});
            L.maa_w1 = b.mat(T(p + "att.time_maa_w1"), 5 * DM, C);
            const auto& w2 = T(p + "att.time_maa_w2");
            b.expect(w2, {DM, C, 5});
            for (std::size_t c = 0; c < 5; ++c) L.maa_w2[c] = b.view(w2, C, DM, c * C * DM * (w2.type == ggml_type::F32 ? 4 : 2));
            L.decay_w1 = b.mat(T(p + "att.time_decay_w1"), DD, C);
            L.decay_w2 = b.mat(T(p + "att.time_decay_w2"), C, DD);
            L.ffn_maa_k = b.vec(T(p + "ffn.time_maa_k"), {C});
            L.ffn_maa_r = b.vec(T(p + "ffn.time_maa_r"), {C});
        } else {
            // v5 lerp: x_c = xa * mu + prev * (1 - mu) = xa + (prev - xa) * (1 - mu)
            auto one_minus = [&](const std::string& name) {
                const float* mu = b.vec(T(name), {C});
                auto& o = b.own(C);
                for (std::size_t c = 0; c < C; ++c) o[c] = 1.f - mu[c];
                return static_cast<const float*>(o.data());
            };
            L.maa[mix_k] = one_minus(p + "att.time_mix_k");
            L.maa[mix_v] = one_minus(p + "att.time_mix_v");
            L.maa[mix_r] = one_minus(p + "att.time_mix_r");
            L.maa[mix_g] = one_minus(p + "att.time_mix_g");
            L.ffn_maa_k = one_minus(p + "ffn.time_mix_k");
            L.ffn_maa_r = one_minus(p + "ffn.time_mix_r");
        }
    }
    if (W.range.count == hp.n_layer) b.check_all_bound(f->tensors());
    keep();
}

template <class Arch>
void rwkv_load_gguf(rwkv_model<Arch>& m, std::span<const std::byte> bytes, std::shared_ptr<const void> owner,
                    const rwkv_load_options& opt) {
    if constexpr (Arch::version == 5) {
        throw shape_error("GGUF has no RWKV-5 architecture; " + Arch::type_name() +
                          " loads rwkv.cpp .bin files (llama.cpp runs v5.2 rewritten as rwkv6: load that as Rwkv6)");
    } else if constexpr (Arch::version == 7) {
        const auto f = std::make_shared<const gguf::file>(gguf::file::from_memory(bytes));
        if (f->architecture() == "rwkv6") rwkv_check_static<Arch>(m.weights.hp, 6); // names the version mismatch
        const auto ah = arch::rwkv7_hparams::from_gguf(*f);
        auto& hp = m.weights.hp;
        rwkv_set_gguf_dims(hp, 7, ah, opt);
        hp.n_lora_decay = ah.n_lora_decay;
        hp.n_lora_iclr = ah.n_lora_iclr;
        hp.n_lora_vres = ah.n_lora_vres;
        hp.n_lora_gate = ah.n_lora_gate;
        rwkv7_bind(m, *f, true, opt);
        check_keys_read(*f, opt.unread, opt.known_unused_keys);
        m.source = "GGUF rwkv7";
        m.keep_alive = std::make_shared<std::pair<std::shared_ptr<const void>, std::shared_ptr<const gguf::file>>>(
            std::move(owner), f);
    } else {
        const auto f = std::make_shared<const gguf::file>(gguf::file::from_memory(bytes));
        if (f->architecture() == "rwkv7") rwkv_check_static<Arch>(m.weights.hp, 7); // names the version mismatch
        const auto ah = arch::rwkv6_hparams::from_gguf(*f);
        auto& hp = m.weights.hp;
        rwkv_set_gguf_dims(hp, 6, ah, opt);
        hp.n_lora_mix = ah.n_lora_mix;
        hp.n_lora_decay = ah.n_lora_decay;
        hp.rescale_every = ah.rescale_every;
        rwkv_check_static<Arch>(hp, 6);

        const std::uint64_t C = hp.n_embd, V = hp.n_vocab, F = hp.n_ffn, DM = hp.n_lora_mix, DD = hp.n_lora_decay,
                            N = hp.head_size, H = hp.n_head;
        using names = arch::rwkv6_names;
        rwkv_tensor_binder b(m.owned);
        auto T = [&](const std::string& name) -> const gguf::tensor_info& { return f->tensor(name); };
        auto& W = m.weights;
        W.range = opt.layers.resolved(hp.n_layer);
        if (W.has_embedding()) {
            W.emb = b.mat(T(names::token_embd), V, C);
            W.ln0_w = b.vec(T(names::token_embd_norm_w), {C});
            W.ln0_b = b.vec(T(names::token_embd_norm_b), {C});
        }
        if (W.has_head()) {
            W.ln_out_w = b.vec(T(names::output_norm_w), {C});
            W.ln_out_b = b.vec(T(names::output_norm_b), {C});
            W.head = b.mat(T(names::output), V, C);
        }
        for (std::size_t l = 0; l <= W.range.last(); ++l) { // grown layer by layer (see rwkv_load_bin)
            auto& L = W.layers.emplace_back();
            if (l < W.range.first) continue; // another stage's layer
            auto n = [&](const char* what) { return names::blk(l, what); };
            L.ln1_w = b.vec(T(n("attn_norm.weight")), {C});
            L.ln1_b = b.vec(T(n("attn_norm.bias")), {C});
            L.ln2_w = b.vec(T(n("attn_norm_2.weight")), {C});
            L.ln2_b = b.vec(T(n("attn_norm_2.bias")), {C});
            L.maa_x = b.vec(T(n("time_mix_lerp_x.weight")), {C});
            const float* fused = b.vec(T(n("time_mix_lerp_fused.weight")), {C, 1, 1, 5});
            for (std::size_t c = 0; c < 5; ++c) L.maa[c] = fused + c * C;
            L.maa_w1 = b.mat(T(n("time_mix_w1.weight")), 5 * DM, C);
            const auto& w2 = T(n("time_mix_w2.weight"));
            b.expect(w2, {DM, C, 5});
            const std::size_t esz = w2.type == ggml_type::F32 ? 4 : 2;
            for (std::size_t c = 0; c < 5; ++c) L.maa_w2[c] = b.view(w2, C, DM, c * C * DM * esz);
            L.decay = b.vec(T(n("time_mix_decay.weight")), {C});
            L.decay_w1 = b.mat(T(n("time_mix_decay_w1.weight")), DD, C);
            L.decay_w2 = b.mat(T(n("time_mix_decay_w2.weight")), C, DD);
            L.u = b.vec(T(n("time_mix_first.weight")), {N, H});
            L.wr = b.mat(T(n("time_mix_receptance.weight")), C, C);
            L.wk = b.mat(T(n("time_mix_key.weight")), C, C);
            L.wv = b.mat(T(n("time_mix_value.weight")), C, C);
            L.wg = b.mat(T(n("time_mix_gate.weight")), C, C);
            L.wo = b.mat(T(n("time_mix_output.weight")), C, C);
            L.lnx_w = b.vec(T(n("time_mix_ln.weight")), {C});
            L.lnx_b = b.vec(T(n("time_mix_ln.bias")), {C});
            L.ffn_maa_k = b.vec(T(n("channel_mix_lerp_k.weight")), {C});
            L.ffn_maa_r = b.vec(T(n("channel_mix_lerp_r.weight")), {C});
            L.ffn_k = b.mat(T(n("channel_mix_key.weight")), F, C);
            L.ffn_v = b.mat(T(n("channel_mix_value.weight")), C, F);
            L.ffn_r = b.mat(T(n("channel_mix_receptance.weight")), C, C);
        }
        if (W.range.count == hp.n_layer) b.check_all_bound(f->tensors());
        check_keys_read(*f, opt.unread, opt.known_unused_keys);
        m.source = "GGUF rwkv6";
        m.keep_alive = std::make_shared<std::pair<std::shared_ptr<const void>, std::shared_ptr<const gguf::file>>>(
            std::move(owner), f);
    }
}

template <class Arch>
rwkv_model<Arch> rwkv_load_bytes(std::span<const std::byte> bytes, std::shared_ptr<const void> owner,
                                 const rwkv_load_options& opt) {
    if (!(opt.group_norm_eps > 0.f) || opt.group_norm_eps > 1.f)
        throw argument_error("group_norm_eps " + std::to_string(opt.group_norm_eps) + " is outside (0, 1]");
    rwkv_model<Arch> m;
    if (bytes.size() >= 4 && std::memcmp(bytes.data(), "GGUF", 4) == 0) rwkv_load_gguf(m, bytes, std::move(owner), opt);
    else if (rwkv_bin::has_magic(bytes)) rwkv_load_bin(m, bytes, std::move(owner), opt);
    else throw format_error("neither a GGUF file nor an rwkv.cpp model file (unknown magic)");
    rwkv_check_storage<Arch>(m.weights);
    return m;
}

} // namespace detail

/// Loads an RWKV model (GGUF rwkv6 / rwkv7 or rwkv.cpp .bin, told apart by the magic).
/// Weights stay in the read-only mapping of the file.
template <class Arch>
    requires RwkvArchitecture<Arch>
rwkv_model<Arch> load_model(const std::string& path, const rwkv_load_options& opt = {}) {
    auto map = std::make_shared<const io::mapped_file>(path);
    const auto bytes = map->bytes();
    try {
        return detail::rwkv_load_bytes<Arch>(bytes, std::move(map), opt);
    } catch (const format_error& e) {
        throw format_error("'" + path + "': " + e.what());
    } catch (const shape_error& e) {
        throw shape_error("'" + path + "': " + e.what());
    }
}

/// Loads an RWKV model from bytes the caller keeps alive as long as the model.
template <class Arch>
    requires RwkvArchitecture<Arch>
rwkv_model<Arch> load_model_from_memory(std::span<const std::byte> bytes, const rwkv_load_options& opt = {}) {
    return detail::rwkv_load_bytes<Arch>(bytes, nullptr, opt);
}

} // namespace archetype
