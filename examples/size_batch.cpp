// A trainer's start-up: size the micro-batch before the first step.
//
// The trainer reads the device's free memory (cudaMemGetInfo, once its CUDA
// context exists), asks anatomy for the largest micro-batch that fits, and
// splits the global batch it wants into micro-batches and accumulation steps.
// Copy this into your trainer and change the three lines under "The run".
//
//   size_batch [--budget SIZE] [--global-batch N]
//   --budget: the memory to plan for (default: what cudaMemGetInfo reports free;
//             required when built without CUDA)
#include <anatomy/anatomy.hpp>

#if ANATOMY_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

namespace {

// The run: Llama 3.2 1B, bf16 weights with an fp32 master copy, AdamW,
// gradient checkpointing, 2048-token sequences, 256 sequences per step.
constexpr anatomy::model_spec model = anatomy::presets::llama_3_2_1b;
constexpr anatomy::recipe recipe{.weights = anatomy::dtype::bf16,
                                 .master = anatomy::master_weights::fp32,
                                 .optimizer = anatomy::optimizer_kind::adamw,
                                 .grad_checkpointing = true};
constexpr anatomy::shape sequence{.seq = 2048};

// What a step needs at batch 1 is known at compile time: a build for a card
// smaller than this fails here rather than at launch.
static_assert(anatomy::fits_budget<anatomy::estimate(model, recipe, sequence).peak, 80 * anatomy::GiB>());

std::optional<anatomy::bytes> free_device_memory() {
#if ANATOMY_HAVE_CUDA
    std::size_t free = 0, total = 0;
    const cudaError_t status = cudaMemGetInfo(&free, &total);
    if (status != cudaSuccess)
        throw std::runtime_error(std::string("size_batch: cudaMemGetInfo failed: ") + cudaGetErrorString(status) +
                                 "; pass --budget SIZE instead");
    return free * anatomy::B;
#else
    return std::nullopt;
#endif
}

// The largest micro-batch <= `fits` that divides `global`: every step then
// sees exactly the global batch.
std::uint64_t micro_batch_for(std::uint64_t global, std::uint64_t fits) {
    for (std::uint64_t micro = fits < global ? fits : global; micro > 1; --micro)
        if (global % micro == 0) return micro;
    return 1;
}

std::uint64_t parse_positive(std::string_view flag, const char* text) {
    char* end = nullptr;
    const unsigned long long n = std::strtoull(text, &end, 10);
    if (*text == '-' || end == text || *end != '\0' || n == 0)
        throw std::invalid_argument("size_batch: " + std::string(flag) + " takes a whole number > 0, got \"" +
                                    text + "\"");
    return n;
}

}  // namespace

int main(int argc, char** argv) {
    try {
        std::optional<anatomy::bytes> budget;
        std::uint64_t global_batch = 256;
        for (int i = 1; i < argc; i += 2) {
            const std::string_view flag = argv[i];
            if (i + 1 >= argc) throw std::invalid_argument("size_batch: " + std::string(flag) + " needs a value");
            if (flag == "--budget") {
                try {
                    budget = anatomy::parse_bytes(argv[i + 1]);
                } catch (const anatomy::error& e) {
                    throw std::invalid_argument(std::string("size_batch: --budget: ") + e.what());
                }
            }
            else if (flag == "--global-batch") global_batch = parse_positive(flag, argv[i + 1]);
            else throw std::invalid_argument("size_batch: unknown flag \"" + std::string(flag) +
                                             "\"; use --budget SIZE or --global-batch N");
        }
        if (!budget) budget = free_device_memory();
        if (!budget)
            throw std::invalid_argument("size_batch: built without CUDA, so it cannot read free memory; pass --budget SIZE");

        const std::uint64_t fits = anatomy::max_batch(model, recipe, sequence, *budget);
        if (fits == 0) {
            std::fprintf(stderr, "size_batch: budget %llu MiB: not even one sequence fits (batch 1 peaks at %llu MiB)\n",
                         static_cast<unsigned long long>(anatomy::in_mib(*budget)),
                         static_cast<unsigned long long>(
                             anatomy::mib_ceil(anatomy::estimate(model, recipe, sequence).peak)));
            return 1;
        }
        const std::uint64_t micro = micro_batch_for(global_batch, fits);
        anatomy::shape step = sequence;
        step.batch = micro;
        const anatomy::memory_estimate at = anatomy::estimate(model, recipe, step);
        std::printf("budget            %llu MiB\n", static_cast<unsigned long long>(anatomy::in_mib(*budget)));
        std::printf("largest batch     %llu\n", static_cast<unsigned long long>(fits));
        std::printf("micro-batch       %llu\n", static_cast<unsigned long long>(micro));
        std::printf("accumulation      %llu steps -> global batch %llu\n",
                    static_cast<unsigned long long>(global_batch / micro),
                    static_cast<unsigned long long>(global_batch));
        std::printf("predicted peak    %llu MiB\n", static_cast<unsigned long long>(anatomy::mib_ceil(at.peak)));
        return 0;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "%s\n", e.what());
        return 2;
    }
}
