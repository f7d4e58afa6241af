// Parameter counts equal what transformers 5.17 builds: sum(p.numel()) of
// each config instantiated on the meta device (bench/param_counts), heads
// included and tied weights counted once. The counts are committed data, so
// this test needs no torch.
#include "hf_config.hpp"

#include <anatomy/graph.hpp>
#include <anatomy/presets.hpp>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

using namespace anatomy;

namespace {

const nlohmann::json& counts() {
    static const nlohmann::json all = [] {
        std::ifstream in(std::string(ANATOMY_DATA_DIR) + "/param-counts-transformers5.17.0.json");
        REQUIRE(in.good());
        return nlohmann::json::parse(in).at("counts");
    }();
    return all;
}

// The transformers class that trains `t`, as the counts file names its entries.
std::string class_suffix(task t) {
    switch (t) {
        case task::causal_lm: return "ForCausalLM";
        case task::seq_cls: return "ForSequenceClassification";
        case task::masked_lm: return "ForMaskedLM";
        case task::seq2seq: return "ForConditionalGeneration";
        case task::image_cls: return "ForImageClassification";
    }
    return "";
}

// transformers' count for the config at `key` built with the head of `t`:
// the main entry when its class trains t, else the "<key>#<Class>" entry.
std::uint64_t transformers_count(const std::string& key, task t) {
    const nlohmann::json& all = counts();
    const nlohmann::json& main = all.at(key);
    const std::string suffix = class_suffix(t);
    auto trains = [&](const std::string& cls) {
        return cls.ends_with(suffix) || (t == task::causal_lm && cls.ends_with("LMHeadModel"));
    };
    if (trains(main.at("class").get<std::string>())) return main.at("params").get<std::uint64_t>();
    for (auto it = all.begin(); it != all.end(); ++it)
        if (it.key().starts_with(key + "#") && trains(it.value().at("class").get<std::string>()))
            return it.value().at("params").get<std::uint64_t>();
    FAIL("no count for " << key << " with a " << suffix << " head");
    return 0;
}

}  // namespace

TEST_CASE("every preset has transformers' parameter count", "[params]") {
    for (const auto& p : presets::all) {
        if (p.name == "gpt3-175b") continue;  // no checkpoint; tests/unit/params_test.cpp checks its formula
        INFO(p.name);
        const std::string key = "tests/data/configs/" + std::string(p.name) + ".json";
        CHECK(parameter_count(lower(p.spec)) == transformers_count(key, p.spec().head.kind));
    }
}

TEST_CASE("every config read from config.json has transformers' parameter count, with each head",
          "[params][config]") {
    // "<config>" is the class its architectures name; "<config>#<Class>" the
    // same config with another head (seq-cls of a decoder, masked-lm of an encoder).
    std::size_t checked = 0;
    std::vector<std::string> unsupported;
    for (auto it = counts().begin(); it != counts().end(); ++it) {
        const std::string key = it.key();
        INFO(key);
        const std::size_t hash = key.find('#');
        const std::string file = key.substr(0, hash);
        std::optional<task> head;
        if (hash != std::string::npos) {
            head = cli::hf_detail::task_of_class(key.substr(hash + 1));
            REQUIRE(head.has_value());
        }
        // The shared calibration configs are copied under tests/data/calibration-configs.
        const std::string prefix = "shared/calibration/configs/";
        const std::string path = file.starts_with(prefix)
                                     ? std::string(ANATOMY_CALIBRATION_CONFIGS) + "/" + file.substr(prefix.size())
                                     : std::string(ANATOMY_DATA_DIR) + "/../../" + file;
        cli::hf_model model;
        try {
            model = cli::load_hf_config(path, head);
        } catch (const cli::input_error& e) {
            if (std::string(e.what()).find("is not supported") == std::string::npos) throw;
            unsupported.push_back(file);
            continue;
        }
        CHECK(parameter_count(lower(model.spec)) == it.value().at("params").get<std::uint64_t>());
        ++checked;
    }
    CHECK(checked == 244);
    CHECK(unsupported.empty());
}
