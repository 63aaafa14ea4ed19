#pragma once
// rwkv.cpp's .bin files (io/rwkv_bin.hpp) as GGUF files in memory, under llama.cpp's rwkv6 /
// rwkv7 names and keys, so that the decoder core loads them as it loads llama.cpp's files
// (docs/rwkv.md). The conversion is rwkv.cpp's layout to llama.cpp's, the way llama.cpp's
// converter writes an RWKV checkpoint: renames, the five (v6) or six (v7) token-shift lerps
// fused into one tensor, the 1-D tensors as F32 (an FP16 file's vectors converted exactly);
// matrices keep their type and bytes. RWKV-5.2, which llama.cpp does not run, gets the
// architecture name `rwkv5` and static lerps time_mix_lerp_{k,v,r,g} / channel_mix_lerp_{k,r}
// holding 1 - mu (policies/mixers/rwkv_v5_v6.hpp reads them so).
//
// Keys written: {arch}.context_length (1048576, what llama.cpp's converter writes: a recurrent
// state has no limit), embedding_length, block_count, feed_forward_length, wkv.head_size,
// attention.head_count (0), attention.layer_norm_epsilon (rwkv.cpp's fixed 1e-5) and
// attention.group_norm_epsilon (the caller's: 64e-5 is RWKV's, rwkv.cpp computed v5.2 with 1e-5).
//
// The file is hostile input: its version is told by the tensors layer 0 has, every
// dimension is checked against the header's, and a tensor this conversion does not know is
// a format_error naming it (never dropped).
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "archetype/core/error.hpp"
#include "archetype/core/half.hpp"
#include "archetype/io/gguf.hpp"
#include "archetype/io/gguf_writer.hpp"
#include "archetype/io/rwkv_bin.hpp"

namespace archetype::rwkv_bin {

/// The RWKV version of a .bin file (5 for v5.2, 6, 7), told by layer 0's tensors.
inline int rwkv_version_of(const file& f) {
    if (f.find_tensor("blocks.0.att.time_maa_x")) return 6;
    if (f.find_tensor("blocks.0.att.x_rwkvag")) return 7;
    if (f.find_tensor("blocks.0.att.time_faaaa") && f.find_tensor("blocks.0.att.time_mix_g")) return 5;
    throw format_error("not an RWKV v5.2, v6 or v7 model (no blocks.0.att.time_maa_x, x_rwkvag or "
                       "time_faaaa/time_mix_g; RWKV v4 and v5.0 are not supported)");
}

namespace detail {

/// A tensor's values as float32 (FP32 copied from any alignment, FP16 converted).
inline std::vector<float> as_f32(const tensor_info& t) {
    const std::size_t n = std::size_t(t.n_elements());
    std::vector<float> v(n);
    if (t.type == ggml_type::F32) {
        std::memcpy(v.data(), t.data, n * sizeof(float));
    } else if (t.type == ggml_type::F16) {
        for (std::size_t i = 0; i < n; ++i) {
            std::uint16_t h;
            std::memcpy(&h, t.data + 2 * i, 2);
            v[i] = fp16_to_fp32(h);
        }
    } else {
        throw format_error("tensor '" + t.name + "' has type " + std::string(type_name(t.type)) +
                           ", a float (FP32/FP16) vector was expected");
    }
    return v;
}

inline std::uint64_t elements(const std::vector<std::uint64_t>& ne) {
    std::uint64_t n = 1;
    for (auto d : ne) n *= d;
    return n;
}

class converter {
public:
    converter(const file& f, gguf::writer& w) : f_(f), w_(w), used_(f.tensors().size(), false) {}

    const tensor_info& get(const std::string& name) {
        const auto* t = f_.find_tensor(name);
        if (!t) throw format_error("rwkv.cpp file has no tensor '" + name + "'");
        used_[std::size_t(t - f_.tensors().data())] = true;
        return *t;
    }
    bool has(const std::string& name) const { return f_.find_tensor(name) != nullptr; }

    /// A 1-D tensor (any leading / trailing extents of 1) of `n` values, as F32 of shape ne.
    void vec(const std::string& from, const std::string& to, std::vector<std::uint64_t> ne) {
        const auto& t = get(from);
        if (t.n_elements() != elements(ne))
            throw format_error("tensor '" + from + "' has shape " + t.shape_string() + ", expected " +
                               std::to_string(elements(ne)) + " values");
        w_.add_tensor(to, ggml_type::F32, std::move(ne), as_f32(t));
    }
    /// The same, each value v written as 1 - v (RWKV-5.2's mix coefficients mu as lerps).
    void one_minus(const std::string& from, const std::string& to, std::uint64_t n) {
        const auto& t = get(from);
        if (t.n_elements() != n)
            throw format_error("tensor '" + from + "' has shape " + t.shape_string() + ", expected " + std::to_string(n) +
                               " values");
        auto v = as_f32(t);
        for (auto& x : v) x = 1.f - x;
        w_.add_tensor(to, ggml_type::F32, {n}, std::move(v));
    }
    /// Several 1-D tensors of n values each, one after the other in one F32 tensor of shape ne.
    void fused(const std::vector<std::string>& from, const std::string& to, std::uint64_t n,
               std::vector<std::uint64_t> ne) {
        std::vector<float> all;
        for (const auto& name : from) {
            const auto& t = get(name);
            if (t.n_elements() != n)
                throw format_error("tensor '" + name + "' has shape " + t.shape_string() + ", expected " +
                                   std::to_string(n) + " values");
            const auto v = as_f32(t);
            all.insert(all.end(), v.begin(), v.end());
        }
        w_.add_tensor(to, ggml_type::F32, std::move(ne), std::move(all));
    }
    /// A matrix (or the 3-D ddlerp W2) of exactly shape ne, its type and bytes kept.
    void mat(const std::string& from, const std::string& to, const std::vector<std::uint64_t>& ne) {
        const auto& t = get(from);
        if (trim(t.ne) != trim(ne)) // rwkv.cpp and converters differ in leading / trailing extents of 1
            throw format_error("tensor '" + from + "' has shape " + t.shape_string() + ", expected " + shape(ne));
        w_.add_tensor(to, t.type, ne, std::span<const std::byte>(t.data, t.n_bytes));
    }
    /// Every tensor of the file was converted: else a format_error naming the first other.
    void check_all_used() const {
        for (std::size_t i = 0; i < used_.size(); ++i)
            if (!used_[i])
                throw format_error("tensor '" + f_.tensors()[i].name + "' is not one an RWKV model is converted with "
                                   "(refusing rather than dropping it)");
    }

private:
    static std::vector<std::uint64_t> trim(std::vector<std::uint64_t> ne) {
        while (ne.size() > 1 && ne.back() == 1) ne.pop_back();
        while (ne.size() > 1 && ne.front() == 1) ne.erase(ne.begin());
        return ne;
    }
    static std::string shape(const std::vector<std::uint64_t>& ne) {
        std::string s = "[";
        for (std::size_t i = 0; i < ne.size(); ++i) s += (i ? ", " : "") + std::to_string(ne[i]);
        return s + "]";
    }
    const file& f_;
    gguf::writer& w_;
    std::vector<bool> used_;
};

/// n / d where d divides n, else a format_error naming `what`.
inline std::uint64_t exact_div(std::uint64_t n, std::uint64_t d, const std::string& what) {
    if (d == 0 || n % d != 0) throw format_error(what + ": " + std::to_string(n) + " is not a multiple of " + std::to_string(d));
    return n / d;
}

} // namespace detail

/// The .bin file `f` as a GGUF file held in memory (the bytes of `f` may go once this returns).
inline gguf::file as_gguf(const file& f, float group_norm_eps = 64e-5f) {
    if (!(group_norm_eps > 0.f) || !(group_norm_eps <= 1.f))
        throw argument_error("group_norm_eps " + std::to_string(group_norm_eps) + " is outside (0, 1]");
    const int version = rwkv_version_of(f);
    const auto& h = f.hdr();
    const std::uint64_t C = std::uint64_t(h.n_embed), V = std::uint64_t(h.n_vocab), L = std::uint64_t(h.n_layer);
    if (C == 0 || V == 0 || L == 0)
        throw format_error("header gives n_vocab " + std::to_string(V) + ", n_embed " + std::to_string(C) + ", n_layer " +
                           std::to_string(L) + ": each must be positive");
    // heads: time_faaaa [1, N, H] (v5.2, v6) or r_k [N, H] (v7; [N] for one head)
    const auto& heads = f.tensor(version == 7 ? "blocks.0.att.r_k" : "blocks.0.att.time_faaaa");
    std::vector<std::uint64_t> hn = heads.ne;
    while (hn.size() > 1 && hn.front() == 1) hn.erase(hn.begin());
    const std::uint64_t N = hn[0], H = hn.size() > 1 ? hn[1] : 1;
    if (N == 0 || N * H != C || hn.size() > 2)
        throw format_error("tensor '" + heads.name + "' has shape " + heads.shape_string() + ", which does not give heads of "
                           "n_embed = " + std::to_string(C));
    const auto& fk = f.tensor("blocks.0.ffn.key.weight");
    if (fk.ne.size() != 2 || fk.ne[0] != C)
        throw format_error("tensor 'blocks.0.ffn.key.weight' has shape " + fk.shape_string() + ", expected [n_embed, n_ffn]");
    const std::uint64_t F = fk.ne[1];

    const std::string a = version == 5 ? "rwkv5" : version == 6 ? "rwkv6" : "rwkv7";
    gguf::writer w;
    w.set("general.architecture", a);
    w.set("general.name", std::string("rwkv.cpp .bin v") + std::to_string(h.version) + " " +
                               std::string(data_type_name(h.data_type)));
    w.set(a + ".context_length", std::uint64_t(1048576));
    w.set(a + ".embedding_length", C);
    w.set(a + ".block_count", L);
    w.set(a + ".feed_forward_length", F);
    w.set(a + ".wkv.head_size", N);
    w.set(a + ".attention.head_count", std::uint64_t(0));
    w.set(a + ".attention.layer_norm_epsilon", 1e-5f); // rwkv.cpp's fixed LayerNorm eps
    w.set(a + ".attention.group_norm_epsilon", group_norm_eps);

    detail::converter c(f, w);
    c.mat("emb.weight", "token_embd.weight", {C, V});
    c.vec("blocks.0.ln0.weight", "token_embd_norm.weight", {C});
    c.vec("blocks.0.ln0.bias", "token_embd_norm.bias", {C});
    c.vec("ln_out.weight", "output_norm.weight", {C});
    c.vec("ln_out.bias", "output_norm.bias", {C});
    c.mat("head.weight", "output.weight", {C, V});
    for (std::uint64_t l = 0; l < L; ++l) {
        const std::string p = "blocks." + std::to_string(l) + ".", g = "blk." + std::to_string(l) + ".";
        c.vec(p + "ln1.weight", g + "attn_norm.weight", {C});
        c.vec(p + "ln1.bias", g + "attn_norm.bias", {C});
        c.vec(p + "ln2.weight", g + "attn_norm_2.weight", {C});
        c.vec(p + "ln2.bias", g + "attn_norm_2.bias", {C});
        const std::vector<std::uint64_t> CC{C, C};
        c.mat(p + "att.receptance.weight", g + "time_mix_receptance.weight", CC);
        c.mat(p + "att.key.weight", g + "time_mix_key.weight", CC);
        c.mat(p + "att.value.weight", g + "time_mix_value.weight", CC);
        c.mat(p + "att.output.weight", g + "time_mix_output.weight", CC);
        c.vec(p + "att.ln_x.weight", g + "time_mix_ln.weight", {C});
        c.vec(p + "att.ln_x.bias", g + "time_mix_ln.bias", {C});
        c.mat(p + "ffn.key.weight", g + "channel_mix_key.weight", {C, F});
        c.mat(p + "ffn.value.weight", g + "channel_mix_value.weight", {F, C});
        if (version == 7) {
            c.fused({p + "att.x_rwkvag"}, g + "time_mix_lerp_fused.weight", 6 * C, {C, 1, 1, 6});
            auto lora = [&](const char* from, const char* to, bool first) {
                const auto& t = c.get(p + "att." + from);
                if (t.ne.size() != 2) throw format_error("tensor '" + t.name + "' has shape " + t.shape_string() + ", expected a matrix");
                const std::uint64_t D = first ? t.ne[1] : t.ne[0];
                c.mat(p + "att." + from, g + to, first ? std::vector<std::uint64_t>{C, D} : std::vector<std::uint64_t>{D, C});
            };
            c.vec(p + "att.w0", g + "time_mix_w0.weight", {C});
            lora("w1", "time_mix_w1.weight", true);
            lora("w2", "time_mix_w2.weight", false);
            c.vec(p + "att.a0", g + "time_mix_a0.weight", {C});
            lora("a1", "time_mix_a1.weight", true);
            lora("a2", "time_mix_a2.weight", false);
            if (c.has(p + "att.v0")) { // the value residual: every layer but the first
                c.vec(p + "att.v0", g + "time_mix_v0.weight", {C});
                lora("v1", "time_mix_v1.weight", true);
                lora("v2", "time_mix_v2.weight", false);
            }
            lora("g1", "time_mix_g1.weight", true);
            lora("g2", "time_mix_g2.weight", false);
            c.vec(p + "att.k_k", g + "time_mix_k_k.weight", {C});
            c.vec(p + "att.k_a", g + "time_mix_k_a.weight", {C});
            c.vec(p + "att.r_k", g + "time_mix_r_k.weight", {C});
            c.vec(p + "ffn.x_k", g + "channel_mix_lerp_k.weight", {C});
            continue;
        }
        c.mat(p + "att.gate.weight", g + "time_mix_gate.weight", CC);
        c.mat(p + "ffn.receptance.weight", g + "channel_mix_receptance.weight", CC);
        c.vec(p + "att.time_faaaa", g + "time_mix_first.weight", {N, H});
        c.vec(p + "att.time_decay", g + "time_mix_decay.weight", {C}); // v6: w0; v5.2: exp(-exp(w0))
        if (version == 6) {
            c.vec(p + "att.time_maa_x", g + "time_mix_lerp_x.weight", {C});
            c.fused({p + "att.time_maa_w", p + "att.time_maa_k", p + "att.time_maa_v", p + "att.time_maa_r",
                     p + "att.time_maa_g"},
                    g + "time_mix_lerp_fused.weight", C, {C, 1, 1, 5});
            const auto& w1 = c.get(p + "att.time_maa_w1");
            if (w1.ne.size() != 2) throw format_error("tensor '" + w1.name + "' has shape " + w1.shape_string() + ", expected [n_embed, 5 * D_MIX]");
            const std::uint64_t DM = detail::exact_div(w1.ne[1], 5, "tensor '" + w1.name + "'");
            c.mat(p + "att.time_maa_w1", g + "time_mix_w1.weight", {C, 5 * DM});
            c.mat(p + "att.time_maa_w2", g + "time_mix_w2.weight", {DM, C, 5});
            const auto& d1 = c.get(p + "att.time_decay_w1");
            if (d1.ne.size() != 2) throw format_error("tensor '" + d1.name + "' has shape " + d1.shape_string() + ", expected [n_embed, D_DECAY]");
            c.mat(p + "att.time_decay_w1", g + "time_mix_decay_w1.weight", {C, d1.ne[1]});
            c.mat(p + "att.time_decay_w2", g + "time_mix_decay_w2.weight", {d1.ne[1], C});
            if (l == 0) {
                w.set(a + ".time_mix_extra_dim", DM);
                w.set(a + ".time_decay_extra_dim", d1.ne[1]);
            }
            c.vec(p + "ffn.time_maa_k", g + "channel_mix_lerp_k.weight", {C});
            c.vec(p + "ffn.time_maa_r", g + "channel_mix_lerp_r.weight", {C});
        } else { // v5.2: x_c = xa * mu + prev * (1 - mu) = xa + (prev - xa) * (1 - mu)
            for (const char* m : {"k", "v", "r", "g"})
                c.one_minus(p + "att.time_mix_" + m, g + "time_mix_lerp_" + m + ".weight", C);
            c.one_minus(p + "ffn.time_mix_k", g + "channel_mix_lerp_k.weight", C);
            c.one_minus(p + "ffn.time_mix_r", g + "channel_mix_lerp_r.weight", C);
        }
    }
    c.check_all_used();
    return gguf::file::from_owned_bytes(w.write_to_memory());
}

} // namespace archetype::rwkv_bin
