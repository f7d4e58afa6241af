// The Hugging Face config reader on any JSON: a model or anatomy::error (a
// message naming the key, or the overflow), never another exception (a JSON
// type error, an out-of-range access); a model it reads is estimated at
// 1 x 128 tokens, which may refuse it only with anatomy::error.
#include "hf_config.hpp"

#include <anatomy/estimate.hpp>

#include <nlohmann/json.hpp>

#include <cstdint>
#include <cstdlib>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    nlohmann::json config;
    try {
        config = nlohmann::json::parse(text);
    } catch (const nlohmann::json::exception&) {
        return 0;  // not JSON: load_hf_config reports that before the reader runs
    }
    anatomy::cli::hf_model model;
    try {
        model = anatomy::cli::hf_config_from_json(config, std::nullopt, "fuzz.json");
    } catch (const anatomy::error&) {
        return 0;
    }
    try {
        (void)anatomy::estimate(model.spec, anatomy::recipe{}, anatomy::shape{.batch = 1, .seq = 128});
    } catch (const anatomy::error&) {
        return 0;  // e.g. overflow_error for sizes past 64 bits
    }
    return 0;
}
