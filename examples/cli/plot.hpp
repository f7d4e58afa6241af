// `anatomy estimate ... --plot FILE.svg`: the replayed step over time, its
// allocated bytes stacked by ledger entry, the reserved bytes as a line, the phase
// boundaries, and the peak with the tensors --explain lists there.
#pragma once

#include "app.hpp"
#include "svg_axis.hpp"

#include <anatomy/caching_allocator.hpp>
#include <anatomy/explain.hpp>
#include <anatomy/reserved.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

namespace anatomy::cli::app_detail {

struct step_window {
    std::size_t first, end;  // samples of the last step: [first, end)
};

// The last step: from the earliest forward after the previous step's
// optimizer mark (training, any accumulation), or from the last
// forward (serving, where no optimizer mark ends the timeline).
inline step_window last_step(const memory_timeline& t) {
    std::size_t first = 0;
    int optimizers = 0;
    for (auto p = t.phases.rbegin(); p != t.phases.rend(); ++p) {
        if (std::strcmp(p->name, "optimizer") == 0 && ++optimizers == 2) break;
        if (std::strcmp(p->name, "forward") != 0) continue;
        first = p->sample;
        if (optimizers == 0) break;
    }
    return {first, t.samples.size()};
}

// `text` in lines of at most `width` characters, broken after a space, or
// inside a word longer than a line.
inline std::vector<std::string> wrapped(std::string_view text, std::size_t width) {
    std::vector<std::string> lines;
    while (text.size() > width) {
        std::size_t cut = text.rfind(' ', width);
        if (cut == std::string_view::npos || cut == 0) cut = width;
        lines.emplace_back(text.substr(0, cut));
        text.remove_prefix(cut);
        while (text.starts_with(' ')) text.remove_prefix(1);
    }
    lines.emplace_back(text);
    return lines;
}

inline std::string step_plot_svg(const memory_timeline& t, const memory_snapshot& snap, const std::string& title) {
    const step_window w = last_step(t);
    constexpr double width = 900, height = 480, left = 70, right = 300, top = 36, bottom = 44;
    constexpr std::size_t label_chars = 34;  // of an alive tensor's label per line, at 12 px in the 300 px panel
    const double plot_w = width - left - right, plot_h = height - top - bottom;
    const auto total = [](const memory_sample& s) {
        std::uint64_t sum = 0;
        for (const bytes b : s.allocated) sum += b.count;
        return sum;
    };
    std::size_t peak = w.first;
    double highest = 0;
    for (std::size_t i = w.first; i < w.end; ++i) {
        if (total(t.samples[i]) > total(t.samples[peak])) peak = i;
        highest = std::max({highest, static_cast<double>(total(t.samples[i])), static_cast<double>(t.samples[i].reserved.count)});
    }
    // A round top above the reserved line, which would otherwise run along the frame.
    const value_axis axis = nice_value_axis(highest / static_cast<double>(GiB.count));
    const double ymax = axis.top() * static_cast<double>(GiB.count);
    // At most about 2000 points a series: each bucket of samples drawn by its fullest.
    std::vector<std::size_t> drawn;
    const std::size_t bucket = (w.end - w.first + 1999) / 2000;
    for (std::size_t b = w.first; b < w.end; b += bucket) {
        std::size_t best = b;
        for (std::size_t i = b; i < std::min(w.end, b + bucket); ++i)
            if (total(t.samples[i]) > total(t.samples[best])) best = i;
        drawn.push_back(best);
    }
    const double n = static_cast<double>(std::max<std::size_t>(w.end - w.first, 2) - 1);
    const auto x = [&](std::size_t i) { return left + plot_w * static_cast<double>(i - w.first) / n; };
    const auto y = [&](double v) { return top + plot_h * (1 - v / ymax); };
    // Bottom to top, the ledger's entries: what lives through the step first.
    // Only the entries the step holds are drawn and named.
    struct layer {
        block_use use;
        const char* name;
        const char* color;
    };
    constexpr std::array<layer, block_use_count> entries{{{block_use::weights, "weights", "#4e79a7"},
                                                          {block_use::master_weights, "master weights", "#76b7b2"},
                                                          {block_use::optimizer_state, "optimizer state", "#9c755f"},
                                                          {block_use::communication, "communication", "#bab0ac"},
                                                          {block_use::gathered_weights, "gathered weights", "#edc948"},
                                                          {block_use::gradients, "gradients", "#f28e2b"},
                                                          {block_use::activations, "activations", "#59a14f"},
                                                          {block_use::temporaries, "temporaries", "#e15759"},
                                                          {block_use::workspaces, "cuBLAS workspaces", "#b07aa1"}}};
    std::vector<layer> layers;
    std::vector<std::uint64_t> most;  // each drawn entry's largest allocation in the step
    for (const layer& l : entries) {
        std::uint64_t largest = 0;
        for (std::size_t i = w.first; i < w.end; ++i)
            largest = std::max(largest, t.samples[i].allocated[static_cast<std::size_t>(l.use)].count);
        if (largest == 0) continue;
        layers.push_back(l);
        most.push_back(largest);
    }
    std::string svg = fmt::format(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} {1}\" "
        "font-family=\"sans-serif\" font-size=\"12\" data-peak-bytes=\"{2}\">\n"
        "<rect width=\"{0}\" height=\"{1}\" fill=\"white\"/>\n<text x=\"{3}\" y=\"20\" font-size=\"14\">{4}</text>\n",
        width, height, total(t.samples[peak]), left, xml_escape(title));
    // The grid first: the stacks cover it.
    svg += gib_ticks_svg(axis, left, plot_w, [&](double gib) { return y(gib * static_cast<double>(GiB.count)); });
    std::vector<double> below(drawn.size(), 0.0);
    for (std::size_t l = 0; l < layers.size(); ++l) {
        std::string upper;
        std::vector<std::string> lower;
        for (std::size_t k = 0; k < drawn.size(); ++k) {
            const std::size_t i = drawn[k];
            const double base = below[k];
            const double top_v = base + static_cast<double>(t.samples[i].allocated[static_cast<std::size_t>(layers[l].use)].count);
            upper += fmt::format("{}{:.1f},{:.1f}", upper.empty() ? "M" : " L", x(i), y(top_v));
            below[k] = top_v;
            lower.push_back(fmt::format(" L{:.1f},{:.1f}", x(i), y(base)));
        }
        std::string back;
        for (std::size_t k = lower.size(); k-- > 0;) back += lower[k];
        svg += fmt::format("<path class=\"stack\" data-entry=\"{}\" data-most-bytes=\"{}\" fill=\"{}\" "
                           "fill-opacity=\"0.85\" d=\"{}{} Z\"/>\n",
                           layers[l].name, most[l], layers[l].color, upper, back);
        svg += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"12\" height=\"12\" fill=\"{}\"/><text x=\"{}\" y=\"{}\">{}</text>\n",
                           left + plot_w + 14, top + 18 * static_cast<double>(l), layers[l].color, left + plot_w + 32,
                           top + 10 + 18 * static_cast<double>(l), layers[l].name);
    }
    std::string reserved;
    for (const std::size_t i : drawn)
        reserved += fmt::format("{}{:.1f},{:.1f}", reserved.empty() ? "" : " ", x(i),
                                y(static_cast<double>(t.samples[i].reserved.count)));
    const double reserved_row = top + 18 * static_cast<double>(layers.size());
    svg += fmt::format("<polyline class=\"reserved\" fill=\"none\" stroke=\"black\" stroke-width=\"1.5\" points=\"{}\"/>\n"
                       "<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"black\" stroke-width=\"1.5\"/>"
                       "<text x=\"{}\" y=\"{}\">reserved (the replayed allocator)</text>\n",
                       reserved, left + plot_w + 14, reserved_row + 6, left + plot_w + 26, reserved_row + 6,
                       left + plot_w + 32, reserved_row + 10);
    svg += fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\" stroke=\"black\"/>\n", left, top, top + plot_h);
    for (const phase_mark& p : t.phases) {
        if (p.sample < w.first || p.sample >= w.end) continue;
        svg += fmt::format("<line class=\"phase\" x1=\"{0:.1f}\" y1=\"{1}\" x2=\"{0:.1f}\" y2=\"{2}\" stroke=\"gray\" "
                           "stroke-dasharray=\"4 3\"/><text x=\"{3:.1f}\" y=\"{4}\" fill=\"gray\">{5}</text>\n",
                           x(p.sample), top, top + plot_h, x(p.sample) + 3, top + plot_h + 16, p.name);
    }
    const double peak_v = static_cast<double>(total(t.samples[peak]));
    svg += fmt::format("<circle class=\"peak\" cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"4\" fill=\"red\"/>\n"
                       "<text x=\"{}\" y=\"{}\" fill=\"red\">peak {:.2f} GiB ({} phase); alive there:</text>\n",
                       x(peak), y(peak_v), left + plot_w + 14, top + 10 + 18 * static_cast<double>(layers.size() + 2),
                       peak_v / static_cast<double>(GiB.count),
                       snap.phase);
    std::vector<snapshot_row> rows = snap.rows;
    std::sort(rows.begin(), rows.end(), [](const snapshot_row& a, const snapshot_row& b) { return a.total() > b.total(); });
    // The largest eight, each label whole: a long one goes on under itself.
    double row_y = top + 10 + 18 * static_cast<double>(layers.size() + 3);
    for (std::size_t i = 0; i < std::min<std::size_t>(rows.size(), 8); ++i) {
        const std::string label = rows[i].count > 1 ? fmt::format("{} x{}", rows[i].what, rows[i].count) : rows[i].what;
        const std::vector<std::string> lines = wrapped(label, label_chars);
        svg += fmt::format("<text class=\"alive\" x=\"{}\" y=\"{}\">{:.2f} GiB  {}</text>\n", left + plot_w + 14,
                           row_y, in_gib(rows[i].total()), xml_escape(lines.front()));
        for (std::size_t l = 1; l < lines.size(); ++l)
            svg += fmt::format("<text class=\"alive-more\" x=\"{}\" y=\"{}\">{}</text>\n", left + plot_w + 76,
                               row_y + 15 * static_cast<double>(l), xml_escape(lines[l]));
        row_y += 15 * static_cast<double>(lines.size() - 1) + 18;
    }
    return svg + "</svg>\n";
}

inline void write_plot(const raw_options& o) {
    const request q = build_request(o, true);
    std::string svg;
    try {
        const recipe r = q.make_recipe();
        svg = step_plot_svg(record_replay(q.model, r, q.s, q.device()), explain(q.model, r, q.s, q.device()),
                            fmt::format("{}, {}: the last step, replayed", q.model_name, shape_text(q, true)));
    } catch (const overflow_error&) {
        overflowed(q, true);
    }
    std::ofstream file(o.plot, std::ios::binary);
    if (!file) input("--plot {}: cannot be written; check the directory", o.plot);
    file << svg;
    if (!file) input("--plot {}: writing failed; check the disk", o.plot);
}

}  // namespace anatomy::cli::app_detail
