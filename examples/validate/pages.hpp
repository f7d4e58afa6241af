// Device code of anatomy-validate, callable from host C++ (pages.cu).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

namespace anatomy::harness {

// Writes one byte into every 4 KiB page of [base, base + size): a page the
// driver did not map makes the launch fail with an illegal address.
cudaError_t stamp_pages(void* base, std::size_t size, unsigned char tag);

}  // namespace anatomy::harness
