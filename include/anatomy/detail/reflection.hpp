// Boost.Hana is used only here and in entries.hpp: the field names and
// values of an adapted struct are handed to a callback as (std::string_view,
// value), so no Hana type reaches a public signature.
#pragma once

#include <boost/hana/accessors.hpp>
#include <boost/hana/adapt_struct.hpp>
#include <boost/hana/first.hpp>
#include <boost/hana/for_each.hpp>
#include <boost/hana/length.hpp>
#include <boost/hana/second.hpp>
#include <boost/hana/string.hpp>

#include <cstddef>
#include <string_view>
#include <type_traits>

namespace anatomy::detail {

template <class Struct, class F>
constexpr void for_each_field(Struct&& object, F&& f) {
    boost::hana::for_each(boost::hana::accessors<std::remove_cvref_t<Struct>>(), [&](auto accessor) {
        f(std::string_view(boost::hana::to<char const*>(boost::hana::first(accessor))),
          boost::hana::second(accessor)(object));
    });
}

// How many fields BOOST_HANA_ADAPT_STRUCT named.
template <class Struct>
constexpr std::size_t adapted_field_count() {
    return decltype(boost::hana::length(boost::hana::accessors<Struct>()))::value;
}

}  // namespace anatomy::detail
