#include <anatomy/bytes.hpp>
#include <anatomy/format.hpp>

#include <catch2/catch.hpp>

#include <cstdint>
#include <limits>

using namespace anatomy;

TEST_CASE("sizes are built by multiplication and compare by value", "[bytes]") {
    CHECK((80 * GiB).count == 85899345920ULL);
    CHECK(2 * KiB == 2048 * B);
    CHECK(GiB / MiB == 1024);
    CHECK(1 * GB < 1 * GiB);
    CHECK(mib_ceil(MiB + 1 * B) == 2);
    CHECK(mib_ceil(0 * B) == 0);
}

TEST_CASE("overflowing arithmetic throws instead of wrapping", "[bytes][overflow]") {
    const bytes huge{std::numeric_limits<std::uint64_t>::max()};
    CHECK_THROWS_AS(huge + 1 * B, overflow_error);
    CHECK_THROWS_WITH(huge + 1 * B, Catch::Contains("overflows 64 bits"));
    CHECK_THROWS_AS((std::uint64_t{1} << 30) * TiB, overflow_error);
    CHECK_THROWS_AS(1 * B - 2 * B, overflow_error);
    CHECK_THROWS_WITH(-1 * GiB, Catch::Contains("negative count"));
    CHECK_THROWS_WITH(GiB / (0 * B), Catch::Contains("division by a zero size"));
    CHECK((huge - 1 * B) + 1 * B == huge);
}

TEST_CASE("parse_bytes reads IEC and SI units", "[bytes][parse]") {
    CHECK(parse_bytes("15GiB") == 15 * GiB);
    CHECK(parse_bytes("80 GB") == 80 * GB);
    CHECK(parse_bytes(" 512MiB ") == 512 * MiB);
    CHECK(parse_bytes("1.5GiB") == 1536 * MiB);
    CHECK(parse_bytes("1073741824B") == GiB);
    CHECK(parse_bytes("2K") == 2 * KiB);
    CHECK(parse_bytes("0.25 TB") == 250 * GB);
}

TEST_CASE("parse_bytes rejects what it cannot read, naming the fix", "[bytes][parse]") {
    CHECK_THROWS_WITH(parse_bytes(""), Catch::Contains("empty size"));
    CHECK_THROWS_WITH(parse_bytes("abc"), Catch::Contains("must start with a number"));
    CHECK_THROWS_WITH(parse_bytes("-5GiB"), Catch::Contains("must start with a number"));
    CHECK_THROWS_WITH(parse_bytes("15 parsecs"), Catch::Contains("unknown unit"));
    CHECK_THROWS_WITH(parse_bytes("15"), Catch::Contains("needs a unit"));  // not 15 bytes
    CHECK_THROWS_WITH(parse_bytes(" 0 "), Catch::Contains("needs a unit"));
    CHECK_THROWS_WITH(parse_bytes("15gib"), Catch::Contains("unknown unit"));
    CHECK_THROWS_AS(parse_bytes("99999999999999999999"), overflow_error);
    CHECK_THROWS_AS(parse_bytes("20000000 TiB"), overflow_error);
}

TEST_CASE("fmt prints sizes in binary units", "[bytes][format]") {
    CHECK(fmt::format("{}", 80 * GiB) == "80.00 GiB");
    CHECK(fmt::format("{}", 1536 * B) == "1.50 KiB");
    CHECK(fmt::format("{}", 1023 * B) == "1023 B");
    CHECK(fmt::format("[{:>10}]", 2 * MiB) == "[  2.00 MiB]");
}
