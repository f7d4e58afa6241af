// The recipe: how a model is trained or served.
#pragma once

#include <anatomy/dtype.hpp>
#include <anatomy/error.hpp>
#include <anatomy/parts/names.hpp>

#include <array>
#include <cstdint>
#include <string_view>

namespace anatomy {

enum class autocast_mode { off, fp16, bf16 };

// `fp32`: the model is kept in half precision and the optimizer updates an
// fp32 master copy with fp32 gradients (Apex O2, DeepSpeed fp16/bf16).
enum class master_weights { none, fp32 };

enum class optimizer_kind {
    adamw,          // torch.optim.AdamW, foreach implementation (the CUDA default)
    adamw_fused,    // torch.optim.AdamW(fused=True)
    adamw_forloop,  // torch.optim.AdamW(foreach=False)
    sgd,
    sgd_momentum,
    adafactor,      // transformers.optimization.Adafactor: factored second moment, no first moment
    adam8bit,       // bitsandbytes.optim.AdamW8bit / Adam8bit, blockwise 8-bit state
    lion,           // bitsandbytes.optim.Lion (32-bit): one fp32 state, a fused update
    lion8bit,       // bitsandbytes.optim.Lion8bit
    paged_adamw8bit,  // bitsandbytes.optim.PagedAdamW8bit: AdamW8bit's state in CUDA managed memory
    none,           // inference: no gradients, no state
};

enum class attention_kernel { sdpa, eager };

// torch.utils.checkpoint's implementation under gradient checkpointing. The
// non-reentrant one stops a layer's recompute once it has saved again what
// the forward saved; the reentrant one reruns the whole layer. `as_enabled`
// is what the code that turns checkpointing on picks: transformers'
// gradient_checkpointing_enable() passes use_reentrant=False, while with a
// quantized base peft's prepare_model_for_kbit_training passes no
// use_reentrant and PyTorch 2.11 takes the reentrant one (it warns so),
// unless transformers.Trainer turns checkpointing on again itself, which it
// does with gradient_checkpointing_enable()'s default (the sources read on
// an H200 with transformers 5.17 and peft 0.21; the Trainer's calls were
// counted there too: use_reentrant=False, QLoRA or not).
enum class checkpoint_impl { as_enabled, non_reentrant, reentrant };

// How the training step is written.
enum class training_loop {
    plain,       // out = model(**batch); out.loss.backward(): the outputs (logits, the KV cache) live through backward
    loss_only,   // model(**batch).loss.backward(): the outputs die when forward returns, unless autograd saved them
    // transformers.Trainer (5.17): compute_loss keeps the loss only, as
    // loss_only; config.use_cache becomes TrainingArguments.use_cache (False):
    // no DynamicCache. Its default optimizer is AdamW fused (set in the recipe).
    hf_trainer,
};

// How ranks share the work; the batch is per rank.
// `ddp`: torch.nn.parallel.DistributedDataParallel, a full replica per rank
// plus its gradient buckets.
// `fsdp`: FSDP2, one fully_shard per transformer block plus the root; every
// parameter, gradient and optimizer state is sharded along dim 0, and blocks
// are all-gathered for their forward and backward.
// `zero1`..`zero3`: DeepSpeed ZeRO. Stage 1 partitions the optimizer state
// (with the fp32 master copy), stage 2 the gradients too, stage 3 the
// parameters too, gathered block by block as FSDP does. Gradients stay in the
// parameters' dtype; the optimizer step converts its partition to fp32.
enum class parallelism { none, ddp, fsdp, zero1, zero2, zero3 };

// DeepSpeed's offload_optimizer / offload_param: the optimizer state and
// master copy (and with `params`, the partitioned parameters too) leave the
// GPU for host memory or an NVMe drive, and the optimizer step runs on the CPU.
enum class offload_target { none, optimizer, params };
enum class offload_device { cpu, nvme };

// A quantized base (bitsandbytes, as transformers' BitsAndBytesConfig loads
// it): every linear but the head's stored in 4 bits (NF4 or FP4, double
// quantization, bf16 compute), dequantized per matmul; or in 8 bits with a
// scale per output row (LLM.int8, load_in_8bit, outlier threshold 6.0),
// multiplied as int8.
enum class quantization { none, nf4, fp4, int8 };

constexpr bool is_4bit(quantization q) { return q == quantization::nf4 || q == quantization::fp4; }

// peft creates LoRA adapters in fp32 and keeps them there over half base
// weights (get_peft_model's autocast_adapter_dtype=True).
inline constexpr dtype lora_adapter_dtype = dtype::fp32;

struct lora_config {
    std::uint64_t rank = 0;  // 0: no LoRA
    // Module names as peft matches them: a module is adapted when its path is
    // a name here or ends with "." + a name here (module_path::matches).
    std::array<std::string_view, 8> targets{};
    double dropout = 0.0;  // lora_dropout

    constexpr bool enabled() const { return rank > 0; }
    constexpr std::size_t target_count() const {
        std::size_t n = 0;
        for (const std::string_view& t : targets) n += t.empty() ? 0 : 1;
        return n;
    }
    constexpr bool targets_module(const module_path& module) const {
        for (const std::string_view& t : targets)
            if (module.matches(t)) return true;
        return false;
    }
};

struct recipe {
    dtype weights = dtype::fp32;
    autocast_mode autocast = autocast_mode::off;
    master_weights master = master_weights::none;
    optimizer_kind optimizer = optimizer_kind::adamw;
    std::uint64_t grad_accum = 1;
    bool grad_checkpointing = false;
    checkpoint_impl checkpoint = checkpoint_impl::as_enabled;
    attention_kernel attention = attention_kernel::sdpa;
    training_loop loop = training_loop::plain;
    lora_config lora{};
    // A 4-bit base. Training it is QLoRA: peft's prepare_model_for_kbit_training
    // casts the unquantized parameters to fp32, so `weights` is fp32 then.
    quantization quantize = quantization::none;
    dtype quant_compute = dtype::bf16;  // bnb_4bit_compute_dtype (LLM.int8 computes in the input's dtype)
    bool inference = false;
    bool kv_cache = false;  // inference with use_cache=True
    // torch.compile(model), default mode (inductor): fused kernels, and
    // AOTAutograd's partitioner decides what backward keeps.
    bool compile = false;
    parallelism parallel = parallelism::none;
    std::uint64_t world_size = 1;
    bool ddp_bucket_view = false;  // DDP(gradient_as_bucket_view=True): gradients live in the buckets
    bool fsdp_reshard_after_forward = true;
    // FSDP2 MixedPrecisionPolicy(param_dtype=..., reduce_dtype=fp32): the
    // gathered parameters, and so the compute, in this dtype; fp32 (the
    // default) leaves them in the weights' dtype.
    dtype fsdp_param_dtype = dtype::fp32;
    offload_target offload = offload_target::none;
    offload_device offload_to = offload_device::cpu;
    // DeepSpeed ZeRO's buffer sizes, in elements, with its config's defaults:
    // reduce_bucket_size (ZeRO-3 keeps an IPG bucket of it from the start),
    // stage3_max_live_parameters (gathered parameters kept on the GPU when
    // parameters are offloaded) and sub_group_size (the optimizer steps a
    // sub-group at a time).
    std::uint64_t zero_reduce_bucket = 500'000'000;
    std::uint64_t zero_max_live_parameters = 1'000'000'000;
    std::uint64_t zero_sub_group = 1'000'000'000;
};

// Whether the step's output object lives through backward.
constexpr bool keeps_outputs(const recipe& r) { return r.inference || r.loop == training_loop::plain; }

// Whether layers are checkpointed reentrantly, so that a layer's recompute
// reruns all of it (checkpoint_impl).
constexpr bool reentrant_checkpoint(const recipe& r) {
    if (!r.grad_checkpointing) return false;
    return r.checkpoint == checkpoint_impl::reentrant ||
           (r.checkpoint == checkpoint_impl::as_enabled && r.quantize != quantization::none &&
            r.loop != training_loop::hf_trainer);
}

constexpr bool is_zero(parallelism p) {
    return p == parallelism::zero1 || p == parallelism::zero2 || p == parallelism::zero3;
}

// The dtype a step computes in: FSDP2's param_dtype when it casts.
constexpr dtype compute_dtype(const recipe& r) {
    return r.parallel == parallelism::fsdp && r.fsdp_param_dtype != dtype::fp32 ? r.fsdp_param_dtype : r.weights;
}

// The recipe a step's kernels run with: its weights in the compute dtype.
constexpr recipe compute_recipe(const recipe& r) {
    recipe compute = r;
    compute.weights = compute_dtype(r);
    return compute;
}

constexpr void validate(const recipe& r) {
    detail::require(r.weights == dtype::fp32 || r.weights == dtype::bf16 || r.weights == dtype::fp16,
                    "anatomy::validate(recipe): weights must be fp32, bf16 or fp16");
    detail::require(r.master == master_weights::none || is_half(r.weights),
                    "anatomy::validate(recipe): an fp32 master copy needs bf16 or fp16 weights");
    detail::require(!r.inference || r.optimizer == optimizer_kind::none,
                    "anatomy::validate(recipe): inference takes optimizer none");
    detail::require(r.inference || r.optimizer != optimizer_kind::none,
                    "anatomy::validate(recipe): training needs an optimizer; use inference for a forward pass only");
    detail::require(!r.kv_cache || r.inference, "anatomy::validate(recipe): kv_cache needs inference");
    detail::require(!r.inference || r.loop == training_loop::plain,
                    "anatomy::validate(recipe): a training loop (loss_only, hf_trainer) needs training; drop inference");
    detail::require(r.grad_accum >= 1, "anatomy::validate(recipe): grad_accum must be >= 1");
    detail::require(!r.inference || (r.grad_accum == 1 && !r.grad_checkpointing),
                    "anatomy::validate(recipe): inference takes no grad_accum or grad_checkpointing");
    detail::require(r.grad_checkpointing || r.checkpoint == checkpoint_impl::as_enabled,
                    "anatomy::validate(recipe): checkpoint picks how gradient checkpointing recomputes; set "
                    "grad_checkpointing = true, or leave checkpoint as_enabled");
    detail::require(!r.lora.enabled() || r.lora.target_count() > 0,
                    "anatomy::validate(recipe): LoRA needs at least one target module");
    detail::require(r.lora.enabled() || r.lora.target_count() == 0,
                    "anatomy::validate(recipe): LoRA targets need a rank > 0");
    detail::require(r.quantize == quantization::none || r.inference || r.lora.enabled(),
                    "anatomy::validate(recipe): quantized weights take no gradient; train a quantized base with LoRA (QLoRA)");
    detail::require(r.quantize == quantization::none || r.inference || r.weights == dtype::fp32,
                    "anatomy::validate(recipe): peft's prepare_model_for_kbit_training keeps the unquantized "
                    "parameters in fp32; pass weights fp32");
    detail::require(r.quantize == quantization::none || (r.parallel == parallelism::none && r.autocast == autocast_mode::off),
                    "anatomy::validate(recipe): a quantized base is modelled on one GPU without autocast");
    detail::require(is_half(r.quant_compute), "anatomy::validate(recipe): quant_compute must be bf16 or fp16");
    detail::require(r.world_size >= 1, "anatomy::validate(recipe): world_size must be >= 1");
    detail::require(r.world_size == 1 || r.parallel != parallelism::none,
                    "anatomy::validate(recipe): world_size > 1 needs a parallelism (ddp)");
    detail::require(r.parallel == parallelism::none || !r.inference,
                    "anatomy::validate(recipe): ddp trains; serve with parallelism none");
    detail::require(!r.ddp_bucket_view || r.parallel == parallelism::ddp,
                    "anatomy::validate(recipe): ddp_bucket_view needs parallelism ddp");
    detail::require(r.fsdp_reshard_after_forward || r.parallel == parallelism::fsdp,
                    "anatomy::validate(recipe): fsdp_reshard_after_forward = false needs parallelism fsdp");
    detail::require(r.fsdp_param_dtype == dtype::fp32 || (r.parallel == parallelism::fsdp && is_half(r.fsdp_param_dtype)),
                    "anatomy::validate(recipe): fsdp_param_dtype bf16 or fp16 needs parallelism fsdp");
    detail::require(r.parallel != parallelism::fsdp || (!r.lora.enabled() && r.master == master_weights::none &&
                                                        r.autocast == autocast_mode::off),
                    "anatomy::validate(recipe): fsdp is modelled without LoRA, master weights or autocast; use "
                    "fsdp_param_dtype for mixed precision");
    detail::require(!is_zero(r.parallel) || (!r.lora.enabled() && r.autocast == autocast_mode::off),
                    "anatomy::validate(recipe): ZeRO is modelled without LoRA or autocast; use half weights with "
                    "master fp32, as DeepSpeed's fp16 and bf16 modes run");
    detail::require(r.offload == offload_target::none || is_zero(r.parallel),
                    "anatomy::validate(recipe): offload needs a ZeRO stage (zero1, zero2 or zero3)");
    detail::require(r.offload != offload_target::params || r.parallel == parallelism::zero3,
                    "anatomy::validate(recipe): offloading parameters needs zero3");
    detail::require(!r.compile || (r.parallel == parallelism::none && r.quantize == quantization::none && !r.lora.enabled()),
                    "anatomy::validate(recipe): torch.compile is modelled on one GPU without LoRA or a quantized "
                    "base; drop compile, or parallel, lora and quantize");
    detail::require(r.offload_to == offload_device::cpu || r.offload != offload_target::none,
                    "anatomy::validate(recipe): an NVMe offload device needs offload optimizer or params");
}

}  // namespace anatomy
