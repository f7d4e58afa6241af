// Megatron-LM's tensor, sequence and pipeline parallelism, per rank: the
// weights and optimizer state of the most loaded shard, and the activations
// of the first pipeline stage, after Korthikanti et al., "Reducing Activation
// Recomputation in Large Transformer Models" (2022), Table 2, and Megatron's
// own theoretical_memory_usage.py, which follows it. These are the published
// formulas, not a walk of Megatron's kernels; nothing here was measured.
#pragma once

#include <anatomy/bytes.hpp>
#include <anatomy/detail/checked.hpp>
#include <anatomy/error.hpp>
#include <anatomy/model.hpp>
#include <anatomy/shape.hpp>

#include <cstdint>

namespace anatomy::megatron {

enum class recompute { none, selective, full };

struct config {
    std::uint64_t tp = 1;  // tensor parallel size
    std::uint64_t pp = 1;  // pipeline stages (the 1F1B schedule)
    std::uint64_t dp = 1;  // data parallel size
    bool sp = false;       // sequence parallelism (needs tp > 1 to matter)
    recompute activations = recompute::none;
    bool distributed_optimizer = false;  // optimizer state sharded over dp
    std::uint64_t micro_batches = 0;     // per step; 0: at least pp, the pipeline stays full
};

constexpr void validate(const config& c, const model_spec& m) {
    anatomy::detail::require(c.tp >= 1 && c.pp >= 1 && c.dp >= 1,
                             "anatomy::megatron::validate: tp, pp and dp must be >= 1");
    anatomy::detail::require(m.heads() % c.tp == 0,
                             "anatomy::megatron::validate: tp must divide the attention heads");
    anatomy::detail::require(m.layers % c.pp == 0, "anatomy::megatron::validate: pp must divide the layers");
    anatomy::detail::require(m.stack == stack_kind::decoder,
                             "anatomy::megatron::validate: Megatron's GPT formulas describe decoder-only models");
}

// Table 2: activation bytes of one transformer layer for one micro-batch of
// `b` sequences of `s` tokens, with 16-bit activations and a 4h MLP
// (Megatron generalises 24 = 8 + 16 h/h to 8 + 4 ffn/h, as done here).
constexpr bytes layer_activations(const model_spec& m, const shape& sh, const config& c) {
    using anatomy::detail::checked_mul;
    const std::uint64_t sbh = checked_mul(checked_mul(sh.seq, sh.batch), m.hidden);
    const std::uint64_t t = c.tp;
    // 5as/h: attention scores, softmax and its dropout mask (the part selective recompute drops).
    const std::uint64_t scores = checked_mul(checked_mul(checked_mul(5, m.heads()), sh.seq), sbh) / m.hidden;
    const std::uint64_t linear = anatomy::detail::checked_add(8, checked_mul(4, m.mlp.hidden) / m.hidden);  // inputs to the QKV, MLP and dropout masks (24 for a 4h MLP)
    const std::uint64_t norms = 10;  // LayerNorm inputs, attention and MLP dropout masks, residual (34 - 24)
    using anatomy::detail::checked_add;
    switch (c.activations) {
        case recompute::full: return checked_mul(2, sbh / t) * B;  // each layer's input, under SP split by t
        case recompute::selective:
            return c.sp ? checked_mul(norms + linear, sbh) / t * B
                        : checked_add(checked_mul(norms, sbh), checked_mul(linear, sbh) / t) * B;
        case recompute::none:
            return c.sp ? checked_add(checked_mul(norms + linear, sbh), scores) / t * B
                        : checked_add(checked_mul(norms, sbh), checked_add(checked_mul(linear, sbh), scores) / t) * B;
    }
    throw error("anatomy::megatron::layer_activations: unknown recompute");
}

// Megatron pads the vocabulary to a multiple of 128 x tp.
constexpr std::uint64_t padded_vocab(const model_spec& m, const config& c) {
    const std::uint64_t multiple = anatomy::detail::checked_mul(128, c.tp);
    return anatomy::detail::checked_mul(anatomy::detail::ceil_div(m.embedding.vocab, multiple), multiple);
}

// Micro-batches the first stage holds under 1F1B: pp, or fewer when the step
// has fewer micro-batches.
constexpr std::uint64_t in_flight(const config& c) {
    return c.micro_batches != 0 && c.micro_batches < c.pp ? c.micro_batches : c.pp;
}

// The first pipeline stage's activations: L/pp layers for each of pp
// micro-batches in flight (so L layers' worth), the embedding's input and
// dropout mask for each in-flight micro-batch, and, with one stage, the
// output layer's inputs and the fp32 logits for the loss.
constexpr bytes activations(const model_spec& m, const shape& sh, const config& c) {
    validate(c, m);
    using anatomy::detail::checked_mul;
    const std::uint64_t sb = checked_mul(sh.seq, sh.batch);
    const std::uint64_t layers_on_first_stage = m.layers / c.pp * in_flight(c);
    bytes total = checked_mul(layers_on_first_stage, layer_activations(m, sh, c).count) * B;
    const std::uint64_t microbatches = in_flight(c);
    total += checked_mul(checked_mul(8, sb), microbatches) / c.tp * B;              // token ids
    total += checked_mul(checked_mul(sb, m.hidden), microbatches) / c.tp * B;      // embedding dropout mask
    if (c.pp == 1) total += checked_mul(checked_mul(4, sb), anatomy::detail::checked_add(m.hidden, padded_vocab(m, c))) / c.tp * B;
    return total;
}

// Parameters of the most loaded rank: its 1/pp of the layers plus the
// embedding (the first stage holds it; with one stage the untied output layer
// too), all split by tp.
constexpr std::uint64_t parameters_on_most_loaded_rank(const model_spec& m, const config& c) {
    validate(c, m);
    using anatomy::detail::checked_add;
    using anatomy::detail::checked_mul;
    const std::uint64_t h = m.hidden;
    const std::uint64_t norm = m.norm.kind == norm_kind::rms_norm ? 1 : 2;
    const std::uint64_t gated = m.mlp.kind == mlp_kind::gated ? 3 : 2;
    const std::uint64_t attention = checked_add(checked_mul(checked_mul(2, h), m.q_width()),
                                                checked_mul(checked_mul(2, h), m.kv_width()));
    const std::uint64_t layer = checked_add(checked_add(checked_mul(checked_mul(gated, h), m.mlp.hidden),
                                                        checked_mul(checked_mul(2, norm), h)), attention);
    const std::uint64_t embedding = checked_mul(h, padded_vocab(m, c));
    const std::uint64_t block = checked_add(checked_mul(layer, m.layers), checked_mul(norm, h));
    std::uint64_t on_rank = checked_add(block / c.pp, embedding);
    if (!m.head.tied && c.pp == 1) on_rank = checked_add(on_rank, embedding);
    return on_rank / c.tp;
}

// bf16 weights and gradients with fp32 master weights and Adam state: 18 B per
// parameter; the distributed optimizer shards the 12 B of fp32 state over dp.
constexpr bytes weights_and_optimizer(const model_spec& m, const config& c) {
    const std::uint64_t params = parameters_on_most_loaded_rank(m, c);
    if (!c.distributed_optimizer) return anatomy::detail::checked_mul(params, 18) * B;
    return anatomy::detail::checked_add(anatomy::detail::checked_mul(params, 6),
                                        anatomy::detail::checked_mul(params, 12) / c.dp) * B;
}

}  // namespace anatomy::megatron
