// The largest batch that fits a budget, for sizing a run before launch.
#pragma once

#include <anatomy/bytes.hpp>
#include <anatomy/estimate.hpp>
#include <anatomy/estimator.hpp>
#include <anatomy/detail/largest_batch.hpp>
#include <anatomy/device.hpp>
#include <anatomy/reserved.hpp>
#include <anatomy/shape.hpp>

#include <cstdint>
#include <type_traits>

namespace anatomy {

// Batches above this are not searched: a larger answer is reported as the limit.
inline constexpr std::uint64_t max_batch_search_limit = 1ULL << 16;

// The cuBLAS workspaces a step allocates through the caching allocator: one
// per thread that multiplies (training: the forward's and autograd's), and
// cuBLASLt's once (device_profile::cublas_workspace).
constexpr bytes cublas_workspace(const recipe& r, const device_profile& device = devices::h200) {
    return (r.inference ? 1 : 2) * device.cublas_workspace() + device_profile::cublaslt_workspace;
}
// The one the replay does not place, which a fit's check takes off the cap
// first: cuBLASLt's. The forward's and autograd's handles' workspaces are
// blocks of the replay (replay_on).
constexpr bytes cublas_workspace_beside_replay() { return device_profile::cublaslt_workspace; }

namespace detail {

// A fit is the replayed allocator's verdict, and three recipes' reserved
// memory is not modelled:
// - DeepSpeed's: in a fresh process on the H200, ZeRO-1, 2 and 3 reserved
//   30.96, 30.92 and 31.94 GB for tinyllama at 2 x 1024 where the replay
//   reserves 25.86, 25.86 and 28.03 GB (its initialization leaves segments
//   the replay does not);
// - checkpointing over a quantized base under transformers.Trainer: tinyllama
//   QLoRA at 4 x 2048 reserved 12,374 MiB, the replay 11,766 (-4.9 %;
//   tests/data/trainer-h200.jsonl). In the plain loop the replay's verdicts
//   agree with the H200's at all 25 capped batches measured
//   (tests/data/quantized-gc-fit-h200.jsonl, fresh-fit-training-h200.jsonl);
// - the reentrant checkpoint's over a plain base, never measured.
enum class reserved_gap : std::uint8_t { none, zero, quantized_checkpoint_in_trainer, reentrant_checkpoint };
// What keeps a recipe's reserved memory from being modelled: what the fit
// checks refuse, and the CLI marks.
constexpr reserved_gap reserved_gap_of(const recipe& r) {
    if (is_zero(r.parallel)) return reserved_gap::zero;
    const bool quantized_checkpoint = r.grad_checkpointing && r.quantize != quantization::none;
    if (quantized_checkpoint && r.loop == training_loop::hf_trainer) return reserved_gap::quantized_checkpoint_in_trainer;
    if (reentrant_checkpoint(r) && r.quantize == quantization::none) return reserved_gap::reentrant_checkpoint;
    return reserved_gap::none;
}
constexpr bool reserved_modelled(const recipe& r) { return reserved_gap_of(r) == reserved_gap::none; }

// Each refusal is its own require call with its message as a literal: a
// compile-time error prints the call, so the message shows.
constexpr void require_fit_modelled(const recipe& r) {
    switch (reserved_gap_of(r)) {
        case reserved_gap::none: return;
        case reserved_gap::zero:
            return require(false, "anatomy::max_batch: DeepSpeed ZeRO's reserved memory is not modelled (the replay "
                                  "reserves 10-16 % less than an H200 does); size a ZeRO run from its peak, leaving "
                                  "that headroom");
        case reserved_gap::quantized_checkpoint_in_trainer:
            return require(false, "anatomy::max_batch: the reserved memory of gradient checkpointing over a quantized "
                                  "base under transformers.Trainer is not modelled (an H200 reserved 5 % more than the "
                                  "replay for tinyllama QLoRA); size the run from its peak, leaving that headroom, or "
                                  "ask without grad_checkpointing");
        case reserved_gap::reentrant_checkpoint:
            return require(false, "anatomy::max_batch: the reentrant checkpoint's reserved memory is not modelled over "
                                  "a plain base (it was measured only over a quantized one); checkpoint "
                                  "non-reentrantly (recipe::checkpoint = checkpoint_impl::non_reentrant; in PyTorch "
                                  "gradient_checkpointing_kwargs={\"use_reentrant\": False}), or size the run from its "
                                  "peak, leaving headroom");
    }
}

// Whether `batch` runs under a cap of `budget` (set_per_process_memory_fraction)
// in a fresh process: the cuBLAS workspaces the replay does not place come
// out of the cap first, then the replayed allocator must never need a
// segment past it.
constexpr bool batch_fits(const estimator& e, shape s, std::uint64_t batch, bytes budget) {
    s.batch = batch;
    const bytes workspace = cublas_workspace_beside_replay();
    if (budget <= workspace) return false;
    if (std::is_constant_evaluated()) return !e.replay(s, budget - workspace).out_of_memory;
    try {
        return !e.replay(s, budget - workspace).out_of_memory;
    } catch (const overflow_error&) {
        return false;  // a batch whose bytes overflow 64 bits fits no device
    }
}

// The analytic peak of `batch` plus the workspaces, or that its bytes
// overflow 64 bits (a batch no device fits).
struct batch_peak {
    bytes need{};
    bool overflows = false;
};
constexpr batch_peak peak_of(const estimator& e, shape s, std::uint64_t batch) {
    s.batch = batch;
    if (std::is_constant_evaluated()) return {e.estimate(s).peak + cublas_workspace(e.step_recipe(), e.device())};
    try {
        return {e.estimate(s).peak + cublas_workspace(e.step_recipe(), e.device())};
    } catch (const overflow_error&) {
        return {{}, true};
    }
}

}  // namespace detail

// Whether step `s` runs under `budget`, the caching allocator's cap, in a
// fresh process: max_batch's own test, so that max_batch(...) fits and one
// more does not.
constexpr bool fits_under(const estimator& e, const shape& s, bytes budget) {
    detail::require_fit_modelled(e.step_recipe());
    return detail::batch_fits(e, s, s.batch, budget);
}
constexpr bool fits_under(const model_spec& m, const recipe& r, const shape& s, bytes budget,
                          const device_profile& device = devices::h200) {
    validate(r);
    validate(r, device);
    validate(s, m);
    return fits_under(estimator(m, r, device), s, budget);
}

// The largest batch that trains (or serves) under `budget`, the caching
// allocator's cap as torch.cuda.set_per_process_memory_fraction sets it, in a
// fresh process: the cuBLAS workspaces and the allocator's reserved segments
// included. 0 if even batch 1 does not fit. `per_batch.batch` is ignored.
//
// Each phase's memory is affine in the batch up to block rounding, so the
// analytic peaks of batches 1 and 2 predict the answer (when they differ:
// the optimizer step's peak does not grow with the batch); exact estimates
// around the prediction settle the largest batch whose peak fits, which
// bounds the answer from above (the allocator never needs less than the
// peak), and allocator replays under the cap, counting down from there,
// settle it.
constexpr std::uint64_t max_batch(const estimator& e, const shape& per_batch, bytes budget,
                                  std::uint64_t limit = max_batch_search_limit) {
    detail::require(limit > 0, "anatomy::max_batch: limit must be > 0");
    detail::require_fit_modelled(e.step_recipe());
    shape s = per_batch;
    s.batch = 1;
    const detail::batch_peak one = detail::peak_of(e, s, 1);
    if (one.overflows || one.need > budget) return 0;
    std::uint64_t guess = limit;
    std::uint64_t known = 1;  // a batch whose peak fits
    if (limit > 1) {
        const detail::batch_peak two = detail::peak_of(e, s, 2);
        if (two.overflows || two.need > budget) {
            guess = 1;
        } else {
            known = 2;
            // Without a slope (the peak the same at 1 and 2: the optimizer
            // step's, under checkpointing) the search steps up from 2, where
            // a guess at the limit made it step down through dozens of
            // estimates of absurd batches.
            guess = 2;
            if (two.need > one.need) {
                const std::uint64_t per_sample = (two.need - one.need).count;
                const std::uint64_t more = (budget - one.need).count / per_sample;
                guess = more >= limit - 1 ? limit : 1 + more;
            }
        }
    }
    const std::uint64_t peak_bound = detail::largest_batch_from(guess, known, limit, [&](std::uint64_t b) {
        const detail::batch_peak p = detail::peak_of(e, s, b);
        return !p.overflows && p.need <= budget;
    });
    // Under a cap the allocator's verdict need not fall with the batch (a
    // larger batch can split cached segments more luckily): the first batch
    // that fits, counting down from the bound, is the largest that does.
    std::uint64_t batch = peak_bound;
    while (batch > 0 && !detail::batch_fits(e, s, batch, budget)) --batch;
    return batch;
}
constexpr std::uint64_t max_batch(const model_spec& m, const recipe& r, const shape& per_batch, bytes budget,
                                  std::uint64_t limit = max_batch_search_limit,
                                  const device_profile& device = devices::h200) {
    detail::require(limit > 0, "anatomy::max_batch: limit must be > 0");
    validate(r);
    validate(r, device);
    shape s = per_batch;
    s.batch = 1;
    validate(s, m);
    return max_batch(estimator(m, r, device), per_batch, budget, limit);
}

// The largest batch on `device`: its memory less its CUDA context.
constexpr std::uint64_t max_batch(const model_spec& m, const recipe& r, const shape& per_batch,
                                  const device_profile& device) {
    return max_batch(m, r, per_batch, allocator_budget(device), max_batch_search_limit, device);
}

}  // namespace anatomy
