// Errors of the anatomy library.
//
// Every check in the library throws anatomy::error. In constant evaluation a
// throw is not a constant expression, so the same check becomes a compile
// error whose diagnostic shows the throwing line, message included.
#pragma once

// Not <stdexcept>: it brings <string>, about a fifth of the umbrella
// header's compile time (docs/performance.md, tenth session).
#include <exception>

namespace anatomy {

// The library's messages are string literals, so the error holds a pointer
// to one. An error with a message built at run time derives from it and
// overrides what() (the CLI's do).
class error : public std::exception {
public:
    explicit error(const char* message) noexcept : message_(message) {}
    const char* what() const noexcept override { return message_; }

private:
    const char* message_;
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
