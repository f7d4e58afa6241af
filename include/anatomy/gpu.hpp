// GPUs: total memory as CUDA reports it, and what the CUDA context and
// PyTorch's per-process buffers take before a model's first tensor.
#pragma once

#include <anatomy/bytes.hpp>

#include <array>
#include <optional>
#include <string_view>

namespace anatomy {

struct gpu_spec {
    std::string_view name;
    bytes total;    // cudaMemGetInfo's total
    bytes context;  // CUDA context, loaded kernels and driver reservations, outside the caching allocator
    bool context_measured;  // false: an estimate carried over from a measured card of the same generation
};

// cuBLAS allocates a 32 MiB workspace through PyTorch's caching allocator on
// each thread that runs a matmul (training: the forward thread and autograd's
// backward thread), and cuBLASLt 1 MiB more when a Linear has a bias. They
// count against a memory cap like any tensor. Measured on an H200 with
// PyTorch 2.11: 65 MiB in training, 33 MiB in inference.
inline constexpr bytes cublas_workspace_training = 65 * MiB;
inline constexpr bytes cublas_workspace_inference = 33 * MiB;

namespace detail {
// Measured on an H200 (PyTorch 2.11, CUDA 13): NVML used memory grows by
// 620.8 MiB at the first CUDA call. Other cards are assumed to take the same.
inline constexpr bytes measured_context = 650969088 * B;
}  // namespace detail

inline constexpr std::array gpus = {
    gpu_spec{"v100-16gb", 16945709056 * B, detail::measured_context, false},
    gpu_spec{"v100-32gb", 34089730048 * B, detail::measured_context, false},
    gpu_spec{"a100-40gb", 42505273344 * B, detail::measured_context, false},
    gpu_spec{"a100-80gb", 85198045184 * B, detail::measured_context, false},
    gpu_spec{"h100-80gb", 85520809984 * B, detail::measured_context, false},
    gpu_spec{"h200", 150109880320 * B, detail::measured_context, true},
    gpu_spec{"l4", 23580639232 * B, detail::measured_context, false},
    gpu_spec{"a10", 23836098560 * B, detail::measured_context, false},
    gpu_spec{"rtx3090", 25447170048 * B, detail::measured_context, false},
    gpu_spec{"rtx4090", 25393692672 * B, detail::measured_context, false},
};

constexpr std::optional<gpu_spec> find_gpu(std::string_view name) {
    for (const gpu_spec& g : gpus)
        if (g.name == name) return g;
    return std::nullopt;
}

// What the caching allocator may hold on `gpu`: the card minus its context.
constexpr bytes allocator_budget(const gpu_spec& gpu) { return gpu.total - gpu.context; }

}  // namespace anatomy
