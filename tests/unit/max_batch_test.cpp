#include <anatomy/max_batch.hpp>
#include <anatomy/presets.hpp>

#include <catch2/catch.hpp>

using namespace anatomy;

TEST_CASE("max_batch is 0 when the model state alone does not fit", "[max_batch]") {
    CHECK(max_batch(presets::llama_3_8b, {.weights = dtype::bf16}, {.seq = 2048}, 16 * GiB) == 0);
}

TEST_CASE("max_batch never exceeds its search limit", "[max_batch]") {
    // Model state does not grow with the batch, so every batch fits 10 GiB.
    CHECK(max_batch(presets::gpt2, {}, {.seq = 1024}, 10 * GiB) == max_batch_search_limit);
    CHECK(max_batch(presets::gpt2, {}, {.seq = 1024}, 10 * GiB, 37) == 37);
}

TEST_CASE("max_batch reports invalid inputs", "[max_batch][errors]") {
    CHECK_THROWS_WITH(max_batch(presets::gpt2, {}, {.seq = 0}, 10 * GiB), Catch::Contains("seq must be > 0"));
    CHECK_THROWS_WITH(max_batch(presets::gpt2, {}, {.seq = 8}, 10 * GiB, 0), Catch::Contains("limit must be > 0"));
}
