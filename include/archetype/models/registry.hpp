#pragma once
// The architecture registry: a compile-time list of architecture entries and the
// lookup of a file's entry. An entry is a small struct:
//
//   struct qwen2_architecture {
//       static constexpr std::string_view gguf_name = "qwen2";        // general.architecture
//       using model = presets::Qwen2;                                 // the compiled structure
//       static constexpr arch::gguf_conventions conventions{.rope_neox = true};  // optional
//       static bool accepts(const gguf::file& f);                     // optional: when a name is not enough
//       // static bool accepts_path(const std::string&);  optional: a file that is not a GGUF
//       //                                                 (rwkv.cpp .bin, told by its bytes)
//   };
//
// The library's list is default_architectures (models/architectures.hpp); an
// application extends it with its own entries, without editing library headers:
//
//   using mine = archetype::extend_t<archetype::default_architectures, my_architecture>;
//   archetype::with_architecture<mine>(file, [&]<class A>(std::type_identity<A>) { ... });
//
// The list is a plain type list rather than a boost::hana::tuple: the lookup is one
// fold, and Hana's headers would cost every translation unit that loads a model
// (TOOLCHAIN.md: ~20-30 ms and multi-KB messages per instantiation).
#include <concepts>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "archetype/core/error.hpp"
#include "archetype/io/arch/conventions.hpp"
#include "archetype/io/gguf.hpp"

namespace archetype {

/// A registry entry: a name in files and the structure that runs them.
template <class E>
concept ArchitectureEntry = requires {
    { E::gguf_name } -> std::convertible_to<std::string_view>;
    typename E::model;
};

template <class... Entries>
struct architecture_list {
    static_assert((ArchitectureEntry<Entries> && ...),
                  "archetype: every architecture_list entry needs `static constexpr std::string_view gguf_name` "
                  "and `using model = ...;`");
};

namespace detail {
template <class List, class... More>
struct extend_list;
template <class... Es, class... More>
struct extend_list<architecture_list<Es...>, More...> {
    using type = architecture_list<Es..., More...>;
};
} // namespace detail

/// List with More... appended (an application's own architectures).
template <class List, class... More>
using extend_t = typename detail::extend_list<List, More...>::type;

/// The entry's conventions, or llama's defaults when it gives none.
template <ArchitectureEntry E>
constexpr arch::gguf_conventions conventions_of() {
    if constexpr (requires { E::conventions; })
        return E::conventions;
    else
        return {};
}

/// Whether entry E takes this file (its name matches and its predicate, if any, holds).
template <ArchitectureEntry E>
bool entry_accepts(const gguf::file& f) {
    if (std::string_view(E::gguf_name) != f.architecture()) return false;
    if constexpr (requires { { E::accepts(f) } -> std::convertible_to<bool>; })
        return E::accepts(f);
    else
        return true;
}

/// The conventions of the first entry named `arch` in the list (defaults when none is).
template <class... Es>
arch::gguf_conventions conventions_of(std::string_view arch, architecture_list<Es...>) {
    arch::gguf_conventions c{};
    bool found = false;
    ((!found && std::string_view(Es::gguf_name) == arch ? (c = conventions_of<Es>(), found = true) : false), ...);
    return c;
}

/// The names of a list, for messages: "llama, mellum, ...".
template <class... Es>
std::string architecture_names(architecture_list<Es...>) {
    std::string s;
    ((s += (s.empty() ? "" : ", ") + std::string(Es::gguf_name)), ...);
    return s;
}

namespace detail {
template <class F, class E, class... Es>
decltype(auto) visit_first(const gguf::file& f, F& visit, architecture_list<E, Es...>, const std::string& known) {
    if (entry_accepts<E>(f)) return visit(std::type_identity<E>{});
    if constexpr (sizeof...(Es) == 0) {
        // a registered name whose entries all refuse this file (their accepts(): e.g. a
        // granitehybrid file with experts and RoPE) is not an unknown architecture
        const std::string arch(f.architecture());
        if ((", " + known + ", ").find(", " + arch + ", ") != std::string::npos)
            throw shape_error("no entry for architecture '" + arch + "' takes this file: each has a condition on the "
                              "file's keys or tensors that it does not meet (docs/architectures.md)");
        throw shape_error("architecture '" + arch +
                          "' is not registered (known: " + known +
                          "): add an entry for it to the list given to with_architecture (docs/README.md, Adding an "
                          "architecture)");
    }
    else
        return visit_first(f, visit, architecture_list<Es...>{}, known);
}
} // namespace detail

namespace detail {
template <class E>
bool entry_accepts_path(const std::string& path) {
    if constexpr (requires { { E::accepts_path(path) } -> std::convertible_to<bool>; })
        return E::accepts_path(path);
    else
        return false;
}
template <class R, class F, class... Es>
std::optional<R> visit_by_bytes(const std::string& path, F& visit, architecture_list<Es...>) {
    std::optional<R> r;
    ((!r && entry_accepts_path<Es>(path) ? (r.emplace(visit(std::type_identity<Es>{})), true) : false), ...);
    return r;
}
template <class List>
struct first_entry;
template <class E, class... Es>
struct first_entry<architecture_list<E, Es...>> {
    using type = E;
};
} // namespace detail

/// Calls visit(std::type_identity<Entry>{}) with the first entry of List that takes
/// the file; every call must return the same type. An unknown architecture is a
/// shape_error naming it and the known ones. The visitor loads the model itself
/// (load_model<Entry>), so that a program can keep each entry's instantiation in
/// its own translation unit (tools/ does).
template <class List, class F>
decltype(auto) with_architecture(const gguf::file& f, F&& visit) {
    return detail::visit_first(f, visit, List{}, architecture_names(List{}));
}

/// Whether some entry of List takes this GGUF file.
template <class... Es>
bool takes_file(const gguf::file& f, architecture_list<Es...>) {
    return (entry_accepts<Es>(f) || ...);
}

/// Whether some entry of List takes the file at path (by its bytes, or as a GGUF).
template <class... Es>
bool takes(const std::string& path, architecture_list<Es...>) {
    if ((detail::entry_accepts_path<Es>(path) || ...)) return true;
    const auto f = gguf::file::open(path);
    return (entry_accepts<Es>(f) || ...);
}

/// The same from a path: entries that recognise a file by its bytes (accepts_path:
/// rwkv.cpp .bin) first, then the file opened as a GGUF. The visitor returns a value.
template <class List, class F>
auto with_architecture(const std::string& path, F&& visit) {
    using R = decltype(visit(std::type_identity<typename detail::first_entry<List>::type>{}));
    if (auto r = detail::visit_by_bytes<R>(path, visit, List{})) return std::move(*r);
    return R(with_architecture<List>(gguf::file::open(path), visit));
}

} // namespace archetype
