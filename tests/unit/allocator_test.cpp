// The caching-allocator model against the rules of
// c10/cuda/CUDACachingAllocator.cpp.
#include <anatomy/caching_allocator.hpp>

#include <catch2/catch.hpp>

using namespace anatomy;

TEST_CASE("requests are rounded to 512 B and served from 2 MiB small segments", "[allocator]") {
    caching_allocator a;
    REQUIRE(a.allocate(100 * B, tensor_owner::step));
    CHECK(a.allocated() == 512 * B);
    CHECK(a.reserved() == 2 * MiB);
    REQUIRE(a.allocate(1 * MiB, tensor_owner::step));  // still small (<= 1 MiB): same segment
    CHECK(a.reserved() == 2 * MiB);
    CHECK(a.allocated() == 1 * MiB + 512 * B);
    CHECK(a.consistent());
}

TEST_CASE("large requests: 20 MiB segments under 10 MiB, else rounded to 2 MiB", "[allocator]") {
    caching_allocator a;
    REQUIRE(a.allocate(3 * MiB, tensor_owner::step));
    CHECK(a.reserved() == 20 * MiB);
    REQUIRE(a.allocate(5 * MiB, tensor_owner::step));  // split from the 20 MiB segment
    CHECK(a.reserved() == 20 * MiB);
    // 11 MiB + 512 B fits the 12 MiB left; the 0.5 MiB rest is not split off.
    REQUIRE(a.allocate(11 * MiB + 1 * B, tensor_owner::step));
    CHECK(a.reserved() == 20 * MiB);
    CHECK(a.allocated() == 20 * MiB);
    REQUIRE(a.allocate(11 * MiB + 1 * B, tensor_owner::step));
    CHECK(a.reserved() == 20 * MiB + 12 * MiB);  // a segment of its own, rounded to 2 MiB
    CHECK(a.consistent());
}

TEST_CASE("a large block is split only when more than 1 MiB would remain", "[allocator]") {
    caching_allocator a;
    REQUIRE(a.allocate(40 * MiB, tensor_owner::step));
    a.release(40 * MiB);
    // 39.5 MiB leaves 0.5 MiB: the whole 40 MiB block is handed out and counted.
    REQUIRE(a.allocate(39 * MiB + 512 * KiB, tensor_owner::step));
    CHECK(a.allocated() == 40 * MiB);
    a.release(39 * MiB + 512 * KiB);
    // 30 MiB leaves 10 MiB: split, and the rest serves the next request.
    REQUIRE(a.allocate(30 * MiB, tensor_owner::step));
    CHECK(a.allocated() == 30 * MiB);
    REQUIRE(a.allocate(10 * MiB, tensor_owner::step));
    CHECK(a.reserved() == 40 * MiB);
    CHECK(a.consistent());
}

TEST_CASE("freed neighbours merge; best fit takes the smallest block that fits", "[allocator]") {
    caching_allocator a;
    REQUIRE(a.allocate(100 * MiB, tensor_owner::step));
    REQUIRE(a.allocate(50 * MiB, tensor_owner::model));
    a.release(100 * MiB);
    REQUIRE(a.allocate(40 * MiB, tensor_owner::step));
    REQUIRE(a.allocate(40 * MiB, tensor_owner::step));
    a.release(40 * MiB);
    a.release(40 * MiB);
    // The two 40 MiB blocks and the 20 MiB tail merged back into 100 MiB.
    REQUIRE(a.allocate(100 * MiB, tensor_owner::step));
    CHECK(a.reserved() == 150 * MiB);
    CHECK(a.peak_reserved() == 150 * MiB);
    CHECK(a.consistent());
}

TEST_CASE("under a cap, free segments are released before a request fails", "[allocator]") {
    caching_allocator a(100 * MiB);
    REQUIRE(a.allocate(60 * MiB, tensor_owner::step));
    a.release(60 * MiB);
    // 60 MiB cached + 70 MiB new would pass the cap: the cached segment goes back first.
    REQUIRE(a.allocate(70 * MiB, tensor_owner::step));
    CHECK(a.reserved() == 70 * MiB);
    CHECK_FALSE(a.out_of_memory());
    CHECK_FALSE(a.allocate(40 * MiB, tensor_owner::step));
    CHECK(a.out_of_memory());
}

TEST_CASE("release_all frees one owner's blocks only", "[allocator]") {
    caching_allocator a;
    REQUIRE(a.allocate(30 * MiB, tensor_owner::gradient));
    REQUIRE(a.allocate(30 * MiB, tensor_owner::model));
    a.release_all(tensor_owner::gradient);
    CHECK(a.allocated() == 30 * MiB);
    a.release(30 * MiB);  // model blocks are never released by size
    CHECK(a.allocated() == 30 * MiB);
    CHECK(a.consistent());
}
