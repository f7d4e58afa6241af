// The estimator against real steps measured on an H200 (PyTorch 2.11,
// transformers 5.17): tests/data/calibration-h200.jsonl, copied from
// ../shared/calibration. Each case's spec is turned into a recipe and shape;
// the predicted peak must match `peak_alloc` within the accuracy bar.
#include <anatomy/anatomy.hpp>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <string>
#include <utility>
#include <vector>

using namespace anatomy;

namespace {

struct calibration_case {
    std::string name;
    model_spec model;
    recipe training;
    shape size;
    double peak_alloc;
    std::vector<std::string> lora_targets;  // the recipe's targets point into these
};

model_spec model_named(const std::string& config) {
    static const std::map<std::string, std::string> preset_of{{"llama3.2-1b", "llama-3.2-1b"}};
    const auto it = preset_of.find(config);
    const auto spec = presets::find(it == preset_of.end() ? config : it->second);
    REQUIRE(spec.has_value());
    return *spec;
}

recipe recipe_of(const nlohmann::json& spec) {
    recipe r{};
    if (spec.value("weights", "fp32") == "bf16") r.weights = dtype::bf16;
    const std::string amp = spec.value("amp", "");
    if (amp == "fp16") r.autocast = autocast_mode::fp16;
    if (amp == "bf16") r.autocast = autocast_mode::bf16;
    const std::string opt = spec.value("opt", "adamw");
    if (opt == "sgdm") r.optimizer = optimizer_kind::sgd_momentum;
    if (opt == "sgd") r.optimizer = optimizer_kind::sgd;
    if (opt == "adafactor") r.optimizer = optimizer_kind::adafactor;
    if (opt == "none") r.optimizer = optimizer_kind::none;
    if (spec.value("fused", false)) r.optimizer = optimizer_kind::adamw_fused;
    if (!spec.value("foreach", true)) r.optimizer = optimizer_kind::adamw_forloop;
    if (spec.value("attn", "sdpa") == "eager") r.attention = attention_kernel::eager;
    r.grad_checkpointing = spec.value("gc", false);
    r.inference = spec.value("inference", false);
    r.kv_cache = r.inference && spec.value("use_cache", false);
    r.grad_accum = spec.value("grad_accum", std::uint64_t{1});
    r.lora.rank = spec.value("lora_rank", std::uint64_t{0});
    r.lora.dropout = spec.value("lora_dropout", 0.0);
    return r;
}

std::vector<calibration_case> load_cases(const char* path) {
    std::ifstream in(path);
    REQUIRE(in.good());
    std::vector<calibration_case> cases;
    std::string line;
    while (std::getline(in, line)) {
        const auto j = nlohmann::json::parse(line);
        if (!j.contains("case")) continue;
        const auto& spec = j.at("spec");
        // use_cache=False in training is set on the model config, not a recipe flag.
        if (!spec.value("inference", false) && !spec.value("use_cache", true)) continue;
        cases.push_back({j.at("case").get<std::string>(), model_named(spec.at("model").get<std::string>()),
                         recipe_of(spec),
                         shape{.batch = spec.at("batch").get<std::uint64_t>(),
                               .seq = spec.at("seq").get<std::uint64_t>(),
                               .target_seq = spec.value("tgt", std::uint64_t{0})},
                         j.at("peak_alloc").get<double>(),
                         spec.value("lora_targets", std::vector<std::string>{})});
    }
    return cases;
}

// Median and max |predicted - measured| / measured of the peak.
std::pair<double, double> peak_errors(const std::vector<calibration_case>& cases) {
    std::vector<double> errors;
    for (const auto& c : cases) {
        recipe r = c.training;
        for (std::size_t i = 0; i < c.lora_targets.size(); ++i) r.lora.targets[i] = c.lora_targets[i];
        const memory_estimate e = estimate(c.model, r, c.size);
        const double error = (static_cast<double>(e.peak.count) - c.peak_alloc) / c.peak_alloc;
        UNSCOPED_INFO(c.name << ": predicted " << e.peak.count << ", measured " << c.peak_alloc << ", error "
                             << 100 * error << "%");
        errors.push_back(std::fabs(error));
    }
    std::sort(errors.begin(), errors.end());
    const std::size_t n = errors.size();
    const double median = n % 2 ? errors[n / 2] : (errors[n / 2 - 1] + errors[n / 2]) / 2;
    return {median, errors.back()};
}

}  // namespace

TEST_CASE("predicted peaks match the H200 measurements: median <= 2%, max <= 5%", "[calibration]") {
    const auto cases = load_cases(ANATOMY_CALIBRATION_FILE);
    REQUIRE(cases.size() == 32);
    const auto [median, max] = peak_errors(cases);
    CHECK(median <= 0.02);
    CHECK(max <= 0.05);
}

TEST_CASE("cases the model was not built on meet the same bar", "[calibration]") {
    // LoRA, gradient accumulation, fp32 Llama, eager T5, inference with and
    // without a cache, other shapes (docs/accuracy.md).
    const auto cases = load_cases(ANATOMY_EXTRA_CASES_FILE);
    REQUIRE(cases.size() == 12);
    const auto [median, max] = peak_errors(cases);
    CHECK(median <= 0.02);
    CHECK(max <= 0.05);
}
