// Linked into llm.c's trainer with `-Xlinker --wrap=cudaMalloc`: every device
// allocation the trainer makes is printed, byte-exact, before it is made, so
// tests/data/llmc/*.log can be compared with the `llm.c` profile to the byte.
#include <cuda_runtime_api.h>
#include <cstdio>

extern "C" cudaError_t __real_cudaMalloc(void** pointer, size_t bytes);

extern "C" cudaError_t __wrap_cudaMalloc(void** pointer, size_t bytes) {
    std::printf("anatomy-cudaMalloc %zu\n", bytes);
    std::fflush(stdout);
    return __real_cudaMalloc(pointer, bytes);
}
