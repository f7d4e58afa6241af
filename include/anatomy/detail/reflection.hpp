// Boost.Hana is used only here: the field names and values of a reflectable
// struct are handed to a callback as (std::string_view, value), so no Hana
// type reaches a public signature.
#pragma once

#include <boost/hana/accessors.hpp>
#include <boost/hana/define_struct.hpp>
#include <boost/hana/first.hpp>
#include <boost/hana/for_each.hpp>
#include <boost/hana/second.hpp>
#include <boost/hana/string.hpp>

#include <string_view>

namespace anatomy::detail {

template <class Struct, class F>
constexpr void for_each_field(Struct&& object, F&& f) {
    boost::hana::for_each(boost::hana::accessors<std::remove_cvref_t<Struct>>(), [&](auto accessor) {
        f(std::string_view(boost::hana::to<char const*>(boost::hana::first(accessor))),
          boost::hana::second(accessor)(object));
    });
}

}  // namespace anatomy::detail

#define ANATOMY_REFLECTABLE BOOST_HANA_DEFINE_STRUCT
