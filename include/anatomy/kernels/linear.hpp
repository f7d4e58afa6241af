// Kernels of the parts that own weight matrices: embeddings, linears (and
// their LoRA branches), ViT's patch embedding.
#pragma once

#include <anatomy/kernels/builder.hpp>
#include <anatomy/kernels/pointwise.hpp>

namespace anatomy::detail {

// torch.compile traces the whole model as one graph, unless gradient
// checkpointing breaks it at every checkpointed layer.
constexpr bool one_compiled_graph(const kernel_builder& b) { return b.r.compile && !b.r.grad_checkpointing; }

// embedding_dense_backward (PyTorch 2.11, EmbeddingBackwardKernel.cu):
// above 3,072 indices it sorts them and sums each index's rows in partial
// segments of at most 10 rows, one row of partial sums per segment, in the
// gradient's accumulate type (fp32 for fp16/bf16), after the table gradient
// and freed before it returns: (n / 10 + min(n, entries)) rows (seven
// H200 traces requested exactly these, 74 to 485 MB). Its int64 index
// buffers (four of n words, three of at most n + n / 10) are left out: each
// takes the small pool below 131,072 indices. n is the walk's rows of the
// op: a position table whose ids broadcast over the batch (GPT-2's, BERT's
// [1, seq]) gets batch x seq, more than the H200's seq. Compiled, inductor
// runs its own decomposition (an index_put into the table), not this kernel.
constexpr bytes embedding_partial_sums(const kernel_builder& b, const op& o) {
    const std::uint64_t indices = b.rows(o.rows);
    if (indices <= 3072 || b.r.compile) return bytes{};
    const std::uint64_t segments = indices / 10 + (indices < o.weight.rows ? indices : o.weight.rows);
    const dtype grad = b.param_type();
    return b.tensor(checked_mul(segments, o.out_width), is_half(grad) ? dtype::fp32 : grad);
}

constexpr tensor_slot expand_embedding(kernel_builder& b, const op& o) {
    const dtype t = b.param_type();  // nn.Embedding is not on autocast's lists
    kernel k = b.make("embedding", b.tensor(b.elements(o.rows, o.out_width), t), t, {no_slot, no_slot, no_slot});
    k.requires_grad = b.trainable(o);
    if (k.requires_grad) {
        // embedding_dense_backward builds a dense table gradient. When a
        // later op shares the table, its gradient exists already and this
        // one is added to it, then freed.
        // Compiled as one graph, the shared table's gradient is summed in the
        // graph and made here, last (traced: llama-3.2-1b's tied head adds
        // nothing at the head's backward). Checkpointed layers break the
        // graph, and the head makes its own (traced: +501 MiB there).
        const bytes table = o.weight.numel() * size_of(b.grad_type());
        if (one_compiled_graph(b) && o.weight_shared_later) {
            k.param_grads.weight = table;
            k.backward_workspace.add(table);
        } else if (o.tied || o.weight_shared_later) {
            k.backward_workspace.add(table);
        } else {
            k.param_grads.weight = table;
        }
        k.backward_workspace.add(embedding_partial_sums(b, o));
        // The table first, then the partial sums (a gradient summed into an
        // earlier micro-step's is made first too, and freed last).
        k.param_grads_first = true;
    }
    return b.push(k);
}

// peft's LoRA branch: y + B(A(dropout(x))) * scaling, adapters in fp32
// (peft casts x to the adapter dtype first).
constexpr tensor_slot lora_branch(kernel_builder& b, const op& o, tensor_slot x, tensor_slot base) {
    const dtype t = lora_adapter_dtype;
    const std::uint64_t rank = b.r.lora.rank;
    tensor_slot in = b.cast(x, b.elements(o.rows, o.in_width), t);
    in = dropout_kernel(b, in, b.elements(o.rows, o.in_width), b.r.lora.dropout);
    const bool adapters_train = b.grad_enabled();
    kernel a = b.make("lora_A", b.tensor(b.elements(o.rows, rank), t), t, {in, no_slot, no_slot});
    a.requires_grad = adapters_train || b.grad_of(in);
    a.saves_inputs = adapters_train ? 1 : 0;
    a.grad_inputs = b.grad_of(in) ? 1 : 0;
    if (adapters_train) a.param_grads.weight = b.tensor(detail::checked_mul(rank, o.in_width), t);
    // nn.Linear without a bias; under autocast its weight is cast, an order not traced.
    a.param_grads_first = !b.autocast();
    a.cublas_backward = true;
    const tensor_slot a_out = b.push(a);
    kernel up = b.make("lora_B", b.tensor(b.elements(o.rows, o.out_width), t), t, {a_out, no_slot, no_slot});
    up.requires_grad = a.requires_grad;
    up.saves_inputs = adapters_train ? 1 : 0;
    up.grad_inputs = a.requires_grad ? 1 : 0;
    if (adapters_train) up.param_grads.weight = b.tensor(detail::checked_mul(o.out_width, rank), t);
    up.param_grads_first = a.param_grads_first;
    up.cublas_backward = true;
    const tensor_slot b_out = b.push(up);
    const std::uint64_t out = b.elements(o.rows, o.out_width);
    const tensor_slot scaled = b.pointwise("mul", b_out, out);
    const tensor_slot sum = b.binary("add", base, scaled, out, 0);
    return b.cast(sum, out, b.type_of(base));  // peft returns the base layer's dtype
}

// bitsandbytes' Linear4bit: x.to(compute dtype), gemm_4bit with the weight
// dequantized for the call (and again in backward), the output cast back to
// x's dtype. It keeps nothing for backward: the base is frozen (traced: the
// dequantized weight and two fp32 absmax are the transients).
constexpr tensor_slot linear_4bit(kernel_builder& b, const op& o, tensor_slot x) {
    const std::uint64_t n = b.rows(o.rows);
    const dtype t = b.r.quant_compute;
    const tensor_slot x_c = b.cast(x, checked_mul(n, o.in_width), t);
    const bytes dequantized = b.tensor(o.weight.numel(), t) + 2 * b.tensor(ceil_div(o.weight.numel(), 64), dtype::fp32);
    kernel k = b.make("gemm_4bit", b.tensor(checked_mul(n, o.out_width), t), t, {x_c, no_slot, no_slot});
    k.requires_grad = b.grad_of(x_c);
    k.grad_inputs = k.requires_grad ? 1 : 0;
    k.workspace = dequantized;
    k.backward_workspace.add(dequantized);
    k.cublas_backward = true;  // the input's gradient: a matmul with the weight dequantized again
    tensor_slot y = b.push(k);
    y = b.cast(y, checked_mul(n, o.out_width), b.type_of(x));
    return y;
}

// bitsandbytes' LLM.int8 (MatMul8bitLt, threshold 6.0, 0.50). Forward:
// - int8_vectorwise_quant of x.to(fp16): int8 rows and one fp32 scale per
//   row, found with x.abs() >= 6 (an fp16 copy and a bool mask, transients);
// - int8_scaled_mm: an int32 product, dequantized into fp16, then cast to x's
//   dtype (the three alive at once: traced, 738 MB on tinyllama's up_proj);
// - the outlier columns' fp16 matmul, a few kilobytes traced, is left out.
// It keeps x itself for backward when x needs a gradient, as ctx.tensors:
// x outlives this backward, until the graph dies (traced: under reentrant
// checkpointing the layer's int8 inputs live through its whole backward).
// Backward dequantizes the weight into x's dtype. The base is frozen.
constexpr tensor_slot int8_linear(kernel_builder& b, const op& o, tensor_slot x) {
    const std::uint64_t n = b.rows(o.rows);
    const std::uint64_t in = checked_mul(n, o.in_width);
    const std::uint64_t out = checked_mul(n, o.out_width);
    const dtype t = b.type_of(x);
    const bool casts = t != dtype::fp16;  // .to(fp16) is x itself when x is fp16
    kernel quant = b.make("int8_vectorwise_quant", b.tensor(in, dtype::int8) + b.tensor(n, dtype::fp32), dtype::int8,
                          {x, no_slot, no_slot});
    quant.workspace = (casts ? b.tensor(in, dtype::fp16) : bytes{}) + b.tensor(in, dtype::fp16) + b.tensor(in, dtype::boolean);
    const tensor_slot quantized = b.push(quant);
    kernel mm = b.make("int8_mixed_scaled_mm", b.tensor(out, t), t, {x, quantized, no_slot});
    mm.workspace = b.tensor(out, dtype::int32) + (casts ? b.tensor(out, dtype::fp16) : bytes{});
    mm.requires_grad = b.grad_of(x);
    mm.saves_inputs = mm.requires_grad ? 1 : 0;
    mm.saved_with_graph = true;
    mm.grad_inputs = mm.requires_grad ? 1 : 0;
    mm.backward_workspace.add(b.tensor(o.weight.numel(), t));
    mm.backward_workspace.add(b.tensor(o.out_width, dtype::fp32));
    mm.cublas_backward = true;  // the input's gradient: a matmul with the weight dequantized
    return b.push(mm);
}

constexpr tensor_slot expand_linear(kernel_builder& b, const op& o) {
    const tensor_slot x = b.slot_of(o.inputs[0]);
    const std::uint64_t n = b.rows(o.rows);
    const bool adapted = b.r.lora.enabled() && b.r.lora.targets_module(o.module);
    if (b.r.quantize == quantization::int8 && !o.full_precision) {
        const tensor_slot y = int8_linear(b, o, x);
        return adapted ? lora_branch(b, o, x, y) : y;
    }
    if (is_4bit(b.r.quantize) && !o.full_precision) {
        const tensor_slot y = linear_4bit(b, o, x);
        // peft's 4-bit LoRA layer clones the base output before adding its branch.
        return adapted ? lora_branch(b, o, x, b.pointwise("clone", y, b.elements(o.rows, o.out_width))) : y;
    }
    const bool weight_grad = b.trainable(o);
    const dtype compute_type = b.matmul_type(b.type_of(x));
    const tensor_slot x_c = b.cast(x, detail::checked_mul(n, o.in_width), compute_type);
    // Autocast casts the weight once per forward (its cast cache); the copy
    // is kept when backward needs it for the input gradient.
    const bool weight_cast = compute_type != b.param_type();
    const bytes weight_copy = weight_cast ? b.tensor(o.weight.numel(), compute_type) + b.tensor(o.bias.numel(), compute_type)
                                          : bytes{};
    kernel k = b.make("addmm", b.tensor(detail::checked_mul(n, o.out_width), compute_type), compute_type,
                      {x_c, no_slot, no_slot});
    const bool input_grad = b.grad_of(x_c);
    k.requires_grad = input_grad || weight_grad;
    if (input_grad) k.grad_inputs = 1;
    if (weight_grad) k.saves_inputs = 1;  // grad_W = x^T grad_out
    k.weight_copy = weight_copy;
    k.saves_weight_copy = input_grad;  // grad_x = grad_out W
    // The cast cache holds casts of weights that require grad.
    k.caches_weight_copy = weight_cast && b.param_requires_grad();
    // Compiled, a tied head's weight gradient is left to the table it shares.
    if (!(one_compiled_graph(b) && o.tied)) k.param_grads = b.param_grad_bytes(o);
    // The weight gradient is computed in the compute dtype, then cast;
    // the bias gradient is a reduction over tokens (reduction_staging).
    if (weight_grad && weight_cast) k.backward_workspace.add(weight_copy);
    if (weight_grad && !o.bias.empty()) k.backward_workspace.add(b.reduction_staging(n, o.out_width));
    // A weight cast by autocast has its gradient made in the compute dtype
    // and cast after: that order was not traced, and is left as the input's first.
    k.param_grads_first = o.bias.empty() && !weight_cast;
    k.cublas_backward = true;
    const tensor_slot y = b.push(k);
    return adapted ? lora_branch(b, o, x, y) : y;
}

// ViT: the pixels (an input the step holds), Conv2d over them, then a
// flattened, transposed view of its output.
constexpr tensor_slot expand_patch_embed(kernel_builder& b, const op& o) {
    const embedding_part& e = b.m.embedding;
    const std::uint64_t pixels = detail::checked_mul(b.s.batch,
                                                     detail::checked_mul(e.channels, detail::checked_mul(e.image_size, e.image_size)));
    kernel input = b.make("pixel_values", b.tensor(pixels, b.param_type()), b.param_type(), {no_slot, no_slot, no_slot});
    input.held = true;
    const tensor_slot px = b.push(input);
    const dtype t = b.matmul_type(b.param_type());
    const tensor_slot px_c = b.cast(px, pixels, t);
    kernel k = b.make("convolution", b.tensor(detail::checked_mul(detail::checked_mul(b.s.batch, e.patch_count()), o.out_width), t),
                      t, {px_c, no_slot, no_slot});
    const bool weight_grad = b.trainable(o);
    k.requires_grad = weight_grad;
    k.saves_inputs = weight_grad ? 1 : 0;
    const bool weight_cast = t != b.param_type();
    k.weight_copy = weight_cast ? b.tensor(o.weight.numel(), t) + b.tensor(o.bias.numel(), t) : bytes{};
    k.caches_weight_copy = weight_cast && b.param_requires_grad();
    k.param_grads = b.param_grad_bytes(o);
    return b.push(k);
}

// x combined with the op's parameter into a new tensor: cat with ViT's CLS
// token (one more token per sequence), or + its position table. The table's
// gradient sums the batch: one table-sized partial result.
constexpr tensor_slot with_parameter(kernel_builder& b, const op& o, const char* what, bool sums_over_batch) {
    const tensor_slot x = b.slot_of(o.inputs[0]);
    const dtype t = promote(b.type_of(x), b.param_type());
    kernel k = b.make(what, b.tensor(b.elements(o.rows, o.out_width), t), t, {x, no_slot, no_slot});
    k.requires_grad = b.grad_of(x) || b.trainable(o);
    k.grad_inputs = b.grad_of(x) ? 1 : 0;
    k.param_grads = b.param_grad_bytes(o);
    if (sums_over_batch && b.trainable(o)) k.backward_workspace.add(b.tensor(o.weight.numel(), t));
    return b.push(k);
}

constexpr tensor_slot expand_cls_concat(kernel_builder& b, const op& o) { return with_parameter(b, o, "cat", false); }
constexpr tensor_slot expand_position_add(kernel_builder& b, const op& o) { return with_parameter(b, o, "add", true); }

}  // namespace anatomy::detail
