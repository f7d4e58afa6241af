// The sweep's table replays only the cells it prints: per sequence length,
// its largest fitting batch must be the one that every cell's replay gives.
#include "sweep_command.hpp"

#include <catch2/catch.hpp>

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
