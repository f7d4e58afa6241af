// PyTorch's CUDA caching allocator: how a request becomes a block.
// Reference: c10/cuda/CUDACachingAllocator.cpp (round_size, kMinBlockSize).
#pragma once

#include <anatomy/bytes.hpp>

namespace anatomy {

inline constexpr bytes allocator_min_block = 512 * B;

// The block size the allocator hands out for a request: at least 512 B, in
// multiples of 512 B.
constexpr bytes block_size(bytes request) {
    if (request.count == 0) return request;  // empty tensors get no block
    if (request.count < allocator_min_block.count) return allocator_min_block;
    // Adding a block less one byte overflows just where the rounded size
    // would: one checked addition, not a checked multiplication.
    const std::uint64_t block = allocator_min_block.count;
    return bytes{detail::checked_add(request.count, block - 1) / block * block};
}

}  // namespace anatomy
