// The caching-allocator model against the rules of
// c10/cuda/CUDACachingAllocator.cpp.
#include <anatomy/caching_allocator.hpp>

#include <catch2/catch.hpp>

using namespace anatomy;

TEST_CASE("requests are rounded to 512 B and served from 2 MiB small segments", "[allocator]") {
    caching_allocator a;
    REQUIRE(a.allocate(100 * B, tensor_owner::step) != no_block);
    CHECK(a.allocated() == 512 * B);
    CHECK(a.reserved() == 2 * MiB);
    REQUIRE(a.allocate(1 * MiB, tensor_owner::step) != no_block);  // still small (<= 1 MiB): same segment
    CHECK(a.reserved() == 2 * MiB);
    CHECK(a.allocated() == 1 * MiB + 512 * B);
    CHECK(a.consistent());
}

TEST_CASE("large requests: 20 MiB segments under 10 MiB, else rounded to 2 MiB", "[allocator]") {
    caching_allocator a;
    REQUIRE(a.allocate(3 * MiB, tensor_owner::step) != no_block);
    CHECK(a.reserved() == 20 * MiB);
    REQUIRE(a.allocate(5 * MiB, tensor_owner::step) != no_block);  // split from the 20 MiB segment
    CHECK(a.reserved() == 20 * MiB);
    // 11 MiB + 512 B fits the 12 MiB left; the 0.5 MiB rest is not split off.
    REQUIRE(a.allocate(11 * MiB + 1 * B, tensor_owner::step) != no_block);
    CHECK(a.reserved() == 20 * MiB);
    CHECK(a.allocated() == 20 * MiB);
    REQUIRE(a.allocate(11 * MiB + 1 * B, tensor_owner::step) != no_block);
    CHECK(a.reserved() == 20 * MiB + 12 * MiB);  // a segment of its own, rounded to 2 MiB
    CHECK(a.consistent());
}

TEST_CASE("a large block is split only when more than 1 MiB would remain", "[allocator]") {
    caching_allocator a;
    a.release(a.allocate(40 * MiB, tensor_owner::step));
    // 39.5 MiB leaves 0.5 MiB: the whole 40 MiB block is handed out and counted.
    const block_id almost = a.allocate(39 * MiB + 512 * KiB, tensor_owner::step);
    REQUIRE(almost != no_block);
    CHECK(a.allocated() == 40 * MiB);
    a.release(almost);
    // 30 MiB leaves 10 MiB: split, and the rest serves the next request.
    REQUIRE(a.allocate(30 * MiB, tensor_owner::step) != no_block);
    CHECK(a.allocated() == 30 * MiB);
    REQUIRE(a.allocate(10 * MiB, tensor_owner::step) != no_block);
    CHECK(a.reserved() == 40 * MiB);
    CHECK(a.consistent());
}

TEST_CASE("freed neighbours merge; best fit takes the smallest block that fits", "[allocator]") {
    caching_allocator a;
    const block_id big = a.allocate(100 * MiB, tensor_owner::step);
    REQUIRE(a.allocate(50 * MiB, tensor_owner::model) != no_block);
    a.release(big);
    const block_id first = a.allocate(40 * MiB, tensor_owner::step);
    const block_id second = a.allocate(40 * MiB, tensor_owner::step);
    a.release(first);
    a.release(second);
    // The two 40 MiB blocks and the 20 MiB tail merged back into 100 MiB.
    REQUIRE(a.allocate(100 * MiB, tensor_owner::step) != no_block);
    CHECK(a.reserved() == 150 * MiB);
    CHECK(a.peak_reserved() == 150 * MiB);
    CHECK(a.consistent());
}

TEST_CASE("under a cap, free segments are released before a request fails", "[allocator]") {
    caching_allocator a(100 * MiB);
    a.release(a.allocate(60 * MiB, tensor_owner::step));
    // 60 MiB cached + 70 MiB new would pass the cap: the cached segment goes back first.
    REQUIRE(a.allocate(70 * MiB, tensor_owner::step) != no_block);
    CHECK(a.reserved() == 70 * MiB);
    CHECK_FALSE(a.out_of_memory());
    CHECK(a.allocate(40 * MiB, tensor_owner::step) == no_block);
    CHECK(a.out_of_memory());
}

TEST_CASE("release_all frees one owner's blocks only", "[allocator]") {
    caching_allocator a;
    REQUIRE(a.allocate(30 * MiB, tensor_owner::gradient) != no_block);
    REQUIRE(a.allocate(30 * MiB, tensor_owner::model) != no_block);
    a.release_all(tensor_owner::gradient);
    CHECK(a.allocated() == 30 * MiB);
    CHECK(a.consistent());
}

TEST_CASE("a free returns the block its tensor got, not another of the same size", "[allocator]") {
    // A gradient and an activation of one size, at different addresses: freeing
    // the activation must leave the gradient's block allocated, so that the
    // next 2 MiB request reuses the activation's hole and no segment is added.
    caching_allocator a;
    const block_id gradient = a.allocate(40 * MiB, tensor_owner::gradient);
    const block_id activation = a.allocate(40 * MiB, tensor_owner::step);
    REQUIRE(a.allocate(40 * MiB, tensor_owner::step) != no_block);  // keeps the second segment from merging
    a.release(activation);
    a.release_all(tensor_owner::gradient);
    CHECK(a.allocated() == 40 * MiB);
    CHECK_THROWS_WITH(a.release(gradient), Catch::Contains("freed twice"));
    CHECK(a.consistent());
}
