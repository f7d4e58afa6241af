// The umbrella header stays off <string> and <stdexcept>: they cost about a
// fifth of its compile time and kept the three-budget TU at the edge of its
// target (docs/performance.md). libstdc++'s include guards tell; other
// standard libraries are not checked.
#include <anatomy/anatomy.hpp>

#if defined(__GLIBCXX__) && (defined(_GLIBCXX_STRING) || defined(_GLIBCXX_STDEXCEPT))
#error "<anatomy/anatomy.hpp> includes <string> or <stdexcept>; keep them out of the library's headers (error.hpp holds a literal)"
#endif

#include <exception>
#include <type_traits>

static_assert(std::is_base_of_v<std::exception, anatomy::error>, "anatomy::error is caught as std::exception");
static_assert(std::is_base_of_v<anatomy::error, anatomy::overflow_error>);
