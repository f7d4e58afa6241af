#include "pages.hpp"

namespace anatomy::harness {

namespace {
constexpr std::size_t page = 4096;

__global__ void stamp_kernel(unsigned char* base, std::size_t size, unsigned char tag) {
    const std::size_t offset = (static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x) * page;
    if (offset < size) base[offset] = tag;
}
}  // namespace

cudaError_t stamp_pages(void* base, std::size_t size, unsigned char tag) {
    if (size == 0) return cudaSuccess;
    const std::size_t pages = (size + page - 1) / page;
    constexpr unsigned threads = 256;
    const auto blocks = static_cast<unsigned>((pages + threads - 1) / threads);
    stamp_kernel<<<blocks, threads>>>(static_cast<unsigned char*>(base), size, tag);
    return cudaGetLastError();
}

}  // namespace anatomy::harness
