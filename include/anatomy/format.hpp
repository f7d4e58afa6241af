// {fmt} support: `fmt::format("{}", 80 * anatomy::GiB)` prints "80.00 GiB".
// Width and alignment work as for strings: "{:>12}".
#pragma once

#include <anatomy/bytes.hpp>

#include <fmt/format.h>

#include <string_view>

template <>
struct fmt::formatter<anatomy::bytes> : fmt::formatter<std::string_view> {
    template <class FormatContext>
    auto format(anatomy::bytes size, FormatContext& ctx) const -> decltype(ctx.out()) {
        using anatomy::B;
        constexpr struct { anatomy::bytes unit; std::string_view name; } units[] = {
            {anatomy::TiB, "TiB"}, {anatomy::GiB, "GiB"}, {anatomy::MiB, "MiB"}, {anatomy::KiB, "KiB"}};
        char text[48];
        fmt::format_to_n_result<char*> written{text, 0};
        written = fmt::format_to_n(text, sizeof text, "{} B", size.count);
        for (const auto& u : units) {
            if (size >= u.unit) {
                const double value = static_cast<double>(size.count) / static_cast<double>(u.unit.count);
                written = fmt::format_to_n(text, sizeof text, "{:.2f} {}", value, u.name);
                break;
            }
        }
        return fmt::formatter<std::string_view>::format(std::string_view(text, written.size), ctx);
    }
};
