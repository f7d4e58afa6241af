// Fails to compile with ANATOMY_EXPECT_FAIL: a size that overflows 64 bits is
// a compile error in constant evaluation, never a wrapped value.
#include <anatomy/bytes.hpp>

using namespace anatomy;

#ifdef ANATOMY_EXPECT_FAIL
constexpr bytes too_big = (1ULL << 30) * TiB;
#else
constexpr bytes too_big = (1ULL << 20) * TiB;
#endif
static_assert(too_big > 0 * B);
