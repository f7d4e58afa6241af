// Fails to compile with ANATOMY_EXPECT_FAIL: sizes are never negative.
#include <anatomy/bytes.hpp>

using namespace anatomy;

#ifdef ANATOMY_EXPECT_FAIL
constexpr bytes size = -2 * GiB;
#else
constexpr bytes size = 2 * GiB;
#endif
static_assert(size.count != 1);
