#pragma once
// load_model<Rwkv5<...>/Rwkv6<...>/Rwkv7<...>>(path, options): opens an RWKV model
// file, recognised by its first bytes — "GGUF" (llama.cpp architecture rwkv6 or
// rwkv7) or 0x67676d66 (rwkv.cpp .bin, v5.2, v6 or v7, FP32/FP16, converted to
// llama.cpp's layout in memory by io/rwkv_bin_gguf.hpp) — and loads it as the decoder
// core's model of Arch::core: each policy binds its own tensors and reads its own keys,
// every tensor of the file must be bound (a stray one is an error naming it) and every
// key read (the key ledger). The file's RWKV version must be Arch's and the compiled
// static dimensions the file's (shape_error naming both values).
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "archetype/core/error.hpp"
#include "archetype/io/gguf.hpp"
#include "archetype/io/key_ledger.hpp"
#include "archetype/io/mapped_file.hpp"
#include "archetype/io/rwkv_bin.hpp"
#include "archetype/io/rwkv_bin_gguf.hpp"
#include "archetype/models/decoder_model.hpp"
#include "archetype/models/rwkv_model.hpp"

namespace archetype {

struct rwkv_load_options {
    /// eps of the ln_x GroupNorm of an rwkv.cpp .bin file. 64e-5 is the official value
    /// (ChatRWKV, llama.cpp, rwkv.cpp for v6); rwkv.cpp computes v5 with 1e-5. A GGUF file
    /// states its own ({arch}.attention.group_norm_epsilon, 64e-5 when absent).
    float group_norm_eps = 64e-5f;
    /// The layers to load (a pipeline stage, models/layer_range.hpp); default: all.
    layer_range layers{};
    /// A GGUF metadata key no policy reads (io/key_ledger.hpp): error (default) or warn.
    unread_keys unread = unread_keys::error;
    /// Keys a user's architecture accepts without reading, beyond the shared list.
    std::span<const known_unused_key> known_unused_keys{};
};

namespace detail {

inline std::string rwkv_version_name(int v) { return v == 5 ? "5.2" : std::to_string(v); }

/// The file's RWKV version must be the compiled one.
template <class Arch>
void rwkv_check_version(int file_version) {
    if (file_version != Arch::version)
        throw shape_error("the file is an RWKV v" + rwkv_version_name(file_version) + " model, but " + Arch::type_name() +
                          " is RWKV v" + rwkv_version_name(Arch::version) + ": load it as Rwkv" +
                          std::to_string(file_version) + "<...>");
}

/// The RWKV version a GGUF file's architecture names (rwkv5 only from a converted .bin).
inline int rwkv_gguf_version(const gguf::file& f) {
    const std::string_view a = f.architecture();
    if (a == "rwkv6") return 6;
    if (a == "rwkv7") return 7;
    if (a == "rwkv5") return 5;
    throw shape_error("general.architecture '" + std::string(a) + "' is not an RWKV model (rwkv6, rwkv7)");
}

/// The loaded dimensions in RWKV's terms, from the core's model.
template <class Arch>
rwkv_hparams rwkv_hparams_of(const decoder_model<typename Arch::core>& m) {
    const auto& d = m.hparams().dims;
    rwkv_hparams hp;
    hp.version = Arch::version;
    hp.n_vocab = d.n_vocab;
    hp.n_embd = d.n_embd;
    hp.n_layer = d.n_layer;
    hp.n_ffn = d.n_ff;
    hp.ln_eps = m.hparams().norm_eps;
    hp.rescale_every = std::size_t(m.file().template get_or<std::uint64_t>(m.hparams().arch + ".rescale_every_n_layers", 0));
    const auto& R = m.layers();
    const auto& first = m.layer_at(R.first).attn;
    hp.head_size = first.hp.head_size;
    hp.n_head = first.hp.n_head;
    hp.gn_eps = first.hp.gn_eps;
    if constexpr (Arch::version == 7) {
        // the LoRA ranks from the matrices' rows (the value residual's from a later layer)
        hp.n_lora_decay = first.L.decay_w1.rows;
        hp.n_lora_iclr = first.L.iclr_w1.rows;
        hp.n_lora_gate = first.L.gate_w1.rows;
        for (std::size_t il = R.first; il <= R.last() && hp.n_lora_vres == 0; ++il)
            hp.n_lora_vres = m.layer_at(il).attn.L.vres_w1.rows;
    } else {
        hp.n_lora_mix = first.hp.n_lora_mix;
        hp.n_lora_decay = first.hp.n_lora_decay;
    }
    return hp;
}

template <class Arch>
void rwkv_check_static(const rwkv_hparams& hp) {
    if (Arch::embd != dynamic && Arch::embd != hp.n_embd)
        throw shape_error(Arch::type_name() + " was compiled for D = " + std::to_string(Arch::embd) +
                          " but the file has n_embd = " + std::to_string(hp.n_embd));
    if (Arch::head_size != dynamic && Arch::head_size != hp.head_size)
        throw shape_error(Arch::type_name() + " was compiled for head size H = " + std::to_string(Arch::head_size) +
                          " but the file has head size " + std::to_string(hp.head_size));
}

/// A GGUF file (from disk, from memory, or a converted .bin) as Arch.
template <class Arch>
rwkv_model<Arch> rwkv_load_gguf(gguf::file f, std::string source, const rwkv_load_options& opt) {
    const int version = rwkv_gguf_version(f);
    rwkv_check_version<Arch>(version);
    decoder_options o;
    o.layers = opt.layers;
    o.unread = opt.unread;
    o.known_unused_keys = opt.known_unused_keys;
    auto core = decoder_model<typename Arch::core>::load(std::move(f), o);
    rwkv_hparams hp = rwkv_hparams_of<Arch>(core);
    rwkv_check_static<Arch>(hp);
    return rwkv_model<Arch>{std::move(core), hp, std::move(source)};
}

template <class Arch>
rwkv_model<Arch> rwkv_load_bin(const rwkv_bin::file& bin, const rwkv_load_options& opt) {
    const int version = rwkv_bin::rwkv_version_of(bin);
    rwkv_check_version<Arch>(version);
    const auto& h = bin.hdr();
    std::string source = "rwkv.cpp .bin v" + std::to_string(h.version) + " " +
                         std::string(rwkv_bin::data_type_name(h.data_type)) + " (RWKV v" + rwkv_version_name(version) + ")";
    return rwkv_load_gguf<Arch>(rwkv_bin::as_gguf(bin, opt.group_norm_eps), std::move(source), opt);
}

/// A GGUF file keeps RWKV's GroupNorm eps in its metadata: the option is for .bin files.
inline void rwkv_check_gguf_eps(const gguf::file& f, const rwkv_load_options& opt) {
    const std::string key = std::string(f.architecture()) + ".attention.group_norm_epsilon";
    const float file_eps = f.get_or<float>(key, 64e-5f);
    if (opt.group_norm_eps != file_eps)
        throw argument_error("group_norm_eps " + std::to_string(opt.group_norm_eps) + " for a GGUF file, whose ln_x eps is " +
                             std::to_string(file_eps) + " (" + key + ", 64e-5 when absent): the option is for rwkv.cpp .bin files");
}

inline void rwkv_check_eps_option(const rwkv_load_options& opt) {
    if (!(opt.group_norm_eps > 0.f) || opt.group_norm_eps > 1.f)
        throw argument_error("group_norm_eps " + std::to_string(opt.group_norm_eps) + " is outside (0, 1]");
}

inline bool is_gguf(std::span<const std::byte> bytes) {
    return bytes.size() >= 4 && std::memcmp(bytes.data(), "GGUF", 4) == 0;
}

/// An rwkv.cpp .bin file's bytes (converted: they may go once this returns).
template <class Arch>
rwkv_model<Arch> rwkv_load_bin_bytes(std::span<const std::byte> bytes, const rwkv_load_options& opt) {
    if (!rwkv_bin::has_magic(bytes)) throw format_error("neither a GGUF file nor an rwkv.cpp model file (unknown magic)");
    return rwkv_load_bin<Arch>(rwkv_bin::file::from_memory(bytes), opt);
}

} // namespace detail

/// Loads an RWKV model (GGUF rwkv6 / rwkv7 or rwkv.cpp .bin, told apart by the magic).
/// A GGUF's weights stay in the read-only mapping of the file; a .bin's are converted.
template <class Arch>
    requires RwkvArchitecture<Arch>
rwkv_model<Arch> load_model(const std::string& path, const rwkv_load_options& opt = {}) {
    detail::rwkv_check_eps_option(opt);
    const auto map = std::make_shared<const io::mapped_file>(path);
    try {
        if (detail::is_gguf(map->bytes())) {
            auto f = gguf::file::open(path);
            detail::rwkv_check_gguf_eps(f, opt);
            const std::string source = "GGUF " + std::string(f.architecture());
            return detail::rwkv_load_gguf<Arch>(std::move(f), source, opt);
        }
        return detail::rwkv_load_bin_bytes<Arch>(map->bytes(), opt);
    } catch (const format_error& e) {
        throw format_error("'" + path + "': " + e.what());
    } catch (const shape_error& e) {
        throw shape_error("'" + path + "': " + e.what());
    }
}

/// Loads an RWKV model from bytes the caller keeps alive as long as the model (a GGUF's
/// weights are views of them; a .bin's are converted, so its bytes may go at once).
template <class Arch>
    requires RwkvArchitecture<Arch>
rwkv_model<Arch> load_model_from_memory(std::span<const std::byte> bytes, const rwkv_load_options& opt = {}) {
    detail::rwkv_check_eps_option(opt);
    if (detail::is_gguf(bytes)) {
        auto f = gguf::file::from_memory(bytes);
        detail::rwkv_check_gguf_eps(f, opt);
        const std::string source = "GGUF " + std::string(f.architecture());
        return detail::rwkv_load_gguf<Arch>(std::move(f), source, opt);
    }
    return detail::rwkv_load_bin_bytes<Arch>(bytes, opt);
}

} // namespace archetype
