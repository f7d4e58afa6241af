// Axis ticks for the CLI's SVG plots: round values a reader can take in at a
// glance (0, 20, 40 GiB; batches 1, 8, 16), and a top above every value
// drawn, so that nothing runs along the frame.
#pragma once

#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

namespace anatomy::cli::app_detail {

// Ticks from 0 to the first multiple of `step` at or above the largest value.
struct value_axis {
    double step;
    int intervals;
    constexpr double top() const { return step * intervals; }
};

// 5 to 8 intervals of 1, 2, 2.5 or 5 times a power of ten (in the caller's
// unit, e.g. GiB), the top strictly above `largest` so that its line stays
// off the frame, and at most a quarter above it. `largest` <= 0 draws one
// interval of 1.
inline value_axis nice_value_axis(double largest) {
    if (!(largest > 0)) return {1, 1};
    const double power = std::pow(10.0, std::floor(std::log10(largest / 5)));
    const auto intervals_of = [&](double step) { return static_cast<int>(std::floor(largest / step)) + 1; };
    for (const double m : {1.0, 2.0, 2.5, 5.0})
        if (intervals_of(m * power) <= 8) return {m * power, intervals_of(m * power)};
    return {10 * power, intervals_of(10 * power)};  // largest < 50 * power: at most 5 intervals
}

// A GiB axis's labels left of x = `left`, and a light grid line across the
// plot at each tick above the base; y_of(gib) is where a value lies. Drawn
// before the data, which covers the grid.
template <class YOf>
std::string gib_ticks_svg(const value_axis& axis, double left, double plot_width, YOf y_of) {
    std::string svg;
    for (int tick = 0; tick <= axis.intervals; ++tick) {
        const double gib = axis.step * tick;
        const double at = y_of(gib);
        if (tick > 0)
            svg += fmt::format("<line class=\"grid\" x1=\"{}\" y1=\"{:.1f}\" x2=\"{}\" y2=\"{:.1f}\" stroke=\"#e4e4e4\"/>\n",
                               left, at, left + plot_width, at);
        svg += fmt::format("<text class=\"tick\" x=\"{}\" y=\"{:.1f}\" text-anchor=\"end\">{:g} GiB</text>\n", left - 6,
                           at + 4, gib);
    }
    return svg;
}

// Integer ticks over [first, last]: both ends, and the multiples of a step of
// 1, 2 or 5 times a power of ten between them, at most 11 in all. A
// multiple within a step's fifth of an end is left out: its label would
// overlap the end's.
inline std::vector<std::uint64_t> nice_integer_ticks(std::uint64_t first, std::uint64_t last) {
    std::vector<std::uint64_t> ticks{first};
    if (last <= first) return ticks;
    const std::uint64_t span = last - first;
    std::uint64_t step = 1;
    for (std::uint64_t power = 1;; power *= 10) {
        if (span / power <= 8) { step = power; break; }
        if (span / (2 * power) <= 8) { step = 2 * power; break; }
        if (span / (5 * power) <= 8) { step = 5 * power; break; }
    }
    const std::uint64_t gap = step / 5;
    for (std::uint64_t v = (first / step + 1) * step; v < last; v += step)
        if (v - first > gap && last - v > gap) ticks.push_back(v);
    ticks.push_back(last);
    return ticks;
}

}  // namespace anatomy::cli::app_detail
