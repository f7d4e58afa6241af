// Optimizer state per parameter tensor, as each implementation allocates it.
#pragma once

#include <anatomy/bytes.hpp>
#include <anatomy/detail/static_vector.hpp>
#include <anatomy/dtype.hpp>
#include <anatomy/op.hpp>
#include <anatomy/recipe.hpp>

namespace anatomy {

namespace detail {
// bitsandbytes keeps fp32 state for tensors below `min_8bit_size` and one fp32
// absmax per block of 256 elements for the others.
inline constexpr std::uint64_t adam8bit_min_size = 4096;
inline constexpr std::uint64_t adam8bit_block = 256;
}  // namespace detail

// The state tensors that `kind` allocates for one parameter tensor whose state
// is kept in `state_type` (the parameter's dtype, or fp32 when a master copy is
// updated), one entry per allocation.
constexpr detail::static_vector<bytes, 4> optimizer_state_tensors(optimizer_kind kind, param_tensor tensor,
                                                                   dtype state_type) {
    const std::uint64_t n = tensor.numel();
    const bytes elem = size_of(state_type);
    const bytes fp32 = size_of(dtype::fp32);
    detail::static_vector<bytes, 4> state;
    switch (kind) {
        case optimizer_kind::none:
        case optimizer_kind::sgd: break;
        case optimizer_kind::sgd_momentum:  // momentum_buffer
            state.push_back(n * elem);
            break;
        case optimizer_kind::lion:  // bitsandbytes' 32-bit state is fp32 whatever the parameter's dtype
            state.push_back(n * fp32);
            break;
        case optimizer_kind::lion8bit:
            if (n < detail::adam8bit_min_size) {
                state.push_back(n * fp32);
            } else {
                state.push_back(n * size_of(dtype::uint8));
                state.push_back(detail::ceil_div(n, detail::adam8bit_block) * fp32);
            }
            break;
        case optimizer_kind::adamw:
        case optimizer_kind::adamw_forloop:  // exp_avg, exp_avg_sq; `step` stays a CPU scalar
            state.push_back(n * elem);
            state.push_back(n * elem);
            break;
        case optimizer_kind::adamw_fused:  // fused keeps `step` as an fp32 scalar on the device
            state.push_back(n * elem);
            state.push_back(n * elem);
            state.push_back(fp32);
            break;
        case optimizer_kind::adafactor:
            // Adafactor upcasts half gradients before creating state, so its state is fp32.
            if (tensor.is_matrix()) {
                state.push_back(tensor.rows * fp32);  // exp_avg_sq_row
                state.push_back(tensor.cols * fp32);  // exp_avg_sq_col
            } else {
                state.push_back(n * fp32);  // exp_avg_sq
            }
            break;
        case optimizer_kind::adam8bit:
        case optimizer_kind::paged_adamw8bit:
            if (n < detail::adam8bit_min_size) {
                state.push_back(n * fp32);
                state.push_back(n * fp32);
            } else {
                const bytes absmax = detail::ceil_div(n, detail::adam8bit_block) * fp32;
                state.push_back(n * size_of(dtype::uint8));
                state.push_back(n * size_of(dtype::uint8));
                state.push_back(absmax);
                state.push_back(absmax);
            }
            break;
    }
    return state;
}

constexpr bytes optimizer_state(optimizer_kind kind, param_tensor tensor, dtype state_type) {
    bytes sum{};
    for (bytes b : optimizer_state_tensors(kind, tensor, state_type)) sum += b;
    return sum;
}

// bitsandbytes' two 256-entry fp32 quantization maps, shared by every tensor
// that has 8-bit state.
constexpr bytes optimizer_shared_state(optimizer_kind kind, param_tensor largest_tensor) {
    if (largest_tensor.numel() < detail::adam8bit_min_size) return 0 * B;
    switch (kind) {
        case optimizer_kind::adam8bit:
        case optimizer_kind::paged_adamw8bit: return 2 * (256 * size_of(dtype::fp32));
        case optimizer_kind::lion8bit: return 256 * size_of(dtype::fp32);
        default: return 0 * B;
    }
}

// bitsandbytes' paged optimizers keep their state in CUDA managed memory,
// outside PyTorch's caching allocator: max_memory_allocated does not count
// it, the device's memory does.
constexpr bool pages_state(optimizer_kind kind) { return kind == optimizer_kind::paged_adamw8bit; }

// What bitsandbytes stores for one quantized weight, each its own allocation.
// 4-bit (Params4bit and its QuantState, double quantization): the packed
// weight, one uint8 absmax per 64 elements, the 16-entry code, the offset, one
// fp32 absmax per 256 absmax and the 256-entry code of that second
// quantization (traced on an H200: tests/data/qlora-h200.jsonl).
// LLM.int8 (Int8Params): the int8 weight and one fp32 scale per output row, SCB.
constexpr detail::static_vector<bytes, 6> quantized_weight_tensors(quantization q, param_tensor weight) {
    detail::static_vector<bytes, 6> parts;
    const std::uint64_t n = weight.numel();
    if (q == quantization::int8) {
        parts.push_back(n * size_of(dtype::int8));
        parts.push_back(weight.rows * size_of(dtype::fp32));
        return parts;
    }
    const std::uint64_t blocks = detail::ceil_div(n, 64);
    parts.push_back(detail::ceil_div(n, 2) * size_of(dtype::uint8));
    parts.push_back(blocks * size_of(dtype::uint8));
    parts.push_back(16 * size_of(dtype::fp32));
    parts.push_back(1 * size_of(dtype::fp32));
    parts.push_back(detail::ceil_div(blocks, 256) * size_of(dtype::fp32));
    parts.push_back(256 * size_of(dtype::fp32));
    return parts;
}

// How one optimizer.step() allocates scratch on top of its state.
enum class step_scratch {
    none,            // fused, in-place or quantized kernels
    one_per_tensor,  // foreach AdamW: _foreach_sqrt(exp_avg_sq) makes one tensor per parameter, all alive at once
    two_per_tensor,  // a loop over parameters making two temporaries each, freed before the next parameter
};

constexpr step_scratch scratch_of(optimizer_kind kind) {
    switch (kind) {
        case optimizer_kind::adamw: return step_scratch::one_per_tensor;
        // for-loop AdamW: exp_avg_sq.sqrt() / bias_correction2_sqrt; Adafactor:
        // update = grad**2 + eps and -update.
        case optimizer_kind::adamw_forloop:
        case optimizer_kind::adafactor: return step_scratch::two_per_tensor;
        // bitsandbytes updates in one kernel per tensor (measured: Lion's step
        // adds 5.6 MB to weights + gradients + state on gpt2).
        case optimizer_kind::lion:
        case optimizer_kind::lion8bit:
        case optimizer_kind::paged_adamw8bit:
        case optimizer_kind::adamw_fused:
        case optimizer_kind::adam8bit:
        case optimizer_kind::sgd:
        case optimizer_kind::sgd_momentum:
        case optimizer_kind::none: return step_scratch::none;
    }
    throw error("anatomy::scratch_of: unknown optimizer");
}

// Adafactor upcasts half gradients, so its scratch is fp32 too.
constexpr dtype scratch_type(optimizer_kind kind, dtype state_type) {
    return kind == optimizer_kind::adafactor ? dtype::fp32 : state_type;
}

}  // namespace anatomy
