// `anatomy sweep`: estimate's figures over a batch x sequence grid, as a
// table (per sequence, the largest batch that fits), JSON, CSV or an SVG
// plot of peak memory against the batch, one line per sequence length.
#pragma once

#include "app.hpp"
#include "svg_axis.hpp"

#include <fmt/ranges.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <exception>
#include <fstream>
#include <ostream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace anatomy::cli::app_detail {

// A grid axis has at most this many values: a sweep is meant to be read.
inline constexpr std::size_t max_axis_values = 4096;

// "1,2,4,8", "1:64" (every value), "512:8192:x2" (doubling), "128:1024:+128".
inline std::vector<std::uint64_t> parse_axis(std::string_view flag, const std::string& text) {
    std::vector<std::uint64_t> values;
    const auto push = [&](std::uint64_t v) {
        if (values.size() == max_axis_values)
            usage("{} {}: more than {} values; use a coarser grid", flag, shorten(text), max_axis_values);
        values.push_back(v);
    };
    if (text.find(':') == std::string::npos) {
        std::size_t start = 0;
        while (start <= text.size()) {
            const std::size_t comma = std::min(text.find(',', start), text.size());
            push(parse_count(flag, std::string_view(text).substr(start, comma - start)));
            start = comma + 1;
        }
    } else {
        const std::size_t first = text.find(':');
        const std::size_t second = text.find(':', first + 1);
        const std::uint64_t lo = parse_count(flag, std::string_view(text).substr(0, first));
        const std::uint64_t hi = parse_count(
            flag, std::string_view(text).substr(first + 1, second == std::string::npos ? std::string::npos : second - first - 1));
        if (hi < lo) usage("{} {}: the range ends below its start; write e.g. {} 1:64", flag, shorten(text), flag);
        std::string_view step = second == std::string::npos ? std::string_view("+1") : std::string_view(text).substr(second + 1);
        const bool doubling = step.starts_with('x');
        if (!doubling && step.starts_with('+')) step.remove_prefix(1);
        else if (doubling) step.remove_prefix(1);
        const std::uint64_t by = parse_count(flag, step);
        if (doubling && by < 2) usage("{} {}: a factor must be >= 2, e.g. 512:8192:x2", flag, shorten(text));
        for (std::uint64_t v = lo; v <= hi;) {
            push(v);
            const std::uint64_t next = doubling ? v * by : v + by;
            if ((doubling && next / by != v) || next < v) break;  // past 64 bits: past hi too
            v = next;
        }
    }
    std::sort(values.begin(), values.end());
    values.erase(std::unique(values.begin(), values.end()), values.end());
    return values;
}

struct sweep_cell {
    std::uint64_t batch, seq;
    memory_estimate e;
    bytes peak;      // with `replayed`: the peak estimate reports (reported_peak)
    bytes reserved;  // with `replayed`
    bool fits;       // with a budget and `replayed`
    bool replayed;
};

// No cell: no batch of the grid fits.
inline constexpr std::size_t no_cell = static_cast<std::size_t>(-1);

struct sweep_result {
    request q;  // at the first sequence length: the model and recipe, for the header
    std::vector<std::uint64_t> batches, seqs;
    std::vector<sweep_cell> cells;  // sequence-major
    std::vector<std::size_t> largest_fitting;  // per sequence, with a budget: the cell of the largest batch that fits
};

// Calls work(i) for every i in [0, n) on the machine's cores. An exception
// is rethrown after every worker stops: the one of the lowest i, the one a
// loop in order would have met first.
template <class Work>
void for_each_index_in_parallel(std::size_t n, Work work) {
    std::vector<std::exception_ptr> failed(n);
    std::atomic<std::size_t> next{0};
    const auto worker = [&] {
        for (std::size_t i = next++; i < n; i = next++) {
            try {
                work(i);
            } catch (...) {
                failed[i] = std::current_exception();
            }
        }
    };
    const std::size_t cores = std::max(1U, std::thread::hardware_concurrency());
    std::vector<std::thread> helpers;
    for (std::size_t t = 1; t < std::min(cores, n); ++t) helpers.emplace_back(worker);
    worker();
    for (std::thread& t : helpers) t.join();
    for (const std::exception_ptr& e : failed)
        if (e) std::rethrow_exception(e);
}

// The grid's estimates. `every_cell`: each cell replayed, with its peak,
// reserved bytes and fit, as estimate prints them (--json, --csv, --svg, and
// the table without a budget, which prints every peak). Otherwise only what
// the table with a budget prints: per sequence length the replays that find
// the largest batch that fits, counting down from the largest whose analytic
// peak does (under a cap the verdict need not fall with the batch, as in
// max-batch).
inline sweep_result run_sweep(const raw_options& o, bool every_cell) {
    if (o.batch.empty()) usage("sweep: pass --batch, e.g. --batch 1:64 or --batch 1,2,4,8");
    if (o.seq.empty()) usage("sweep: pass --seq, e.g. --seq 512,1024,2048 or --seq 512:8192:x2");
    sweep_result r{.q = {}, .batches = parse_axis("--batch", o.batch), .seqs = parse_axis("--seq", o.seq), .cells = {},
                   .largest_fitting = {}};
    // Each sequence length is checked as estimate checks it (learned positions, llm.c's T).
    std::vector<request> at_seq;
    for (const std::uint64_t seq : r.seqs) {
        raw_options at = o;
        at.seq = std::to_string(seq);
        at.batch = "1";
        at_seq.push_back(build_request(at, true));
    }
    r.q = at_seq.front();
    const bool budgeted = r.q.budget.count > 0;
    if (budgeted) require_fit_modelled(r.q);
    every_cell = every_cell || !budgeted;
    // The model and recipe are the same at every length: lowered once.
    const estimator prepared = prepare_estimator(r.q);
    const std::size_t row = r.batches.size();
    const auto point_of = [&](std::size_t i) {
        request point = at_seq[i / row];
        point.s.batch = r.batches[i % row];
        return point;
    };
    // Replays cell i: its reserved bytes and, with a budget, its fit.
    const auto replay_cell = [&](std::size_t i) {
        const request point = point_of(i);
        const estimate_result x = with_fit(point, prepared, point.s, run_estimate(point, prepared, point.s, true));
        r.cells[i].peak = reported_peak(x);
        r.cells[i].reserved = x.replay.peak_reserved;
        r.cells[i].fits = x.fits;
        r.cells[i].replayed = true;
    };
    r.cells.resize(r.seqs.size() * row);
    for_each_index_in_parallel(r.cells.size(), [&](std::size_t i) {
        const request point = point_of(i);
        r.cells[i] = {point.s.batch, point.s.seq, estimate_only(point, prepared, point.s, true), {}, {}, false, false};
        if (every_cell) replay_cell(i);
    });
    r.largest_fitting.assign(r.seqs.size(), no_cell);
    if (!budgeted) return r;
    for_each_index_in_parallel(r.seqs.size(), [&](std::size_t k) {
        for (std::size_t j = row; j-- > 0;) {
            const std::size_t i = k * row + j;
            if (!r.cells[i].replayed && peak_rules_out(point_of(i), r.cells[i].e)) continue;
            if (!r.cells[i].replayed) replay_cell(i);
            if (r.cells[i].fits) {
                r.largest_fitting[k] = i;
                return;
            }
        }
    });
    return r;
}

// Peak memory against the batch, one line per sequence length, the budget as
// a dashed line, and on each line the largest batch that fits; plain SVG 1.1.
// That batch is the replayed allocator's verdict: its reserved memory, and
// not the peak, must stay under the budget, so a line may cross the budget
// some batches after its mark, and a reader who took the crossing would
// launch a batch that runs out of memory.
inline std::string sweep_svg(const sweep_result& r) {
    constexpr double width = 760, height = 440, left = 70, right = 190, top = 30, bottom = 50;
    const double plot_w = width - left - right, plot_h = height - top - bottom;
    double largest = static_cast<double>(r.q.budget.count);
    for (const sweep_cell& c : r.cells) largest = std::max(largest, static_cast<double>(c.peak.count));
    const value_axis axis = nice_value_axis(largest / static_cast<double>(GiB.count));
    const double ymax = axis.top() * static_cast<double>(GiB.count);
    const double bmin = static_cast<double>(r.batches.front()), bmax = static_cast<double>(r.batches.back());
    const auto x = [&](std::uint64_t b) {
        return bmax == bmin ? left + plot_w / 2 : left + plot_w * (static_cast<double>(b) - bmin) / (bmax - bmin);
    };
    const auto y = [&](double v) { return top + plot_h * (1 - v / ymax); };
    constexpr std::array colors{"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                                "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};
    std::string svg = fmt::format(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} {1}\" "
        "font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"{0}\" height=\"{1}\" fill=\"white\"/>\n"
        "<text x=\"{2}\" y=\"18\" font-size=\"14\">peak memory: {3}</text>\n",
        width, height, left, xml_escape(r.q.model_name));
    svg += gib_ticks_svg(axis, left, plot_w, [&](double gib) { return y(gib * static_cast<double>(GiB.count)); });
    svg += fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\" stroke=\"black\"/>\n", left, top, top + plot_h);
    svg += fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" y2=\"{1}\" stroke=\"black\"/>\n", left, top + plot_h,
                       left + plot_w);
    for (const std::uint64_t b : nice_integer_ticks(r.batches.front(), r.batches.back()))
        svg += fmt::format("<text x=\"{:.1f}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n", x(b), top + plot_h + 16, b);
    svg += fmt::format("<text x=\"{:.1f}\" y=\"{}\" text-anchor=\"middle\">batch</text>\n", left + plot_w / 2,
                       top + plot_h + 36);
    const bool budgeted = r.q.budget.count > 0;
    if (budgeted) {
        const double yb = y(static_cast<double>(r.q.budget.count));
        svg += fmt::format("<line class=\"budget\" x1=\"{}\" y1=\"{:.1f}\" x2=\"{}\" y2=\"{:.1f}\" stroke=\"black\" "
                           "stroke-dasharray=\"6 4\"/>\n<text x=\"{}\" y=\"{:.1f}\">budget {}</text>\n",
                           left, yb, left + plot_w, yb, left + plot_w + 6, yb + 4, r.q.budget);
    }
    const double legend = left + plot_w + 6;
    for (std::size_t i = 0; i < r.seqs.size(); ++i) {
        std::string points;
        for (std::size_t j = 0; j < r.batches.size(); ++j) {
            const sweep_cell& c = r.cells[i * r.batches.size() + j];
            points += fmt::format("{}{:.1f},{:.1f}", points.empty() ? "" : " ", x(c.batch),
                                  y(static_cast<double>(c.peak.count)));
        }
        const char* color = colors[i % colors.size()];
        svg += fmt::format("<polyline class=\"seq\" fill=\"none\" stroke=\"{}\" stroke-width=\"2\" points=\"{}\"/>\n",
                           color, points);
        std::string fit;
        if (budgeted && r.largest_fitting[i] == no_cell) {
            fit = ": none fits";
        } else if (budgeted) {
            const sweep_cell& c = r.cells[r.largest_fitting[i]];
            fit = fmt::format(": {} fits", c.batch);
            svg += fmt::format("<circle class=\"largest-fit\" data-seq=\"{}\" data-batch=\"{}\" cx=\"{:.1f}\" "
                               "cy=\"{:.1f}\" r=\"4.5\" fill=\"{}\" stroke=\"black\"/>\n",
                               c.seq, c.batch, x(c.batch), y(static_cast<double>(c.peak.count)), color);
        }
        svg += fmt::format("<text x=\"{}\" y=\"{}\" fill=\"{}\">seq {}{}</text>\n", legend,
                           top + 16 * static_cast<double>(i + 1), color, r.seqs[i], fit);
    }
    if (budgeted) {
        // Why the mark may sit below the crossing: said where the reader looks.
        const double note = top + 16 * static_cast<double>(r.seqs.size() + 2);
        svg += fmt::format("<circle cx=\"{}\" cy=\"{}\" r=\"4.5\" fill=\"white\" stroke=\"black\"/>\n"
                           "<text x=\"{}\" y=\"{}\">largest batch that fits:</text>\n"
                           "<text x=\"{}\" y=\"{}\">its reserved memory, not</text>\n"
                           "<text x=\"{}\" y=\"{}\">its peak, under the budget</text>\n",
                           legend + 5, note - 4, legend + 14, note, legend, note + 15, legend, note + 30);
    }
    return svg + "</svg>\n";
}

inline void cmd_sweep(const raw_options& o, const std::string& svg_path, bool csv, std::ostream& out) {
    if (csv && o.json) usage("sweep: --json and --csv exclude each other; pick one");
    // The table prints one cell per sequence length; JSON and CSV print them all.
    const sweep_result r = run_sweep(o, o.json || csv || !svg_path.empty());
    const bool budgeted = r.q.budget.count > 0;
    if (!svg_path.empty()) {
        std::ofstream file(svg_path, std::ios::binary);
        if (!file) input("--svg {}: cannot be written; check the directory", svg_path);
        file << sweep_svg(r);
        if (!file) input("--svg {}: writing failed; check the disk", svg_path);
    }
    if (o.json) {
        ojson j = inputs_json("sweep", r.q, false);
        j.erase("seq");
        j["batches"] = r.batches;
        j["seqs"] = r.seqs;
        if (budgeted) j["budget_bytes"] = r.q.budget.count;
        ojson cells = ojson::array();
        for (const sweep_cell& c : r.cells) {
            ojson cell{{"batch", c.batch}, {"seq", c.seq}, {"peak_bytes", c.peak.count},
                       {"reserved_bytes", c.reserved.count}};
            if (budgeted) cell["fits"] = c.fits;
            cells.push_back(std::move(cell));
        }
        j["cells"] = std::move(cells);
        out << json_text(j) << '\n';
        return;
    }
    if (csv) {
        out << (budgeted ? "batch,seq,peak_bytes,reserved_bytes,fits\n" : "batch,seq,peak_bytes,reserved_bytes\n");
        for (const sweep_cell& c : r.cells) {
            out << fmt::format("{},{},{},{}", c.batch, c.seq, c.peak.count, c.reserved.count);
            out << (budgeted ? (c.fits ? ",true\n" : ",false\n") : "\n");
        }
        return;
    }
    print_header(out, r.q, shape_line::none);
    const auto axis = [](const std::vector<std::uint64_t>& v) {
        return v.size() <= 8 ? fmt::format("{}", fmt::join(v, ","))
                             : fmt::format("{} to {} ({} values)", v.front(), v.back(), v.size());
    };
    std::string target;
    if (r.q.model.stack == stack_kind::encoder_decoder)
        target = r.q.s.target_seq == 0 ? ", target seq = seq" : fmt::format(", target seq {}", r.q.s.target_seq);
    out << fmt::format("{:<10}batch {} x seq {}{}: {} cells\n", "grid", axis(r.batches), axis(r.seqs), target,
                       r.cells.size());
    if (budgeted) {
        out << fmt::format("\nthe largest batch of the grid that fits {} ({} per step to hold):\n",
                           r.q.gpu ? fmt::format("{} ({})", r.q.gpu->name, r.q.budget) : fmt::format("--budget {}", r.q.budget),
                           "reserved + cuBLAS workspaces");
        text_table t;
        t.row({"seq", "batch", "peak", "reserved (uncapped)"});
        for (std::size_t i = 0; i < r.seqs.size(); ++i) {
            if (r.largest_fitting[i] == no_cell) {
                t.row({grouped(r.seqs[i]), "none", "-", "-"});
                continue;
            }
            const sweep_cell& best = r.cells[r.largest_fitting[i]];
            t.row({grouped(r.seqs[i]), grouped(best.batch), fmt::format("{}", best.peak), fmt::format("{}", best.reserved)});
        }
        t.print(out);
        return;
    }
    out << "\npeak (max_memory_allocated) per batch:\n";
    std::vector<std::string> header{"seq"};
    for (const std::uint64_t b : r.batches) header.push_back(fmt::format("b{}", b));
    text_table t;
    t.row(header);
    for (std::size_t i = 0; i < r.seqs.size(); ++i) {
        std::vector<std::string> row{grouped(r.seqs[i])};
        for (std::size_t j = 0; j < r.batches.size(); ++j)
            row.push_back(fmt::format("{}", r.cells[i * r.batches.size() + j].peak));
        t.row(row);
    }
    t.print(out);
}

}  // namespace anatomy::cli::app_detail
