#include <anatomy/max_batch.hpp>
#include <anatomy/presets.hpp>

#include <catch2/catch.hpp>

using namespace anatomy;

TEST_CASE("max_batch is 0 when the model state alone does not fit", "[max_batch]") {
    CHECK(max_batch(presets::llama_3_8b, {.weights = dtype::bf16}, {.seq = 2048}, 16 * GiB) == 0);
}

TEST_CASE("max_batch is the largest batch the replayed allocator runs under the cap", "[max_batch]") {
    for (const bytes budget : {8 * GiB, 16 * GiB, 24 * GiB}) {
        INFO(budget.count);
        const std::uint64_t b = max_batch(presets::gpt2, {}, {.seq = 1024}, budget);
        REQUIRE(b > 0);
        const bytes cap = budget - cublas_workspace(recipe{});
        CHECK_FALSE(replay_allocator(presets::gpt2, {}, {.batch = b, .seq = 1024}, cap).out_of_memory);
        CHECK(replay_allocator(presets::gpt2, {}, {.batch = b + 1, .seq = 1024}, cap).out_of_memory);
    }
}

TEST_CASE("max_batch never exceeds its search limit", "[max_batch]") {
    CHECK(max_batch(presets::tinybert, {.weights = dtype::bf16}, {.seq = 8}, 80 * GiB, 37) == 37);
}

TEST_CASE("max_batch reports invalid inputs", "[max_batch][errors]") {
    CHECK_THROWS_WITH(max_batch(presets::gpt2, {}, {.seq = 0}, 10 * GiB), Catch::Contains("seq must be > 0"));
    CHECK_THROWS_WITH(max_batch(presets::gpt2, {}, {.seq = 8}, 10 * GiB, 0), Catch::Contains("limit must be > 0"));
}
