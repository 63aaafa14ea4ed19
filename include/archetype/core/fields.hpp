#pragma once
// Printing and comparing hyperparameter structs field by field, through
// Boost.Hana's Struct concept (BOOST_HANA_ADAPT_STRUCT / DEFINE_STRUCT).
// Hana lives here, at the edge (printing, checking loaded values), never in
// the per-layer instantiations: it costs ~0.2 s per TU that includes it.
#include <boost/hana/accessors.hpp>
#include <boost/hana/first.hpp>
#include <boost/hana/for_each.hpp>
#include <boost/hana/second.hpp>
#include <boost/hana/string.hpp>
#include <boost/hana/core/to.hpp>
#include <sstream>
#include <string>
#include <string_view>

namespace archetype {

/// "name = value" per field, one per line, for any Hana-adapted struct.
template <class S>
std::string format_fields(const S& s, std::string_view indent = "  ") {
    std::ostringstream os;
    boost::hana::for_each(boost::hana::accessors<S>(), [&](auto pair) {
        os << indent << boost::hana::to<const char*>(boost::hana::first(pair)) << " = "
           << boost::hana::second(pair)(s) << "\n";
    });
    return os.str();
}

/// Names of the fields whose values differ between a and b ("" when equal).
template <class S>
std::string differing_fields(const S& a, const S& b) {
    std::string out;
    boost::hana::for_each(boost::hana::accessors<S>(), [&](auto pair) {
        if (!(boost::hana::second(pair)(a) == boost::hana::second(pair)(b))) {
            if (!out.empty()) out += ", ";
            out += boost::hana::to<const char*>(boost::hana::first(pair));
        }
    });
    return out;
}

} // namespace archetype
