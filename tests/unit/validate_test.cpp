// anatomy-validate's host logic, driven by a model of the CUDA driver: every
// cudaMalloc maps whole 2 MiB pages of its own (driver.hpp).
#include "../../examples/validate/probe.hpp"

#include <anatomy/anatomy.hpp>
#include <anatomy/llmc.hpp>
#include <anatomy/peak_set.hpp>

#include <catch2/catch.hpp>

#include <map>
#include <utility>

namespace {

using namespace anatomy;

class simulated_device {
public:
    explicit simulated_device(bytes free) : free_(free) {}
    bytes free_memory() const { return free_; }
    void* allocate(bytes size) {
        ++requests;
        cuda_driver trial = driver_;
        const bytes mapped = trial.allocate(size);
        if (mapped > free_) return nullptr;
        driver_ = trial;
        free_ -= mapped;
        void* p = reinterpret_cast<void*>(next_++);
        live_[p] = {mapped, size < cuda_pool_limit};
        small_live_ += size < cuda_pool_limit ? 1 : 0;
        return p;
    }
    // Sets are freed whole: once no small buffer is left, the pool is empty again.
    void release(void* p) {
        REQUIRE(live_.count(p) == 1);
        free_ += live_[p].first;
        small_live_ -= live_[p].second ? 1 : 0;
        live_.erase(p);
        if (small_live_ == 0) driver_ = cuda_driver{};
    }
    std::size_t live() const { return live_.size(); }
    std::uint64_t requests = 0;

private:
    bytes free_;
    cuda_driver driver_;
    std::uint64_t small_live_ = 0;
    std::uintptr_t next_ = 0x1000;
    std::map<void*, std::pair<bytes, bool>> live_;
};
static_assert(harness::AllocatingDevice<simulated_device>);

constexpr recipe fp32_adamw{};
constexpr shape gpt2_shape{.batch = 8, .seq = 1024};

}  // namespace

TEST_CASE("peak set: model state tensor by tensor, the step's bytes by ledger entry") {
    const planned_step step = plan_peak_set(presets::gpt2, fp32_adamw, gpt2_shape);
    const memory_estimate& e = step.estimate;
    bytes weights{}, optimizer{}, activations{};
    std::uint64_t weight_buffers = 0;
    for (const planned_buffer& b : step.buffers) {
        if (b.entry == "weights") {
            weights += b.total();
            weight_buffers += b.copies;
        }
        if (b.entry == "optimizer_state") optimizer += b.total();
        if (b.entry == "activations") activations += b.total();
    }
    CHECK(weights == e.ledger.weights);
    CHECK(optimizer == e.ledger.optimizer_state);
    CHECK(activations == e.ledger.activations);
    // GPT-2: wte, wpe, 12 tensors per layer, ln_f weight and bias.
    CHECK(weight_buffers == 2 + 12 * 12 + 2);
    CHECK(step.buffers[0].entry == "weights");
}

TEST_CASE("allocate_set: predicted and observed device bytes agree, and everything is freed") {
    simulated_device device(140 * GiB);
    const peak_set set = plan_peak_set(presets::gpt2, fp32_adamw, gpt2_shape).buffers;
    const harness::set_report r = harness::allocate_set(device, set);
    CHECK(r.complete());
    CHECK(r.predicted_equals_observed());
    CHECK(r.predicted() == device_footprint(set));
    CHECK(r.free_after_release == r.free_before);
    CHECK(device.live() == 0);
    // gpt2's large tensors round up to 2 MiB pages; its ~300 small ones share pool pages.
    CHECK(r.predicted() > plan_peak_set(presets::gpt2, fp32_adamw, gpt2_shape).estimate.peak);
    CHECK(r.predicted() < plan_peak_set(presets::gpt2, fp32_adamw, gpt2_shape).estimate.peak + 400 * MiB);
}

TEST_CASE("allocate_set: a set that does not fit stops at the buffer that failed and frees the rest") {
    simulated_device device(4 * GiB);
    const peak_set set = plan_peak_set(presets::gpt2, fp32_adamw, gpt2_shape).buffers;
    const harness::set_report r = harness::allocate_set(device, set);
    CHECK_FALSE(r.complete());
    CHECK(r.out_of_memory);
    CHECK(r.failed_buffer == "activations: alive at the peak");
    CHECK(r.free_after_release == 4 * GiB);
    CHECK(device.live() == 0);
}

TEST_CASE("allocate_set: never asks for more than the memory that was free") {
    simulated_device device(1 * GiB);
    peak_set set;
    set.push_back({"activations", "too large", 2 * GiB, 1});
    const harness::set_report r = harness::allocate_set(device, set);
    CHECK(r.out_of_memory);
    CHECK(device.requests == 0);
}

TEST_CASE("fit probe: the library's largest batch allocates and the next does not") {
    const shape per_batch{.seq = 1024};
    for (const bytes budget : {16 * GiB, 40 * GiB}) {
        simulated_device device(budget + 3 * GiB + 5 * MiB);
        const std::uint64_t best = max_batch_of_peak_set(presets::gpt2, fp32_adamw, per_batch, budget);
        REQUIRE(best > 0);
        const harness::fit_report fit = harness::fit_probe(device, budget, best, [&](std::uint64_t b) {
            shape s = per_batch;
            s.batch = b;
            return plan_peak_set(presets::gpt2, fp32_adamw, s).buffers;
        });
        CHECK(fit.ballast == 3 * GiB + 4 * MiB);  // rounded down to whole pages
        CHECK(fit.proven());
        CHECK(device.live() == 0);
    }
}

TEST_CASE("fit probe: a wrong answer is caught") {
    const shape per_batch{.seq = 1024};
    simulated_device device(16 * GiB);
    const std::uint64_t best = max_batch_of_peak_set(presets::gpt2, fp32_adamw, per_batch, 16 * GiB);
    const harness::fit_report fit = harness::fit_probe(device, 16 * GiB, best - 1, [&](std::uint64_t b) {
        shape s = per_batch;
        s.batch = b;
        return plan_peak_set(presets::gpt2, fp32_adamw, s).buffers;
    });
    CHECK_FALSE(fit.proven());  // best - 1 + 1 = best still fits
}

TEST_CASE("fit probe: a budget above the free memory is refused") {
    simulated_device device(8 * GiB);
    CHECK_THROWS_WITH(harness::fit_probe(device, 9 * GiB, 1, [](std::uint64_t) { return peak_set{}; }),
                      Catch::Contains("anatomy-validate: --budget is larger than the free device memory"));
}

TEST_CASE("llm.c: the largest batch fits its budget and the next does not") {
    const llmc::gpt2_config d12 = *llmc::from_descriptor("d12");
    for (const llmc::run_config run : {llmc::run_config{}, llmc::run_config{.recompute = 0, .cudnn = true}}) {
        const bytes budget = 40 * GiB;
        const std::uint64_t best = llmc::max_batch(d12, run, 1024, budget);
        REQUIRE(best > 0);
        CHECK(llmc::device_footprint(llmc::peak_allocations(d12, run, best, 1024)) <= budget);
        CHECK(llmc::device_footprint(llmc::peak_allocations(d12, run, best + 1, 1024)) > budget);
    }
}

TEST_CASE("fit probe: an answer of 0 is proven by batch 1 not fitting") {
    constexpr recipe mixed{.weights = dtype::bf16, .master = master_weights::fp32, .grad_checkpointing = true};
    const shape per_batch{.seq = 2048};
    simulated_device device(24 * GiB);
    // The optimizer step alone (weights, fp32 master, gradients, state and scratch) is over 24 GiB.
    REQUIRE(max_batch_of_peak_set(presets::llama_3_2_1b, mixed, per_batch, 24 * GiB) == 0);
    const harness::fit_report fit = harness::fit_probe(device, 24 * GiB, 0, [&](std::uint64_t b) {
        shape s = per_batch;
        s.batch = b;
        return plan_peak_set(presets::llama_3_2_1b, mixed, s).buffers;
    });
    CHECK(fit.fits.planned == 0);
    CHECK(fit.proven());
}
