// Head kernels: pooling one row per sequence, and the loss over the logits.
#pragma once

#include <anatomy/kernels/builder.hpp>

namespace anatomy::detail {

constexpr tensor_slot expand_pool(kernel_builder& b, const op& o) {
    const tensor_slot x = b.slot_of(o.inputs[0]);
    if (o.out_width == b.m.hidden) return b.view(x);  // hidden[:, 0]: a view
    // logits[arange(batch), last]: advanced indexing copies the rows.
    return b.compute("index", b.tensor(checked_mul(b.s.batch, o.out_width), b.type_of(x)), b.type_of(x),
                     {x, no_slot, no_slot}, 0);
}

// ModernBERT's mean pooling: (hidden * mask[..., None]).sum(1) / mask.sum(1).
constexpr tensor_slot expand_mean_pool(kernel_builder& b, const op& o) {
    const tensor_slot x = b.slot_of(o.inputs[0]);
    const tensor_slot masked = b.pointwise("mul", x, b.elements(rows_of::source_tokens, o.out_width));
    const tensor_slot sum = b.pointwise("sum", masked, b.elements(rows_of::sequences, o.out_width));
    return b.pointwise("div", sum, b.elements(rows_of::sequences, o.out_width));
}

constexpr tensor_slot expand_loss(kernel_builder& b, const op& o) {
    const tensor_slot logits = b.slot_of(o.inputs[0]);
    b.at(logits).held = keeps_outputs(b.r);  // the model's output keeps its logits
    b.at(logits).returned = true;
    if (!b.grad_enabled()) return logits;  // inference: no labels, no loss
    const std::uint64_t n = b.elements(o.rows, o.out_width);
    // transformers' loss_function upcasts the logits first; BERT's, RoBERTa's
    // and T5's CrossEntropyLoss takes them as they are, and cross_entropy
    // passes log_softmax their own dtype, which autocast leaves alone.
    const tensor_slot input = b.m.head.loss_upcast ? b.cast(logits, n, dtype::fp32) : logits;
    const dtype t = b.type_of(input);
    const tensor_slot logp = b.compute("log_softmax", b.tensor(n, t), t, {input, no_slot, no_slot}, 0, true);
    // nll_loss is on autocast's fp32 list: half log-probabilities are copied
    // to fp32, and its backward keeps that copy (traced: roberta-large MLM
    // under fp16 autocast, a half log_softmax then a 412 MB fp32 _to_copy at
    // 4 x 512).
    const tensor_slot kept = b.cast(logp, n, b.fp32_list_type(t));
    return b.compute("nll_loss", b.tensor(1, dtype::fp32), dtype::fp32, {kept, no_slot, no_slot}, 0b1);
}

}  // namespace anatomy::detail
