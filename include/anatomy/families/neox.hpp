// GPT-NeoX (Pythia) and GPT-J: parallel attention and MLP, partial rotary.
#pragma once

#include <anatomy/families/sizes.hpp>
#include <anatomy/model.hpp>

namespace anatomy::families {

// GPT-NeoX: a fused query_key_value, partial rotary over rotary_pct of each
// head, and (use_parallel_residual) two norms feeding parallel branches.
constexpr model_spec gpt_neox(const sizes& s, double rotary_fraction = 0.25, bool parallel_residual = true,
                              bool attention_bias = true, double dropout = 0.0, double attention_dropout = 0.0) {
    model_spec m{};
    m.model_type = "gpt_neox";
    m.stack = stack_kind::decoder;
    m.hidden = s.hidden;
    m.layers = s.layers;
    m.attention = {.heads = s.heads, .layout = qkv_layout::fused, .qkv_bias = attention_bias,
                   .out_bias = attention_bias, .positions = position_kind::rotary, .rotary_fraction = rotary_fraction,
                   .dropout = attention_dropout};
    m.mlp = {.kind = mlp_kind::plain, .hidden = s.ffn, .act = activation::gelu, .bias = true};
    m.norm = {.kind = norm_kind::layer_norm, .bias = true};
    m.block = {.residual = parallel_residual ? residual_kind::parallel : residual_kind::sequential, .dropout = dropout};
    m.embedding = {.vocab = s.vocab};
    m.head = {.kind = task::causal_lm, .tied = s.tied};
    m.names = {.embeddings = "gpt_neox", .token_table = "embed_in", .layers = "gpt_neox.layers",
               .attention = "attention", .qkv = "query_key_value", .o = "dense", .mlp = "mlp",
               .up = "dense_h_to_4h", .down = "dense_4h_to_h", .attention_norm = "input_layernorm",
               .mlp_norm = "post_attention_layernorm", .final_stage = "gpt_neox", .final_norm = "final_layer_norm",
               .lm_head = "embed_out"};
    return m;
}

// GPT-J: bias-free q, k, v and out_proj, interleaved rotary over rotary_dim,
// one ln_1 feeding both branches, and an lm_head with a bias.
constexpr model_spec gptj(const sizes& s, std::uint64_t rotary_dim, double dropout = 0.0,
                          double attention_dropout = 0.0, double embedding_dropout = 0.0) {
    model_spec m{};
    m.model_type = "gptj";
    m.stack = stack_kind::decoder;
    m.hidden = s.hidden;
    m.layers = s.layers;
    const std::uint64_t head_dim = s.hidden / s.heads;
    m.attention = {.heads = s.heads, .positions = position_kind::rotary,
                   .rotary_fraction = static_cast<double>(rotary_dim) / static_cast<double>(head_dim),
                   .rotation = rotary_style::interleaved, .dropout = attention_dropout, .sdpa = false,
                   .eager_upcast_qk = true, .rotary_modules = 0};  // a sincos buffer: not modelled
    m.mlp = {.kind = mlp_kind::plain, .hidden = s.ffn, .act = activation::gelu_new, .bias = true};
    m.norm = {.kind = norm_kind::layer_norm, .bias = true};
    m.block = {.residual = residual_kind::parallel, .shared_parallel_norm = true, .dropout = dropout};
    m.embedding = {.vocab = s.vocab, .dropout = embedding_dropout};
    m.head = {.kind = task::causal_lm, .tied = s.tied, .lm_head_bias = true};
    m.names = {.embeddings = "transformer", .token_table = "wte", .layers = "transformer.h", .attention = "attn",
               .o = "out_proj", .mlp = "mlp", .up = "fc_in", .down = "fc_out", .attention_norm = "ln_1",
               .final_stage = "transformer", .final_norm = "ln_f"};
    return m;
}

}  // namespace anatomy::families
