// The driver model against the H200: bench/cuda/driver_granularity.cu's
// series of cudaMalloc calls, each with the drop of free memory it caused.
#include <anatomy/driver.hpp>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <fstream>
#include <string>

TEST_CASE("cuda_driver: every measured series of cudaMalloc calls, to the byte") {
    std::ifstream in(ANATOMY_DRIVER_FILE);
    REQUIRE(in.good());
    int series = 0;
    for (std::string line; std::getline(in, line);) {
        const nlohmann::json j = nlohmann::json::parse(line);
        if (!j.contains("series")) continue;  // the device line
        ++series;
        INFO("series " << j["series"].get<std::string>() << ": " << line);
        anatomy::cuda_driver driver;
        anatomy::bytes mapped{};
        const auto& sizes = j["sizes"];
        const auto& drops = j["drops"];
        REQUIRE(sizes.size() == drops.size());
        for (std::size_t i = 0; i < sizes.size(); ++i) {
            mapped += driver.allocate(sizes[i].get<std::uint64_t>() * anatomy::B);
            CHECK(mapped.count == drops[i].get<std::uint64_t>());
        }
        CHECK(j["after_free"].get<std::int64_t>() == 0);
    }
    CHECK(series == 44);
}
