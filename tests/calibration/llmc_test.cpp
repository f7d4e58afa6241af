// The llm.c profile against llm.c itself: logs of train_gpt2.cu runs on an
// H200 (bench/llmc/run.sh), with every cudaMalloc printed byte-exact by
// bench/llmc/cuda_malloc_log.cpp. Every buffer, every "allocating N MiB"
// line, the device usage, "memory per sequence" and llm.c's own maximum-batch
// estimate must match exactly.
#include <anatomy/device.hpp>
#include <anatomy/llmc.hpp>

#include <catch2/catch.hpp>

#include <fstream>
#include <optional>
#include <sstream>
#include <string_view>
#include <utility>
#include <string>
#include <vector>

namespace {

using namespace anatomy;

struct llmc_run {
    std::string name, binary, descriptor;
    std::uint64_t batch = 0, seq = 0;
    int recompute = 0, master = 0;
};

std::vector<llmc_run> read_runs() {
    std::ifstream in(std::string(ANATOMY_LLMC_LOG_DIR) + "/runs.txt");
    REQUIRE(in.good());
    std::vector<llmc_run> runs;
    for (std::string line; std::getline(in, line);) {
        if (line.empty() || line[0] == '#') continue;
        std::istringstream fields(line);
        llmc_run r;
        fields >> r.name >> r.binary >> r.descriptor >> r.batch >> r.seq >> r.recompute >> r.master;
        REQUIRE_FALSE(fields.fail());
        runs.push_back(r);
    }
    return runs;
}

struct llmc_log {
    std::vector<std::uint64_t> mallocs;       // "anatomy-cudaMalloc N", in order
    std::vector<std::string> lines;
};

llmc_log read_log(const std::string& name) {
    std::ifstream in(std::string(ANATOMY_LLMC_LOG_DIR) + "/" + name + ".log");
    REQUIRE(in.good());
    llmc_log log;
    for (std::string line; std::getline(in, line);) {
        if (line.starts_with("anatomy-cudaMalloc ")) log.mallocs.push_back(std::stoull(line.substr(19)));
        log.lines.push_back(line);
    }
    return log;
}

// The number that follows `prefix` on the line that starts with it.
std::uint64_t printed(const llmc_log& log, const std::string& prefix) {
    for (const std::string& line : log.lines)
        if (line.starts_with(prefix)) return std::stoull(line.substr(prefix.size()));
    FAIL("no line starts with \"" << prefix << "\"");
    return 0;
}

// N of the "allocated N MiB ..." or "allocating N MiB ..." line that ends with `suffix`.
std::optional<std::uint64_t> announced_mib(const llmc_log& log, const std::string& suffix) {
    for (const std::string& line : log.lines) {
        if (!line.ends_with(suffix)) continue;
        const std::size_t space = line.find(' ');
        return std::stoull(line.substr(space + 1));
    }
    return std::nullopt;
}

const llmc::buffer* find(const llmc::buffer_list& list, std::string_view name) {
    for (const llmc::buffer& b : list)
        if (b.name == name) return &b;
    return nullptr;
}

}  // namespace

TEST_CASE("llm.c: every buffer and every printed figure of 18 H200 runs, exactly") {
    const device_profile& h200 = devices::h200;
    const std::vector<llmc_run> runs = read_runs();
    REQUIRE(runs.size() == 18);
    for (const llmc_run& r : runs) {
        INFO("run " << r.name);
        const llmc_log log = read_log(r.name);
        const std::optional<llmc::gpt2_config> config = llmc::from_descriptor(r.descriptor);
        REQUIRE(config);
        const llmc::run_config run{.floatx = dtype::bf16,
                                   .recompute = r.recompute,
                                   .cudnn = r.binary.ends_with("_cudnn"),
                                   .master_weights = r.master == 1};
        const llmc::buffer_list startup = llmc::allocations(*config, run, r.batch, r.seq);

        // Start-up, then what the first steps add: cuDNN's forward workspace,
        // replaced by the backward's.
        std::vector<std::uint64_t> predicted;
        for (const llmc::buffer& b : startup) predicted.push_back(b.size.count);
        if (run.cudnn) {
            predicted.push_back(llmc::cudnn_forward_workspace.count);
            predicted.push_back(llmc::cudnn_backward_workspace(*config, r.batch, r.seq).count);
        }
        CHECK(log.mallocs == predicted);

        CHECK(printed(log, "num_parameters: ") == llmc::parameter_count(*config));
        // "allocating N MiB for <what>", one line per buffer llm.c announces.
        const std::pair<const char*, const char*> announced[] = {
            {"parameters", " MiB for model parameters"},     {"parameter_gradients", " MiB for parameter gradients"},
            {"activations", " MiB for activations"},         {"adamw_m", " MiB for AdamW optimizer state m"},
            {"adamw_v", " MiB for AdamW optimizer state v"}, {"master_weights", " MiB for master copy of params"}};
        for (const auto& [buffer_name, suffix] : announced) {
            INFO("line ending \"" << suffix << "\"");
            const std::optional<std::uint64_t> mib = announced_mib(log, suffix);
            const llmc::buffer* b = find(startup, buffer_name);
            REQUIRE(mib.has_value() == (b != nullptr));
            if (b) CHECK(*mib == llmc::printed_mib(b->size));
        }

        // "device memory usage: U MiB / T MiB", after the last buffer of gpt2_allocate_state.
        const bytes used = llmc::h200_process_overhead(run) + llmc::device_footprint(startup);
        CHECK(printed(log, "device memory usage: ") == used / MiB);
        CHECK(printed(log, "memory per sequence: ") == llmc::printed_mib(llmc::bytes_per_sequence(*config, run, r.batch, r.seq)));
        CHECK(printed(log, " -> estimated maximum batch size: ") ==
              llmc::printed_max_batch(*config, run, r.batch, r.seq, h200.total - used));
    }
}
