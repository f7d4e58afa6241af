// Static tests: this file passes by compiling. Each line is a claim the
// library proves in constant evaluation, on the same code path as run time.
#include <anatomy/anatomy.hpp>
#include <anatomy/entries.hpp>
#include <anatomy/llmc.hpp>
#include <anatomy/peak_set.hpp>

namespace {

using namespace anatomy;

static_assert(80 * GiB == 81920 * MiB);
static_assert(parse_bytes("1.5GiB") == 1536 * MiB);
static_assert(parse_bytes("80GB") == 80 * GB);

static_assert(parameter_count(lower(presets::bert_large)) == 335143938);
static_assert(parameter_count(lower(presets::llama_3_8b)) == 8030261248);
static_assert(parameter_count(lower(presets::t5_small)) == 60506624);
static_assert(presets::find("qwen2.5-0.5b").has_value());
// A preset is a model_spec where one is taken, and preset() reads its fields.
static_assert(presets::llama_3_8b().layers == 32 && presets::llama_3_8b().kv_head_count() == 8);
static_assert([] { const model_spec m = presets::gemma_3_1b; return m.model_type == "gemma3_text" && m.hidden == 1152; }());
static_assert(presets::find("llama-3-8b")->embedding.vocab == 128256);
static_assert(!presets::find("gpt5").has_value());

constexpr shape bert_shape{.batch = 4, .seq = 512};
constexpr memory_estimate fp32_adamw = estimate(presets::bert_large, recipe{}, bert_shape);
static_assert(total(fp32_adamw.model_state) == fp32_adamw.params * (16 * B));
static_assert(total(fp32_adamw.ledger) == fp32_adamw.peak);
static_assert(fp32_adamw.ledger.activations > 3 * GiB);  // BERT-large keeps ~3 GiB for backward at 4 x 512

constexpr memory_estimate mixed = estimate(presets::bert_large, {.weights = dtype::fp16, .master = master_weights::fp32},
                                           bert_shape);
static_assert(total(mixed.model_state) == mixed.params * (18 * B));

constexpr memory_estimate llama = estimate(presets::llama_3_8b, {.weights = dtype::bf16}, {.batch = 1, .seq = 4096});
static_assert(fits_budget<llama.peak, 80 * GiB>());
static_assert(!fits(llama.peak, 16 * GiB));

// A training step, activations included: llama-3-8b, bf16 + AdamW, gradient
// checkpointing, 4 x 4096 tokens, fits an 80 GiB card.
constexpr memory_estimate checkpointed =
    estimate(presets::llama_3_8b, {.weights = dtype::bf16, .grad_checkpointing = true}, {.batch = 4, .seq = 4096});
static_assert(fits_budget<checkpointed.peak, 80 * GiB>());
// Without checkpointing the same batch does not.
static_assert(!fits(estimate(presets::llama_3_8b, {.weights = dtype::bf16}, {.batch = 4, .seq = 4096}).peak, 80 * GiB));

static_assert(max_batch(presets::llama_3_8b, {.weights = dtype::bf16}, {.seq = 4096}, 16 * GiB) == 0);
// The allocator replay runs in constant evaluation too (a small model keeps
// it under the compilers' default step limits).
static_assert(max_batch(presets::tinybert, {}, {.seq = 64}, 1 * GiB, 4) == 4);
static_assert(replay_allocator(presets::tinybert, {}, {.batch = 2, .seq = 64}).peak_reserved >=
              estimate(presets::tinybert, {}, {.batch = 2, .seq = 64}).peak);
// An estimator lowers the model once for many shapes, here as at run time.
static_assert(estimator(presets::tinybert, {}).estimate({.batch = 2, .seq = 64}).peak ==
              estimate(presets::tinybert, {}, {.batch = 2, .seq = 64}).peak);
static_assert(detail::largest_batch_from(3, 0, 1000, [](std::uint64_t b) { return b <= 700; }) == 700);
// The allocator's blocks and tapes are growing_vectors: appends and
// removals through several growths agree with std::vector's, a copy keeps
// its own elements, and a move takes them.
static_assert([] {
    detail::growing_vector<int> grown;
    std::vector<int> plain;
    for (int i = 0; i < 40; ++i) {
        grown.push_back(i);
        plain.push_back(i);
        if (i % 3 == 2) {
            grown.pop_back();
            plain.pop_back();
        }
    }
    grown.extend(2);
    grown[grown.size() - 1] = grown[grown.size() - 2] = -1;
    plain.insert(plain.end(), 2, -1);
    detail::growing_vector<int> copy = grown;
    copy[0] = 99;
    copy.push_back(7);
    if (grown.size() != plain.size() || grown[0] != plain[0] || copy.size() != plain.size() + 1) return false;
    detail::growing_vector<int> moved = static_cast<detail::growing_vector<int>&&>(copy);
    if (!copy.empty() || moved.size() != plain.size() + 1 || moved[0] != 99 || moved.back() != 7) return false;
    copy = moved;
    copy.push_back(8);
    if (moved.size() != plain.size() + 1 || copy.size() != plain.size() + 2) return false;
    for (std::size_t i = 0; i < plain.size(); ++i)
        if (grown[i] != plain[i]) return false;
    return true;
}());

// The CUDA driver as measured on an H200: whole 2 MiB pages from 2 MiB up,
// 512-byte slots of shared pool pages below.
static_assert([] {
    cuda_driver driver;
    return driver.allocate(2 * MiB + 1 * B) == 4 * MiB && driver.allocate(1 * KiB) == 2 * MiB &&
           driver.allocate(1 * KiB) == 0 * B && driver.allocate(0 * B) == 0 * B;
}());

// llm.c: GPT-2 124M (d12) at 4 x 1024, as train_gpt2.cu allocates it.
constexpr llmc::gpt2_config d12 = *llmc::from_descriptor("d12");
static_assert(llmc::parameter_count(d12) == 124475904);
static_assert(llmc::printed_mib(llmc::allocations(d12, {}, 4, 1024)[3].size) == 2475);  // "allocating 2475 MiB for activations"
static_assert(llmc::bytes_per_sequence(d12, {}, 4, 1024) / MiB == 618);              // "memory per sequence: 618 MiB"
static_assert(fits_budget<llmc::device_footprint(llmc::peak_allocations(d12, {}, 4, 1024)), 16 * GiB>());
static_assert(llmc::max_batch(d12, {}, 1024, 80 * GiB) == 129);
static_assert(!llmc::from_descriptor("gpt3:c5140"));  // llm.c's own table fails its head-size assert

// The peak set of a small model, each tensor a cudaMalloc.
static_assert(device_footprint(plan_peak_set(presets::tinybert, {}, {.batch = 2, .seq = 64}).buffers) >=
              estimate(presets::tinybert, {}, {.batch = 2, .seq = 64}).peak);

// Data parallelism, per rank: DDP adds a bucket copy of every gradient; FSDP2
// over 4 ranks keeps a quarter of each tensor's rows (GPT-2's are all
// multiples of 4 but wte's 50257) and gathers the root group and one block.
constexpr recipe ddp{.parallel = parallelism::ddp, .world_size = 2};
static_assert(estimate(presets::gpt2, ddp, {.batch = 1, .seq = 64}).model_state.communication ==
              estimate(presets::gpt2, {}, {.batch = 1, .seq = 64}).model_state.gradients);
constexpr recipe fsdp{.parallel = parallelism::fsdp, .world_size = 4};
constexpr memory_estimate sharded = estimate(presets::gpt2, fsdp, {.batch = 1, .seq = 64});
static_assert(sharded.model_state.weights == ((124439808 - 50257 * 768) / 4 + 12565 * 768) * (4 * B));  // wte: 12565 rows
static_assert(sharded.model_state.optimizer_state == 2 * sharded.model_state.weights);
static_assert(sharded.ledger.gathered_weights > 0 * B);

// ZeRO over 2 ranks, bf16 with an fp32 master copy and Adam: the paper's
// 2 + 2 + 12 B/param, each stage partitioning one more part (every GPT-2
// tensor has an even element count, so the halves are exact). DeepSpeed's
// own buffers (`communication`) come beside them.
constexpr std::uint64_t psi = 124439808;
constexpr recipe bf16_master{.weights = dtype::bf16, .master = master_weights::fp32};
constexpr bytes state_per_rank(parallelism stage, offload_target offload = offload_target::none) {
    recipe r = bf16_master;
    r.parallel = stage;
    r.world_size = 2;
    r.offload = offload;
    const memory_estimate e = estimate(presets::gpt2, r, {.batch = 1, .seq = 64});
    return total(e.model_state) - e.model_state.communication;
}
// ZeRO-3 keeps an IPG bucket of reduce_bucket_size (5e8) bf16 elements and,
// on one rank without optimizer offload, a bf16 gradient partition beside
// autograd's gradients (on several, the partition is the rank's shard).
constexpr bytes zero3_buffers(std::uint64_t world, offload_target offload) {
    recipe r = bf16_master;
    r.parallel = parallelism::zero3;
    r.world_size = world;
    r.offload = offload;
    return estimate(presets::gpt2, r, {.batch = 1, .seq = 64}).model_state.communication;
}
static_assert(zero3_buffers(1, offload_target::none) == 1'000'000'000 * B + block_size(psi * (2 * B)));
static_assert(zero3_buffers(1, offload_target::optimizer) == 1'000'000'000 * B);
static_assert(zero3_buffers(2, offload_target::none) == 1'000'000'000 * B);
static_assert(state_per_rank(parallelism::zero1) == psi * (2 + 2 + 12 / 2) * B);
static_assert(state_per_rank(parallelism::zero2) == psi * (2 + (2 + 12) / 2) * B);
static_assert(state_per_rank(parallelism::zero3) == psi * (16 / 2) * B);
static_assert(state_per_rank(parallelism::zero3, offload_target::params) == psi * (2 / 2) * B);  // gradients only
static_assert(estimate(presets::gpt2, {.weights = dtype::bf16, .master = master_weights::fp32,
                                       .parallel = parallelism::zero2, .world_size = 2,
                                       .offload = offload_target::optimizer},
                       {.batch = 1, .seq = 64}).host == psi * (12 / 2) * B);

static_assert(name_of(optimizer_kind::adamw_fused) == "adamw-fused");
static_assert(parse_name<attention_kernel>("eager") == attention_kernel::eager);

}  // namespace
