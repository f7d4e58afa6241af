// The sweep's table replays only the cells it prints: per sequence length,
// its largest fitting batch must be the one that every cell's replay gives.
#include "plot.hpp"
#include "sweep_command.hpp"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstddef>
#include <string>

namespace {

using namespace anatomy::cli::app_detail;

}  // namespace

TEST_CASE("sweep: the table's largest fitting batch is the one every cell's fit gives") {
    raw_options gpt2{};
    gpt2.model = "gpt2";
    gpt2.batch = "1:16";
    gpt2.seq = "128,256,512,1024";
    gpt2.budget = "6GiB";
    // Checkpointed llama-3.2-1b in 24 GiB: at 4 x 2048 and 2 x 4096 the peak
    // fits and the uncapped replay does not, so the capped replay decides.
    raw_options llama{};
    llama.model = "llama-3.2-1b";
    llama.weights = "bf16";
    llama.grad_checkpointing = true;
    llama.batch = "1:24";
    llama.seq = "2048,4096";
    llama.budget = "24GiB";
    for (const raw_options& o : {gpt2, llama}) {
        INFO(o.model);
        const sweep_result table = run_sweep(o, false);
        const sweep_result every = run_sweep(o, true);
        const std::size_t row = every.batches.size();
        std::size_t fitting = 0;
        std::size_t replayed = 0;
        for (std::size_t k = 0; k < every.seqs.size(); ++k) {
            std::size_t largest = no_cell;
            for (std::size_t j = 0; j < row; ++j) {
                const std::size_t i = k * row + j;
                CHECK(every.cells[i].replayed);
                CHECK(table.cells[i].e.peak == every.cells[i].e.peak);
                if (every.cells[i].fits) largest = i;
                fitting += every.cells[i].fits ? 1 : 0;
                replayed += table.cells[i].replayed ? 1 : 0;
            }
            CHECK(every.largest_fitting[k] == largest);
            CHECK(table.largest_fitting[k] == largest);
            if (largest != no_cell) CHECK(table.cells[largest].reserved == every.cells[largest].reserved);
        }
        CHECK(fitting > 0);  // the budget splits the grid
        CHECK(fitting < every.cells.size());
        CHECK(replayed < every.cells.size() / 2);
    }
}

TEST_CASE("plot axes: round steps, a top that clears the largest value by at most a quarter") {
    for (double largest = 1e-3; largest < 1e6; largest *= 1.0137) {
        CAPTURE(largest);
        const value_axis axis = nice_value_axis(largest);
        CHECK(axis.top() > largest);
        CHECK(axis.top() <= 1.25 * largest * (1 + 1e-12));
        CHECK(axis.intervals >= 5);
        CHECK(axis.intervals <= 8);
        // 1, 2, 2.5 or 5 times a power of ten
        const double mantissa = axis.step / std::pow(10.0, std::floor(std::log10(axis.step) + 1e-9));
        const bool round = std::abs(mantissa - 1) < 1e-9 || std::abs(mantissa - 2) < 1e-9 ||
                           std::abs(mantissa - 2.5) < 1e-9 || std::abs(mantissa - 5) < 1e-9;
        CHECK(round);
    }
    CHECK(nice_value_axis(0).top() == 1);
}

TEST_CASE("plot axes: integer ticks hold both ends and round steps between, at most eleven") {
    for (std::uint64_t first : {1u, 2u, 7u, 100u})
        for (std::uint64_t last : {1u, 2u, 9u, 16u, 64u, 65u, 100u, 1000u, 4096u, 100003u}) {
            if (last < first) continue;
            CAPTURE(first, last);
            const std::vector<std::uint64_t> ticks = nice_integer_ticks(first, last);
            CHECK(ticks.front() == first);
            CHECK(ticks.back() == last);
            CHECK(ticks.size() <= 11);
            for (std::size_t i = 1; i < ticks.size(); ++i) CHECK(ticks[i] > ticks[i - 1]);
            if (ticks.size() > 3) {
                const std::uint64_t step = ticks[2] - ticks[1];
                for (std::size_t i = 1; i + 1 < ticks.size(); ++i) CHECK(ticks[i] % step == 0);
            }
        }
    CHECK(nice_integer_ticks(1, 16) == std::vector<std::uint64_t>{1, 2, 4, 6, 8, 10, 12, 14, 16});
    CHECK(nice_integer_ticks(1, 64) == std::vector<std::uint64_t>{1, 10, 20, 30, 40, 50, 60, 64});
}

TEST_CASE("plot labels wrap after a space, every character kept, no line past the width") {
    const std::string label = "rest of the backward peak (grads, scratch)";
    const std::vector<std::string> lines = wrapped(label, 34);
    CHECK(lines == std::vector<std::string>{"rest of the backward peak (grads,", "scratch)"});
    CHECK(wrapped("short", 34) == std::vector<std::string>{"short"});
    // A word longer than a line is cut inside.
    CHECK(wrapped("model.layers.0.self_attn.q_proj.lora_A", 20) ==
          std::vector<std::string>{"model.layers.0.self_", "attn.q_proj.lora_A"});
    // Every character but the spaces broken at is kept, in order.
    const auto without_spaces = [](std::string text) {
        std::erase(text, ' ');
        return text;
    };
    for (std::size_t width : {5u, 10u, 34u}) {
        std::string joined;
        for (const std::string& line : wrapped(label, width)) {
            CHECK(line.size() <= width);
            joined += line;
        }
        CHECK(without_spaces(joined) == without_spaces(label));
    }
}
