// What cudaMalloc costs in device memory, as cudaMemGetInfo shows it.
//
// Measured on an H200 (driver 580.159, CUDA 13.0; bench/cuda/driver_granularity.cu
// prints the drop in free memory and the address of every allocation):
// - a request of 2 MiB or more maps whole 2 MiB pages of its own: 2 MiB + 1
//   byte costs 4 MiB, 777 MiB + 4321 bytes costs 778 MiB;
// - a smaller request is carved, rounded up to 512 bytes, out of 2 MiB pool
//   pages: it goes to the end of the first page with room, else a new page is
//   mapped. 40 requests of 1 KiB cost one page, requests of 1 MiB go two to a
//   page, a 1-byte request after one of 2 MiB - 512 bytes shares its page, and
//   small requests never share a large one's last page;
// - a page goes back when everything in it is freed.
#pragma once

#include <anatomy/bytes.hpp>
#include <anatomy/detail/static_vector.hpp>
#include <anatomy/error.hpp>

#include <cstdint>

namespace anatomy {

inline constexpr bytes cuda_page = 2 * MiB;
inline constexpr bytes cuda_pool_limit = cuda_page;  // requests this large get pages of their own
inline constexpr bytes cuda_pool_alignment = 512 * B;

// The driver's side of a sequence of cudaMalloc calls with no cudaFree in
// between, starting from no allocations.
class cuda_driver {
public:
    constexpr cuda_driver() {}

    // The device memory cudaMalloc(request) maps: 0 when a pool page has room.
    constexpr bytes allocate(bytes request) {
        if (request.count == 0) return bytes{};  // cudaMalloc(0) returns nullptr and maps nothing
        if (request >= cuda_pool_limit) return detail::ceil_div(request.count, cuda_page.count) * cuda_page;
        const std::uint64_t size = detail::ceil_div(request.count, cuda_pool_alignment.count) * cuda_pool_alignment.count;
        for (std::uint64_t& used : pool_used_) {
            if (used + size <= cuda_page.count) {
                used += size;
                return bytes{};
            }
        }
        if (pool_used_.size() == pool_page_capacity)
            throw error("anatomy::cuda_driver: more than 8192 pool pages of small buffers; the model has more "
                        "buffers below 2 MiB than the driver model tracks");
        pool_used_.push_back(size);
        return cuda_page;
    }

private:
    static constexpr std::size_t pool_page_capacity = 8192;
    detail::static_vector<std::uint64_t, pool_page_capacity> pool_used_;
};

}  // namespace anatomy
