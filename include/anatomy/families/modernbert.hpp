// ModernBERT: a pre-norm encoder with RoPE, bias-free LayerNorms, a fused
// Wqkv and GeGLU Wi, and local (sliding-window) attention on all layers but
// every `global_every`-th, counted from layer 0, whose attention norm is an identity.
#pragma once

#include <anatomy/families/sizes.hpp>
#include <anatomy/model.hpp>

namespace anatomy::families {

constexpr model_spec modernbert(const sizes& s, std::uint64_t global_every = 3, std::uint64_t local_window = 128,
                                bool attention_bias = false, bool mlp_bias = false, bool norm_bias = false,
                                double embedding_dropout = 0.0, double attention_dropout = 0.0,
                                double mlp_dropout = 0.0) {
    model_spec m{};
    m.model_type = "modernbert";
    m.stack = stack_kind::encoder;
    m.hidden = s.hidden;
    m.layers = s.layers;
    m.attention = {.heads = s.heads, .layout = qkv_layout::fused, .qkv_bias = attention_bias,
                   .out_bias = attention_bias, .positions = position_kind::rotary,
                   .rotation = rotary_style::halves_float_copies, .dropout = attention_dropout,
                   .rotary_modules = 0};  // called per layer type: not modelled
    m.mlp = {.kind = mlp_kind::gated, .hidden = s.ffn, .act = activation::gelu, .bias = mlp_bias,
             .fused_gate_up = true, .dropout = mlp_dropout};
    m.norm = {.kind = norm_kind::layer_norm, .bias = norm_bias};
    m.block = {.first_layer_attention_norm = false};
    m.embedding = {.vocab = s.vocab, .norm = true, .dropout = embedding_dropout};
    m.pattern.length = global_every;
    for (std::uint64_t i = 1; i < global_every && i < m.pattern.windows.size(); ++i) m.pattern.windows[i] = local_window;
    m.head = {.kind = task::masked_lm, .tied = true, .classifier = classifier_kind::mean_pool_head,
              .transform_bias = false};
    m.names = {.embeddings = "model.embeddings", .token_table = "tok_embeddings", .embedding_norm = "norm",
               .layers = "model.layers", .attention = "attn", .qkv = "Wqkv", .o = "Wo", .mlp = "mlp",
               .down = "Wo", .gate_up = "Wi", .attention_norm = "attn_norm", .mlp_norm = "mlp_norm",
               .final_stage = "model", .final_norm = "final_norm", .lm_head = "decoder"};
    return m;
}

}  // namespace anatomy::families
