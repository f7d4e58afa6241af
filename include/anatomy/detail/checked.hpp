// Overflow-checked unsigned 64-bit arithmetic, usable in constant evaluation.
#pragma once

#include <anatomy/error.hpp>

#include <cstdint>
#include <limits>

namespace anatomy::detail {

inline constexpr std::uint64_t u64_max = std::numeric_limits<std::uint64_t>::max();

constexpr std::uint64_t checked_add(std::uint64_t a, std::uint64_t b) {
    if (a > u64_max - b) throw overflow_error("anatomy: a size overflows 64 bits in an addition; use smaller sizes");
    return a + b;
}

constexpr std::uint64_t checked_sub(std::uint64_t a, std::uint64_t b) {
    if (b > a) throw overflow_error("anatomy: a size would go negative in a subtraction; subtract a smaller size");
    return a - b;
}

constexpr std::uint64_t checked_mul(std::uint64_t a, std::uint64_t b) {
    if (a != 0 && b > u64_max / a) throw overflow_error("anatomy: a size overflows 64 bits in a multiplication; use smaller sizes");
    return a * b;
}

constexpr std::uint64_t ceil_div(std::uint64_t a, std::uint64_t b) {
    return a / b + (a % b != 0 ? 1 : 0);
}

constexpr std::uint64_t round_up(std::uint64_t a, std::uint64_t multiple) {
    return checked_mul(ceil_div(a, multiple), multiple);
}

}  // namespace anatomy::detail
