// The CLI in-process: JSON output against the library, and the error contract.
#include "cli.hpp"

#include <anatomy/anatomy.hpp>
#include <anatomy/entries.hpp>
#include <anatomy/llmc.hpp>

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

namespace {

using nlohmann::json;

const std::string data_dir = ANATOMY_CLI_DATA;

struct result {
    int status = 0;
    std::string out, err;
};

result run(const std::vector<std::string>& args) {
    std::ostringstream out, err;
    const int status = anatomy::cli::run(args, out, err);
    return {status, out.str(), err.str()};
}

json run_json(const std::vector<std::string>& args) {
    const result r = run(args);
    INFO(r.err);
    REQUIRE(r.status == 0);
    REQUIRE(r.err.empty());
    return json::parse(r.out);
}

}  // namespace

TEST_CASE("estimate --json matches the library, entry by entry") {
    const json j = run_json({"estimate", "--model", "llama-3.2-1b", "--batch", "2", "--seq", "512", "--weights", "bf16",
                             "--optimizer", "adamw-fused", "--grad-accum", "4", "--json"});
    const anatomy::recipe r{.weights = anatomy::dtype::bf16, .optimizer = anatomy::optimizer_kind::adamw_fused,
                            .grad_accum = 4};
    const anatomy::memory_estimate e =
        anatomy::estimate(anatomy::presets::llama_3_2_1b, r, anatomy::shape{.batch = 2, .seq = 512});
    const anatomy::allocator_replay replay =
        anatomy::replay_allocator(anatomy::presets::llama_3_2_1b, r, anatomy::shape{.batch = 2, .seq = 512});
    CHECK(j["params"] == e.params);
    CHECK(j["trainable_params"] == e.trainable_params);
    // The peak is the replay's, the blocks the allocator hands out; the ledger's is the analytic walk's.
    CHECK(j["peak_bytes"] == replay.peak_allocated.count);
    CHECK(j["peak_from"] == "replay");
    CHECK(j["replayed_peak_bytes"] == replay.peak_allocated.count);
    CHECK(j["tensor_peak_bytes"] == e.peak.count);
    CHECK(j["reserved_bytes"] == replay.peak_reserved.count);
    CHECK(j["ledger"].size() == [&] {
        std::size_t n = 0;
        anatomy::for_each_entry(e.ledger, [&](std::string_view, anatomy::bytes) { ++n; });
        return n;
    }());
    anatomy::for_each_entry(e.ledger, [&](std::string_view name, anatomy::bytes b) {
        CAPTURE(name);
        CHECK(j["ledger"][std::string(name)].is_number_unsigned());
        CHECK(j["ledger"][std::string(name)] == b.count);
    });
    anatomy::detail::for_each_field(e.phases, [&](std::string_view name, anatomy::bytes b) {
        CAPTURE(name);
        CHECK(j["phases"][std::string(name)] == b.count);
    });
    CHECK(j["phases"].contains("forward"));
    CHECK(j["phases"].contains("backward"));
    CHECK(j["phases"].contains("optimizer"));
    // The inputs.
    CHECK(j["model"] == "llama-3.2-1b");
    CHECK(j["task"] == "causal-lm");
    CHECK(j["batch"] == 2);
    CHECK(j["seq"] == 512);
    CHECK(j["recipe"]["weights"] == "bf16");
    CHECK(j["recipe"]["optimizer"] == "adamw-fused");
    CHECK(j["recipe"]["grad_accum"] == 4);
    CHECK(j["recipe"]["master_weights"] == "none");
}

TEST_CASE("estimate's peak: the replay's where its allocations are modelled, else the analytic walk's") {
    // bert-base under autocast at 16 x 128: the allocator hands out cached
    // blocks whole at the peak, which the walk cannot know; the H200 measured
    // 2,398,877,696 B (tests/data/calibration-h200.jsonl); the walk is 2.2 % under, the replay 0.54 % over.
    const json amp = run_json({"estimate", "--model", "bert-base", "--batch", "16", "--seq", "128", "--autocast", "fp16",
                               "--json"});
    CHECK(amp["peak_from"] == "replay");
    CHECK(amp["peak_bytes"] == amp["replayed_peak_bytes"]);
    CHECK(amp["tensor_peak_bytes"].get<std::uint64_t>() < 2398877696ULL * 98 / 100);
    CHECK(amp["peak_bytes"].get<std::uint64_t>() > 2398877696ULL);
    CHECK(amp["peak_bytes"].get<std::uint64_t>() < 2398877696ULL * 1006 / 1000);
    const result text = run({"estimate", "--model", "bert-base", "--batch", "16", "--seq", "128", "--autocast", "fp16"});
    CHECK(text.out.find("tensors' peak") != std::string::npos);
    CHECK(text.out.find("replayed peak") == std::string::npos);
    // DeepSpeed ZeRO's allocations are not replayed as it makes them: the walk's peak, the replay's beside it.
    const json zero = run_json({"estimate", "--model", "gpt2", "--batch", "2", "--seq", "256", "--parallel", "zero2",
                                "--world-size", "1", "--json"});
    CHECK(zero["peak_from"] == "analytic");
    CHECK(zero["peak_bytes"] == zero["tensor_peak_bytes"]);
    const result zero_text = run({"estimate", "--model", "gpt2", "--batch", "2", "--seq", "256", "--parallel", "zero2",
                                  "--world-size", "1"});
    CHECK(zero_text.out.find("replayed peak") != std::string::npos);
}

TEST_CASE("a config and its preset estimate the same") {
    const std::vector<std::string> shape{"--batch", "4", "--seq", "512", "--json"};
    auto with = [&](std::vector<std::string> head) {
        head.insert(head.end(), shape.begin(), shape.end());
        return head;
    };
    const json preset = run_json(with({"estimate", "--model", "bert-large"}));
    const json config = run_json(with({"estimate", "--config", data_dir + "/hf_configs/bert-large.json"}));
    CHECK(preset["params"] == 335143938);
    CHECK(config["params"] == preset["params"]);
    CHECK(config["ledger"] == preset["ledger"]);
    CHECK(config["peak_bytes"] == preset["peak_bytes"]);
    CHECK(config["config"] == data_dir + "/hf_configs/bert-large.json");
    CHECK(config["task_from"] == "architectures (BertForSequenceClassification)");
}

TEST_CASE("recipe flags reach the estimate") {
    SECTION("master weights: an fp32 copy of half weights") {
        const json j = run_json({"estimate", "--model", "gpt2", "--batch", "1", "--seq", "8", "--weights", "fp16",
                                 "--master-weights", "fp32", "--json"});
        CHECK(j["ledger"]["master_weights"] == 124439808ULL * 4);
        CHECK(j["ledger"]["weights"] == 124439808ULL * 2);
    }
    SECTION("--num-labels") {
        const json j = run_json({"estimate", "--model", "bert-base", "--batch", "1", "--seq", "8", "--num-labels", "3",
                                 "--json"});
        CHECK(j["params"] == 109483778 + 769);
        CHECK(j["num_labels"] == 3);
    }
    SECTION("--task seq-cls on a decoder preset") {
        const json j = run_json({"estimate", "--model", "gpt2", "--task", "seq-cls", "--batch", "1", "--seq", "8",
                                 "--json"});
        CHECK(j["task"] == "seq-cls");
        CHECK(j["params"] == 124439808 + 2 * 768);
    }
    SECTION("--inference: optimizer none, nothing trainable") {
        const json j = run_json({"estimate", "--model", "gpt2", "--batch", "1", "--seq", "8", "--inference", "--json"});
        CHECK(j["recipe"]["optimizer"] == "none");
        CHECK(j["trainable_params"] == 0);
        CHECK(j["ledger"]["gradients"] == 0);
        // --optimizer none is allowed with --inference
        CHECK(run({"estimate", "--model", "gpt2", "--batch", "1", "--seq", "8", "--inference", "--optimizer", "none"})
                  .status == 0);
    }
    SECTION("LoRA: adapters only are trainable") {
        const json j = run_json({"estimate", "--model", "llama-3.2-1b", "--batch", "1", "--seq", "8", "--lora-rank",
                                 "8", "--lora-targets", "q_proj, v_proj", "--json"});
        CHECK(j["trainable_params"] == 851968);
        CHECK(j["recipe"]["lora_targets"] == json::array({"q_proj", "v_proj"}));
    }
    SECTION("T5 target length") {
        const json j = run_json({"estimate", "--config", data_dir + "/hf_configs/t5-small.json", "--batch", "8",
                                 "--seq", "512", "--target-seq", "128", "--json"});
        CHECK(j["target_seq"] == 128);
        CHECK(j["params"] == 60506624);
    }
}

TEST_CASE("the table lists every ledger entry and phase") {
    const result r = run({"estimate", "--model", "t5-small", "--batch", "1", "--seq", "8"});
    REQUIRE(r.status == 0);
    CHECK(r.err.empty());
    anatomy::for_each_entry(anatomy::memory_ledger{}, [&](std::string_view name, anatomy::bytes) {
        CAPTURE(name);
        CHECK(r.out.find("\n" + std::string(name) + " ") != std::string::npos);
    });
    anatomy::detail::for_each_field(anatomy::phase_peaks{}, [&](std::string_view name, anatomy::bytes) {
        CAPTURE(name);
        CHECK(r.out.find("\n" + std::string(name) + " ") != std::string::npos);
    });
    CHECK(r.out.find("\npeak ") != std::string::npos);
    CHECK(r.out.find("\nreserved ") != std::string::npos);
    CHECK(r.out.find("60,506,624") != std::string::npos);
}

TEST_CASE("the table's columns line up for any value") {
    // From MiB to petabytes: in every row of the sizes table the bytes and
    // the size end where the header's "bytes" and "size" end.
    for (const char* batch : {"1", "4096"}) {
        const result r = run({"estimate", "--model", "llama-3-70b", "--weights", "bf16", "--batch", batch, "--seq", "32768"});
        REQUIRE(r.status == 0);
        std::istringstream lines(r.out.substr(r.out.find("\nmodel state") + 1));
        const std::regex count("[0-9][0-9,]*"), size("[0-9.]+ [KMGTPE]?i?B\\b");
        std::string line;
        std::size_t bytes_end = 0, size_end = 0, rows = 0;
        while (std::getline(lines, line)) {
            if (line.empty()) continue;
            CAPTURE(batch, line);
            if (const std::size_t h = line.find(" bytes "); h != std::string::npos) {
                bytes_end = h + 6;
                size_end = line.find(" size ") + 5;
                continue;
            }
            std::smatch m;
            REQUIRE(std::regex_search(line, m, count));
            CHECK(static_cast<std::size_t>(m.position(0) + m.length(0)) == bytes_end);
            REQUIRE(std::regex_search(line, m, size));
            CHECK(static_cast<std::size_t>(m.position(0) + m.length(0)) == size_end);
            ++rows;
        }
        CHECK(rows >= 20);
    }
}

TEST_CASE("estimate's fits agrees with max-batch: its batch fits, one more does not") {
    const std::vector<std::vector<std::string>> cases = {
        {"--model", "gpt2", "--seq", "512", "--budget", "6GiB"},
        {"--model", "llama-3.2-1b", "--weights", "bf16", "--seq", "1024", "--grad-checkpointing", "--budget", "20GiB"},
        {"--model", "qwen2.5-0.5b", "--weights", "bf16", "--seq", "2048", "--compile", "--gpu", "l4"},
        {"--model", "bert-base", "--autocast", "bf16", "--seq", "512", "--optimizer", "paged-adamw8bit", "--gpu", "a10"}};
    for (const auto& flags : cases) {
        std::vector<std::string> search{"max-batch", "--json"};
        search.insert(search.end(), flags.begin(), flags.end());
        const std::uint64_t best = run_json(search).at("max_batch").get<std::uint64_t>();
        CAPTURE(flags, best);
        REQUIRE(best > 0);
        for (const std::uint64_t batch : {best, best + 1}) {
            std::vector<std::string> one{"estimate", "--json", "--batch", std::to_string(batch)};
            one.insert(one.end(), flags.begin(), flags.end());
            const json j = run_json(one);
            CHECK(j.at("fits").get<bool>() == (batch == best));
            if (j.contains("gpu")) CHECK(j.at("gpu").at("fits") == j.at("fits"));
        }
    }
}

TEST_CASE("max-batch") {
    SECTION("the library's answer, with the estimate at that batch") {
        const json j = run_json({"max-batch", "--model", "gpt2", "--seq", "1024", "--budget", "15GiB", "--json"});
        const std::uint64_t expected =
            anatomy::max_batch(anatomy::presets::gpt2, anatomy::recipe{}, anatomy::shape{.seq = 1024}, 15 * anatomy::GiB);
        CHECK(j["max_batch"] == expected);
        CHECK(j["budget_bytes"] == 15 * anatomy::GiB.count);
        CHECK(j["capped"] == (expected == anatomy::max_batch_search_limit));
        CHECK(j["at_batch"] == std::max<std::uint64_t>(expected, 1));
        CHECK(j.contains("peak_bytes"));
        CHECK(j.contains("reserved_bytes"));
    }
    SECTION("0 when batch 1 does not fit") {
        const json j = run_json({"max-batch", "--model", "llama-3-8b", "--seq", "8", "--budget", "1GiB", "--json"});
        CHECK(j["max_batch"] == 0);
        CHECK(j["at_batch"] == 1);
        const result r = run({"max-batch", "--model", "llama-3-8b", "--seq", "8", "--budget", "1GiB"});
        CHECK(r.out.find("max batch 0: even batch 1 does not fit") != std::string::npos);
    }
}

TEST_CASE("presets --json lists every preset") {
    const json j = run_json({"presets", "--json"});
    REQUIRE(j["presets"].size() == anatomy::presets::all.size());
    for (std::size_t i = 0; i < anatomy::presets::all.size(); ++i) {
        const auto& p = anatomy::presets::all[i];
        CHECK(j["presets"][i]["name"] == p.name);
        CHECK(j["presets"][i]["params"] == anatomy::parameter_count(anatomy::lower(p.spec)));
    }
}

TEST_CASE("errors: one line on stderr, nothing on stdout, status 1 or 2") {
    const auto [status, args] = GENERATE(table<int, std::vector<std::string>>({
        {2, {"estimate", "--model", "gpt2", "--seq", "8"}},
        {2, {"estimate", "--model", "gpt2", "--batch", "1", "--seq", "8", "--nope"}},
        {2, {"estimate", "--model", "gpt2", "--batch", "-1", "--seq", "8"}},
        {2, {"max-batch", "--model", "gpt2", "--seq", "8", "--budget", "15 parsecs"}},
        {2, {"estimate", "--model", "gpt2", "--batch", "1", "--seq", "8", "--optimizer"}},
        {2, {"presets", "--batch", "1"}},
        {1, {"estimate", "--config", "/nonexistent/config.json", "--batch", "1", "--seq", "8"}},
        {1, {"estimate", "--config", ANATOMY_CLI_DATA "/bad/malformed.json", "--batch", "1", "--seq", "8"}},
        {1, {"estimate", "--model", "llama-3-70b", "--batch", "1000000000000", "--seq", "100000000"}},
        {1, {"max-batch", "--config", ANATOMY_CLI_DATA "/bad/overflow.json", "--seq", "8", "--budget", "1GiB"}},
    }));
    const result r = run(args);
    CAPTURE(args, r.err);
    CHECK(r.status == status);
    CHECK(r.out.empty());
    CHECK(r.err.starts_with("anatomy: "));
    CHECK(r.err.find('\n') == r.err.size() - 1);
}

TEST_CASE("sweep: every cell is what estimate prints for that point") {
    const json j = run_json({"sweep", "--model", "gpt2", "--batch", "1,3", "--seq", "128:256:x2", "--budget", "3GiB",
                             "--json"});
    REQUIRE(j["cells"].size() == 4);
    CHECK(j["batches"] == json::array({1, 3}));
    CHECK(j["seqs"] == json::array({128, 256}));
    std::size_t fitting = 0;
    for (const json& cell : j["cells"]) {
        CAPTURE(cell);
        const json e = run_json({"estimate", "--model", "gpt2", "--batch", std::to_string(cell["batch"].get<int>()),
                                 "--seq", std::to_string(cell["seq"].get<int>()), "--budget", "3GiB", "--json"});
        CHECK(cell["peak_bytes"] == e["peak_bytes"]);
        CHECK(cell["reserved_bytes"] == e["reserved_bytes"]);
        CHECK(cell["fits"] == e["fits"]);
        fitting += cell["fits"].get<bool>() ? 1 : 0;
    }
    CHECK(fitting > 0);  // the budget splits the grid: some cells fit, some do not
    CHECK(fitting < 4);
}

TEST_CASE("sweep --svg draws one line per sequence length, a point per batch, the budget, and each largest fit") {
    const std::string path = (std::filesystem::temp_directory_path() / "anatomy_sweep_test.svg").string();
    const result r = run({"sweep", "--model", "gpt2", "--batch", "1:4", "--seq", "128,256,1024", "--budget", "3GiB",
                          "--svg", path});
    REQUIRE(r.status == 0);
    std::ifstream in(path);
    const std::string svg((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::filesystem::remove(path);
    CHECK(svg.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""));
    CHECK(svg.ends_with("</svg>\n"));
    const std::regex line("<polyline class=\"seq\"[^>]* points=\"([^\"]*)\"");
    std::size_t lines = 0;
    for (auto it = std::sregex_iterator(svg.begin(), svg.end(), line); it != std::sregex_iterator(); ++it) {
        const std::string points = (*it)[1];
        CHECK(std::count(points.begin(), points.end(), ',') == 4);  // batches 1 to 4
        ++lines;
    }
    CHECK(lines == 3);
    CHECK(svg.find("class=\"budget\"") != std::string::npos);
    // Each line's mark is the largest batch whose cell fits, by the cells estimate prints.
    const json j = run_json({"sweep", "--model", "gpt2", "--batch", "1:4", "--seq", "128,256,1024", "--budget", "3GiB",
                             "--json"});
    std::map<std::uint64_t, std::uint64_t> largest_fit;  // seq -> batch
    for (const json& cell : j["cells"])
        if (cell["fits"].get<bool>()) {
            std::uint64_t& b = largest_fit[cell["seq"].get<std::uint64_t>()];
            b = std::max(b, cell["batch"].get<std::uint64_t>());
        }
    REQUIRE(!largest_fit.empty());
    REQUIRE(largest_fit.size() < 3);  // the budget leaves one length without a fitting batch
    const std::regex mark("<circle class=\"largest-fit\" data-seq=\"([0-9]+)\" data-batch=\"([0-9]+)\"");
    std::map<std::uint64_t, std::uint64_t> marked;
    for (auto it = std::sregex_iterator(svg.begin(), svg.end(), mark); it != std::sregex_iterator(); ++it)
        marked[std::stoull((*it)[1])] = std::stoull((*it)[2]);
    CHECK(marked == largest_fit);
    CHECK(svg.find("seq 1024: none fits") != std::string::npos);
    // The top tick clears every peak and the budget.
    const std::regex tick("<text class=\"tick\"[^>]*>([0-9.e+-]+) GiB</text>");
    double top = 0;
    for (auto it = std::sregex_iterator(svg.begin(), svg.end(), tick); it != std::sregex_iterator(); ++it)
        top = std::max(top, std::stod((*it)[1]));
    double highest = 3;
    for (const json& cell : j["cells"])
        highest = std::max(highest, static_cast<double>(cell["peak_bytes"].get<std::uint64_t>()) / (1 << 30));
    CHECK(top > highest);
}

TEST_CASE("estimate --plot draws the last step: a stack per ledger entry, reserved, the phases, the replayed peak") {
    const std::string path = (std::filesystem::temp_directory_path() / "anatomy_plot_test.svg").string();
    const json j = run_json({"estimate", "--model", "gpt2", "--batch", "2", "--seq", "256", "--autocast", "bf16",
                             "--plot", path, "--json"});
    std::ifstream in(path);
    const std::string svg((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::filesystem::remove(path);
    const auto count = [&](const std::string& what) {
        std::size_t n = 0;
        for (std::size_t at = svg.find(what); at != std::string::npos; at = svg.find(what, at + 1)) ++n;
        return n;
    };
    // gpt2 under autocast with AdamW holds weights, optimizer state, gradients,
    // activations, the step's scratch and the cuBLAS workspaces (the
    // forward's and autograd's); no master copy, no buckets.
    CHECK(count("<path class=\"stack\"") == 6);
    for (const char* entry : {"weights", "optimizer state", "gradients", "activations", "temporaries", "cuBLAS workspaces"})
        CHECK(count(std::string("data-entry=\"") + entry + "\"") == 1);
    // The replay's model state is the estimate's, in whole allocator blocks:
    // a block is split only when more than 1 MiB would be left (the weights
    // come to 1.4 % more, at most 1 MiB a tensor).
    const auto most = [&](const std::string& entry) {
        const std::size_t at = svg.find("data-entry=\"" + entry + "\" data-most-bytes=\"");
        REQUIRE(at != std::string::npos);
        return std::stoull(svg.substr(svg.find("data-most-bytes=\"", at) + 17));
    };
    for (const auto& [entry, key] : {std::pair{"weights", "weights"}, std::pair{"gradients", "gradients"},
                                     std::pair{"optimizer state", "optimizer_state"}}) {
        INFO(entry);
        const auto logical = j["model_state"][key].get<std::uint64_t>();
        CHECK(most(entry) >= logical);
        CHECK(most(entry) <= logical + logical / 50);
    }
    CHECK(count("<polyline class=\"reserved\"") == 1);
    // The reserved line stays off the frame: the top tick is above it.
    const std::regex tick("<text class=\"tick\"[^>]*>([0-9.e+-]+) GiB</text>");
    double top = 0;
    for (auto it = std::sregex_iterator(svg.begin(), svg.end(), tick); it != std::sregex_iterator(); ++it)
        top = std::max(top, std::stod((*it)[1]));
    CHECK(top * (1 << 30) > static_cast<double>(j["reserved_bytes"].get<std::uint64_t>()));
    CHECK(count("<line class=\"phase\"") == 3);  // the last step's forward, backward and optimizer step
    for (const char* phase : {">forward<", ">backward<", ">optimizer<"}) CHECK(count(phase) == 1);
    // The plot's peak is all the allocator holds; the replayed peak is the
    // step's tensors', without the forward's and autograd's workspaces (32
    // MiB each on the H200).
    const std::uint64_t drawn_peak =
        j["replayed_peak_bytes"].get<std::uint64_t>() + 2 * anatomy::devices::h200.cublas_workspace().count;
    CHECK(count("data-peak-bytes=\"" + std::to_string(drawn_peak) + "\"") == 1);
    CHECK(count("<text class=\"alive\"") >= 3);
    // Accumulating, the last step is both micro-steps and the optimizer step.
    REQUIRE(run({"estimate", "--model", "gpt2", "--batch", "2", "--seq", "256", "--grad-accum", "2", "--plot", path})
                .status == 0);
    std::ifstream accumulated(path);
    const std::string svg2((std::istreambuf_iterator<char>(accumulated)), std::istreambuf_iterator<char>());
    std::filesystem::remove(path);
    std::size_t phases = 0;
    for (std::size_t at = svg2.find("<line class=\"phase\""); at != std::string::npos;
         at = svg2.find("<line class=\"phase\"", at + 1))
        ++phases;
    CHECK(phases == 5);  // forward, backward, forward, backward, optimizer
}

TEST_CASE("sizes past 64 bits are an overflow error on every path: exit 1, a message naming it") {
    const std::string huge = "1099511627776";  // 2^40
    const auto args = GENERATE_COPY(values<std::vector<std::string>>({
        // the analytic estimate, training and serving
        {"estimate", "--model", "llama-2-7b", "--weights", "bf16", "--batch", huge, "--seq", "1048576"},
        {"estimate", "--model", "qwen2.5-0.5b", "--inference", "--batch", "131072", "--seq", "1073741824"},
        // the parallel modes
        {"estimate", "--model", "llama-3.2-1b", "--batch", huge, "--seq", "4194304", "--parallel", "ddp", "--world-size", "2"},
        {"estimate", "--model", "llama-3.2-1b", "--batch", huge, "--seq", "4194304", "--parallel", "fsdp", "--world-size", "8"},
        {"estimate", "--model", "llama-3.2-1b", "--batch", huge, "--seq", "4194304", "--parallel", "zero3", "--world-size",
         "1", "--offload", "optimizer"},
        // Megatron's formulas: the sizes, and tp x pp (2^32 x 2^32 once wrapped to 0 and divided)
        {"estimate", "--model", "llama-2-7b", "--batch", huge, "--seq", "4096", "--tp", "2", "--pp", "2", "--world-size", "8"},
        {"estimate", "--model", "llama-2-7b", "--batch", "1", "--seq", "128", "--tp", "4294967296", "--pp", "4294967296",
         "--world-size", "8"},
        // llm.c
        {"estimate", "--framework", "llm.c", "--model", "gpt2", "--batch", huge, "--seq", "1024"},
        // max-batch's search, and its answer on a card
        {"max-batch", "--model", "llama-3.2-1b", "--seq", huge, "--budget", "80GiB"},
        {"max-batch", "--model", "llama-3.2-1b", "--seq", huge, "--gpu", "h200", "--parallel", "ddp", "--world-size", "2"},
    }));
    const result r = run(args);
    CAPTURE(args, r.err);
    CHECK(r.status == 1);
    CHECK(r.err.starts_with("anatomy: "));
    CHECK(r.err.find("overflows 64 bits") != std::string::npos);
}

TEST_CASE("with --json an error is a JSON object even when an argument is not UTF-8") {
    // fuzz_cli's first finding: the error echoes the argument, and dumping
    // byte 0xD7 threw out of cli::run.
    const result r = run({"max-batch", "--model", "gpt\xD7-W", "--seq", "1024", "--budget", "15GiB", "--json"});
    CHECK(r.status == 2);
    const json j = json::parse(r.out);
    CHECK(j["exit"] == 2);
    CHECK(j["error"].get<std::string>().find("gpt\xEF\xBF\xBD-W") != std::string::npos);  // U+FFFD
}

TEST_CASE("llm.c framework: the buffers of train_gpt2.cu, and what it prints") {
    const json j = run_json({"estimate", "--framework", "llm.c", "--model", "d12", "--batch", "4", "--seq", "1024",
                             "--gpu", "h200", "--json"});
    CHECK(j["framework"] == "llm.c");
    CHECK(j["params"] == 124475904);
    CHECK(j["llmc"]["padded_vocab"] == 50304);
    // peak_bytes is the sum of llm.c's own allocations, each one in the ledger.
    std::uint64_t sum = 0;
    for (const auto& [name, value] : j["ledger"].items()) sum += value.get<std::uint64_t>();
    CHECK(j["peak_bytes"] == sum);
    CHECK(j["ledger"]["activations"] == 2596061184);
    CHECK(j["ledger"]["master_weights"] == 497903616);
    CHECK(j["printed"]["activations"] == "allocating 2475 MiB for activations");
    CHECK(j["printed"]["memory_per_sequence"] == "memory per sequence: 618 MiB");
    CHECK(j["gpu"]["printed_device_memory_usage_mib"] == 4942);
    CHECK(j["gpu"]["printed_estimated_max_batch"] == 227);

    // -w 0, -r 2 and cuDNN change the buffers as llm.c does.
    const json w0 = run_json({"estimate", "--framework", "llm.c", "--model", "d12", "--batch", "4", "--seq", "1024",
                              "--no-master-weights", "--recompute", "2", "--cudnn", "--json"});
    CHECK_FALSE(w0["ledger"].contains("master_weights"));
    CHECK(w0["ledger"]["cudnn_workspace"] == anatomy::llmc::cudnn_backward_workspace(
                                                  *anatomy::llmc::from_descriptor("d12"), 4, 1024).count);
    CHECK(w0["ledger"]["activations"].get<std::uint64_t>() < j["ledger"]["activations"].get<std::uint64_t>());

    // A GPT-2 preset is the same model as llm.c's descriptor, padded vocabulary included.
    const json preset = run_json({"estimate", "--framework", "llm.c", "--model", "gpt2", "--batch", "4", "--seq",
                                  "1024", "--json"});
    CHECK(preset["ledger"] == j["ledger"]);
}

TEST_CASE("llm.c framework: max-batch agrees with the library") {
    const json j = run_json({"max-batch", "--framework", "llm.c", "--model", "d24", "--seq", "1024", "--cudnn", "--recompute", "2",
                             "--budget", "40GiB", "--json"});
    const anatomy::llmc::run_config run{.recompute = 2, .cudnn = true};
    CHECK(j["max_batch"] ==
          anatomy::llmc::max_batch(*anatomy::llmc::from_descriptor("d24"), run, 1024, 40 * anatomy::GiB));
    CHECK(j["max_batch"] == 55);  // what anatomy-validate proved on an H200 (docs/validation-h200.md)
}

TEST_CASE("llm.c framework: flags of the other framework are refused by name") {
    const auto [status, args, message] = GENERATE(table<int, std::vector<std::string>, std::string>({
        {2, {"--autocast", "bf16"}, "--framework llm.c: --autocast does not apply"},
        {2, {"--grad-checkpointing"}, "llm.c recomputes with --recompute"},
        {2, {"--optimizer", "sgd"}, "trains with AdamW only"},
        {2, {"--recompute", "3"}, "--recompute: is llm.c's -r, 0, 1 or 2"},
        {2, {"--weights", "fp16"}, "bf16 (default) or fp32"},
        {2, {"--weights", "fp32", "--cudnn"}, "--cudnn: llm.c's cuDNN attention needs the bf16 build"},
        {1, {"--seq", "2048"}, "--seq 2048: llm.c asserts T <= max_seq_len, 1024"},
    }));
    std::vector<std::string> full{"estimate", "--framework", "llm.c", "--model", "d12", "--batch", "1"};
    if (std::find(args.begin(), args.end(), "--seq") == args.end()) full.insert(full.end(), {"--seq", "64"});
    full.insert(full.end(), args.begin(), args.end());
    const result r = run(full);
    CAPTURE(full, r.err);
    CHECK(r.status == status);
    CHECK(r.out.empty());
    CHECK(r.err.find(message) != std::string::npos);
}
