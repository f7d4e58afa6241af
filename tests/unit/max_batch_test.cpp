#include <anatomy/max_batch.hpp>
#include <anatomy/presets.hpp>

#include <catch2/catch.hpp>

using namespace anatomy;

TEST_CASE("max_batch is 0 when the model state alone does not fit", "[max_batch]") {
    CHECK(max_batch(presets::llama_3_8b, {.weights = dtype::bf16}, {.seq = 2048}, 16 * GiB) == 0);
}

TEST_CASE("max_batch is the largest batch whose reserved memory fits", "[max_batch]") {
    for (const bytes budget : {8 * GiB, 16 * GiB, 24 * GiB, 80 * GiB}) {
        INFO(budget.count);
        const shape per_batch{.seq = 1024};
        const std::uint64_t b = max_batch(presets::gpt2, {}, per_batch, budget);
        REQUIRE(b > 0);
        CHECK(estimate(presets::gpt2, {}, {.batch = b, .seq = 1024}).reserved <= budget);
        CHECK(estimate(presets::gpt2, {}, {.batch = b + 1, .seq = 1024}).reserved > budget);
    }
}

TEST_CASE("max_batch never exceeds its search limit", "[max_batch]") {
    CHECK(max_batch(presets::tinybert, {.weights = dtype::bf16}, {.seq = 8}, 80 * GiB, 37) == 37);
}

TEST_CASE("max_batch reports invalid inputs", "[max_batch][errors]") {
    CHECK_THROWS_WITH(max_batch(presets::gpt2, {}, {.seq = 0}, 10 * GiB), Catch::Contains("seq must be > 0"));
    CHECK_THROWS_WITH(max_batch(presets::gpt2, {}, {.seq = 8}, 10 * GiB, 0), Catch::Contains("limit must be > 0"));
}
