// Errors of the anatomy library.
//
// Every check in the library throws anatomy::error. In constant evaluation a
// throw is not a constant expression, so the same check becomes a compile
// error whose diagnostic shows the throwing line, message included.
#pragma once

#include <stdexcept>


namespace anatomy {

class error : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// Thrown when a byte count or an element count does not fit 64 bits.
class overflow_error : public error {
public:
    using error::error;
};

}  // namespace anatomy

namespace anatomy::detail {
// A failed check in constant evaluation shows this call, message included, in
// the compiler's "in constexpr expansion of" note.
constexpr void require(bool condition, const char* message) {
    if (!condition) throw error(message);
}
}  // namespace anatomy::detail
