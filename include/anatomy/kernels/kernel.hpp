// What a kernel is to the activation model: the tensor it makes, what autograd
// keeps of it for backward, and what its backward allocates.
#pragma once

#include <anatomy/bytes.hpp>
#include <anatomy/detail/static_vector.hpp>
#include <anatomy/dtype.hpp>
#include <anatomy/error.hpp>
#include <anatomy/graph.hpp>

#include <cstdint>

namespace anatomy {

// A tensor a kernel reads: another kernel's output (its index in the list),
// or one of the stage's external inputs.
using tensor_slot = std::int16_t;
inline constexpr tensor_slot input_slot = -1;    // the stage's input
inline constexpr tensor_slot encoder_slot = -2;  // the encoder's output (cross-attention)
inline constexpr tensor_slot no_slot = -3;

// The scratch tensors of a kernel's backward: each its own allocation, as the
// kernel makes them, all alive until the backward returns. Kept apart, not
// summed: the caching allocator places a 32 MiB and a 128 MiB tensor where
// one 160 MiB block would not fit (traced: RMSNorm's weight gradient).
struct backward_scratch {
    bytes tensors[2];

    constexpr void add(bytes b) {
        if (b.count == 0) return;
        for (bytes& t : tensors)
            if (t.count == 0) {
                t = b;
                return;
            }
        throw error("anatomy::backward_scratch::add: internal error, a kernel's backward has more than 2 scratch tensors");
    }
};

// The gradients a kernel's backward makes for its op's parameters: one
// tensor each, as autograd returns them (AddmmBackward0 the weight's, then
// the bias's), so each takes its own block. Summed into one, the replay
// held up to 511 B less a parameter than PyTorch (tinybert: 15,872 B at
// the optimizer step, below the analytic walk's per-parameter blocks).
struct parameter_gradients {
    bytes weight;
    bytes bias;

    constexpr bool empty() const { return weight.count == 0 && bias.count == 0; }
};

inline constexpr std::size_t max_recompute_sources = 4;
inline constexpr std::size_t max_references = 6;

// No default member initializers (see static_vector): build with braces,
// which zero what is left out, and always give `in`. Its fields are ordered
// by alignment, the 8-byte ones first: 128 bytes with the bias's gradient
// apart (120 without; declaration order had padded them to 136). Aligned
// to 128, a power of two, a list indexes it by a shift: 500 llama-3-8b
// estimates took 3.1 % fewer instructions than at 136 bytes, and 1.3 % more
// at 120 (bench/estimate_instructions.sh). Pass it by reference: g++ notes
// the ABI of over-aligned arguments in every translation unit.
struct alignas(128) kernel {
    const char* what;  // the aten kernel, e.g. "addmm", "native_dropout"
    bytes out;         // its output; 0 for views, which alias in[0]
    bytes saved_extra;         // new tensors kept only for backward: masks, statistics
    bytes workspace;           // freed before the kernel returns
    parameter_gradients param_grads;  // its backward creates them; they persist
    backward_scratch backward_workspace;  // freed before its backward returns
    bytes weight_copy;         // autocast's half copy of the weight it multiplies by
    tensor_slot in[3];  // no_slot where unused
    // Tensors a Python name keeps alive until this kernel has run (its op's
    // module returns): the module's locals, and the argument its caller
    // holds (kernels/python_references.hpp).
    tensor_slot references[max_references];
    // Compiled (kernels/compiled.hpp): the tensors its backward recomputes
    // what it saved from, kept for backward in place of saves_inputs' bits.
    tensor_slot recomputes_from[max_recompute_sources];
    std::uint8_t op;   // index of the op it belongs to, in its stage
    dtype type;
    bool requires_grad;
    std::uint8_t saves_inputs;  // bit i: autograd keeps in[i] for backward
    std::uint8_t grad_inputs;   // bit i: backward allocates a gradient for in[i]
    // Its saved inputs outlive its backward, until the autograd graph dies
    // (bitsandbytes' MatMul8bitLt keeps x as ctx.tensors, not saved tensors).
    bool saved_with_graph;
    bool saves_output;
    // Its extra tensor (saved_extra, or its workspace when nothing records
    // it) is made before its output: SDPA builds the additive mask from a
    // boolean one before the kernel runs (traced: gemma-3-1b serving).
    bool extra_before_output;
    bool held;                 // lives until the step ends: model outputs, the KV cache
    std::uint8_t reference_count;
    bool returned;             // in the model's output (logits, the KV cache), kept or not by the loop
    // Lives until the base model's forward returns, before the head: masks
    // and rotary tables the model builds once for every layer.
    bool base_model_scoped;
    bool alias;                // a view of in[0]: no memory of its own
    // Its backward makes the parameter's gradient before the input's. Traced
    // on the H200: a linear without a bias (MmBackward0) makes the weight's
    // first; with one (AddmmBackward0) the input's, then the weight's and
    // the bias's.
    bool param_grads_first;
    // Its backward multiplies through cuBLAS: the first such backward of a
    // process makes autograd's cuBLAS workspace (caching_allocator::defer_workspace).
    bool cublas_backward;
    // Its forward multiplies through cuBLAS though nothing flows back (a
    // rotary embedding's frequencies); a kernel whose backward multiplies
    // does in its forward too. The first of a process makes the forward
    // thread's cuBLAS workspace.
    bool cublas_forward;
    bool saves_weight_copy;    // kept for backward (the input gradient needs it)
    bool caches_weight_copy;   // autocast's cast cache keeps it until the forward ends
    std::uint8_t recompute_count;
};
static_assert(sizeof(kernel) == 128, "anatomy::kernel: keep it within 128 bytes; order a new field by its alignment");

inline constexpr std::size_t max_kernels_per_stage = 256;
using kernel_list = detail::static_vector<kernel, max_kernels_per_stage>;

// The dtype and gradient status of a stage's external input. No default
// member initializers: a step plan leaves its unused runs unset (build with
// braces, which zero it).
struct stage_input_info {
    bytes size;
    dtype type;
    bool requires_grad;
};

struct expansion {
    // User-provided, so that a value-initialized expansion (a container's
    // emplace_back()) is not first zero-filled whole, all 256 kernels' slots.
    constexpr expansion() {}

    kernel_list kernels;
    tensor_slot op_output[max_ops_per_stage]{};  // the slot holding each op's result
};

}  // namespace anatomy
