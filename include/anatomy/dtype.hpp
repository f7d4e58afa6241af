// Element types of parameters, gradients, optimizer state and activations.
#pragma once

#include <anatomy/bytes.hpp>

namespace anatomy {

enum class dtype { fp32, bf16, fp16, int8, uint8, boolean, int32, int64 };

constexpr bytes size_of(dtype type) {
    switch (type) {
        case dtype::fp32: return 4 * B;
        case dtype::bf16:
        case dtype::fp16: return 2 * B;
        case dtype::int8:
        case dtype::uint8:
        case dtype::boolean: return 1 * B;
        case dtype::int32: return 4 * B;
        case dtype::int64: return 8 * B;
    }
    throw error("anatomy::size_of: unknown dtype");
}

constexpr bool is_half(dtype type) { return type == dtype::bf16 || type == dtype::fp16; }

}  // namespace anatomy
