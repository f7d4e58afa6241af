// Measures what one cudaMalloc costs in device memory as cudaMemGetInfo sees it:
// the driver's granularity, whether small allocations share a page, and the
// context's own footprint. Output: one JSON object per line on stdout.
//   nvcc -O2 -arch=sm_90 driver_granularity.cu -o driver_granularity
#include <cuda_runtime_api.h>
#include <cstdio>
#include <cstdlib>
#include <vector>

static void check(cudaError_t status, const char* what) {
    if (status != cudaSuccess) {
        std::fprintf(stderr, "driver_granularity: %s failed: %s\n", what, cudaGetErrorString(status));
        std::exit(1);
    }
}

static size_t free_bytes() {
    size_t free = 0, total = 0;
    check(cudaMemGetInfo(&free, &total), "cudaMemGetInfo");
    return free;
}

// Allocates buffers of the given sizes one after the other and prints, after
// each, the cumulative drop in free memory and the buffer's address relative
// to the first one; then frees them all.
static void series(const char* name, const std::vector<size_t>& sizes) {
    std::vector<void*> buffers;
    const size_t start = free_bytes();
    std::printf("{\"series\":\"%s\",\"sizes\":[", name);
    for (size_t i = 0; i < sizes.size(); ++i) std::printf("%s%zu", i ? "," : "", sizes[i]);
    std::printf("],\"drops\":[");
    for (size_t i = 0; i < sizes.size(); ++i) {
        void* p = nullptr;
        check(cudaMalloc(&p, sizes[i]), "cudaMalloc");
        buffers.push_back(p);
        std::printf("%s%zu", i ? "," : "", start - free_bytes());
    }
    std::printf("],\"offsets\":[");
    for (size_t i = 0; i < buffers.size(); ++i)
        std::printf("%s%lld", i ? "," : "",
                    static_cast<long long>(reinterpret_cast<char*>(buffers[i]) - reinterpret_cast<char*>(buffers[0])));
    for (void* p : buffers) check(cudaFree(p), "cudaFree");
    std::printf("],\"after_free\":%lld}\n", static_cast<long long>(start) - static_cast<long long>(free_bytes()));
}

static void series(const char* name, size_t bytes, int count) {
    series(name, std::vector<size_t>(static_cast<size_t>(count), bytes));
}

int main() {
    check(cudaFree(nullptr), "cudaFree(nullptr) (context creation)");
    cudaDeviceProp prop{};
    check(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");
    size_t free = 0, total = 0;
    check(cudaMemGetInfo(&free, &total), "cudaMemGetInfo");
    int driver = 0, runtime = 0;
    check(cudaDriverGetVersion(&driver), "cudaDriverGetVersion");
    check(cudaRuntimeGetVersion(&runtime), "cudaRuntimeGetVersion");
    std::printf("{\"device\":\"%s\",\"total\":%zu,\"free_after_context\":%zu,\"context\":%zu,"
                "\"driver\":%d,\"runtime\":%d}\n", prop.name, total, free, total - free, driver, runtime);
    const size_t MiB = size_t{1} << 20;
    const size_t singles[] = {1, 256, 512, 513, 4096, 65536, MiB, 2 * MiB - 1, 2 * MiB, 2 * MiB + 1,
                              3 * MiB, 4 * MiB, 10 * MiB + 1, 20 * MiB + 1, 64 * MiB + 1,
                              (size_t{1} << 30) + 1};
    for (size_t s : singles) series("single", s, 1);
    series("small", 1024, 40);
    series("half_page", MiB, 8);
    series("page_and_bit", 2 * MiB + 1, 8);
    series("odd", 3 * MiB + 12345, 8);
    series("large_odd", 777 * MiB + 4321, 4);
    // Where small allocations stop sharing pages, and how they are aligned.
    for (size_t s : {size_t{1}, size_t{4}, size_t{100}, size_t{512}, size_t{1000}, size_t{4096}, size_t{8193},
                     size_t{65536}, size_t{262145}, size_t{524288}, MiB - 1, MiB, MiB + 1, MiB + MiB / 2,
                     2 * MiB - 4096, 2 * MiB - 1})
        series("threshold", s, 5);
    // Which requests above 1 MiB are still carved from pool pages: a 1-byte
    // request after one shares its page only if it was.
    for (size_t s : {MiB + MiB / 8, MiB + MiB / 2, MiB + 3 * MiB / 4, 2 * MiB - 4096, 2 * MiB - 512})
        series("pool_limit", {s, 1});
    // Small buffers between large ones: do they share pages with each other, or with a large one's tail?
    series("interleaved", {3 * MiB + 1, 1024, 3 * MiB + 1, 1024, 5 * MiB, 32768, 32768, 4, 7 * MiB + 3, 100});
    // Mixed small sizes: how the pool packs them.
    series("mixed", {3072, 9216, 3072, 12288, 3072, 4, 700000, 700000, 700000, 4096, 1, 2 * MiB + 5, 1});
}
