// anatomy::bytes, the strong type of every memory quantity.
//
// Quantities are built by multiplication (`80 * GiB`), never from bare
// integers, and every operation is overflow-checked: in constant evaluation an
// overflow is a compile error, at run time it throws anatomy::overflow_error.
#pragma once

#include <anatomy/detail/checked.hpp>
#include <anatomy/error.hpp>

#include <compare>
#include <concepts>
#include <cstdint>
#include <string_view>

namespace anatomy {

struct bytes {
    // Public so that bytes is a structural type, usable as a template argument
    // (the compile-time budget check takes bytes as template parameters).
    // No default member initializer: large fixed-capacity arrays of structs
    // holding bytes must be default-constructible without writing memory.
    // `bytes{}` is zero.
    std::uint64_t count;

    constexpr auto operator<=>(const bytes&) const = default;

    constexpr bytes& operator+=(bytes other) {
        count = detail::checked_add(count, other.count);
        return *this;
    }
    constexpr bytes& operator-=(bytes other) {
        count = detail::checked_sub(count, other.count);
        return *this;
    }

    friend constexpr bytes operator+(bytes a, bytes b) { return a += b; }
    friend constexpr bytes operator-(bytes a, bytes b) { return a -= b; }

    template <std::integral N>
    friend constexpr bytes operator*(N n, bytes b) {
        if constexpr (std::signed_integral<N>) {
            if (n < 0) throw error("anatomy::bytes: cannot multiply a size by a negative count; pass a count >= 0");
        }
        return bytes{detail::checked_mul(static_cast<std::uint64_t>(n), b.count)};
    }
    template <std::integral N>
    friend constexpr bytes operator*(bytes b, N n) { return n * b; }

    // How many whole `unit`s fit, e.g. `size / MiB`.
    friend constexpr std::uint64_t operator/(bytes a, bytes unit) {
        if (unit.count == 0) throw error("anatomy::bytes: division by a zero size");
        return a.count / unit.count;
    }
};

inline constexpr bytes B{1};
inline constexpr bytes KiB{1024};
inline constexpr bytes MiB{1024 * 1024};
inline constexpr bytes GiB{1024ULL * 1024 * 1024};
inline constexpr bytes TiB{1024ULL * 1024 * 1024 * 1024};
inline constexpr bytes KB{1000};
inline constexpr bytes MB{1000 * 1000};
inline constexpr bytes GB{1000ULL * 1000 * 1000};
inline constexpr bytes TB{1000ULL * 1000 * 1000 * 1000};

// Whole MiB, rounded up: what a budget message shows for a computed size.
constexpr std::uint64_t mib_ceil(bytes size) { return detail::ceil_div(size.count, MiB.count); }

constexpr double in_mib(bytes size) { return static_cast<double>(size.count) / static_cast<double>(MiB.count); }
constexpr double in_gib(bytes size) { return static_cast<double>(size.count) / static_cast<double>(GiB.count); }

// Parses "15GiB", "80 GB", "1.5 GiB", "512MiB", "1073741824B". A number
// needs its unit: "15" alone is refused, never read as 15 bytes. Units are
// case-sensitive as written in the SI and IEC standards; a fraction keeps six
// decimals and rounds down to the byte.
constexpr bytes parse_bytes(std::string_view text) {
    auto is_space = [](char c) { return c == ' ' || c == '\t'; };
    while (!text.empty() && is_space(text.front())) text.remove_prefix(1);
    while (!text.empty() && is_space(text.back())) text.remove_suffix(1);
    if (text.empty()) throw error("anatomy::parse_bytes: empty size; write e.g. 15GiB, 80GB or 512MiB");

    std::uint64_t whole = 0;
    std::size_t i = 0;
    bool any_digit = false;
    for (; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i) {
        whole = detail::checked_add(detail::checked_mul(whole, 10), static_cast<std::uint64_t>(text[i] - '0'));
        any_digit = true;
    }
    std::uint64_t fraction = 0;
    std::uint64_t fraction_scale = 1;
    if (i < text.size() && text[i] == '.') {
        for (++i; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i) {
            if (fraction_scale < 1'000'000) {  // six decimals keep the product below 2^64
                fraction = fraction * 10 + static_cast<std::uint64_t>(text[i] - '0');
                fraction_scale *= 10;
            }
            any_digit = true;
        }
    }
    if (!any_digit) throw error("anatomy::parse_bytes: a size must start with a number >= 0; write e.g. 15GiB, 80GB or 512MiB");
    std::string_view unit_name = text.substr(i);
    while (!unit_name.empty() && is_space(unit_name.front())) unit_name.remove_prefix(1);

    if (unit_name.empty())
        throw error("anatomy::parse_bytes: a size needs a unit; write e.g. 15GiB, 15GB, 512MiB, or 15B for bytes");
    struct unit_entry { std::string_view name; bytes size; };
    constexpr unit_entry units[] = {{"B", B},     {"KiB", KiB}, {"MiB", MiB}, {"GiB", GiB},
                                    {"TiB", TiB},  {"KB", KB},   {"MB", MB},   {"GB", GB},   {"TB", TB},
                                    {"K", KiB},    {"M", MiB},   {"G", GiB},   {"T", TiB}};
    for (const auto& u : units) {
        if (u.name != unit_name) continue;
        const bytes integral = whole * u.size;
        // fraction * unit / scale, without overflowing: split the unit.
        const std::uint64_t unit = u.size.count;
        const std::uint64_t frac = (unit / fraction_scale) * fraction +
                                   (unit % fraction_scale) * fraction / fraction_scale;
        return integral + bytes{frac};
    }
    throw error("anatomy::parse_bytes: unknown unit; use B, KiB, MiB, GiB, TiB, KB, MB, GB or TB (e.g. 15GiB)");
}

}  // namespace anatomy
