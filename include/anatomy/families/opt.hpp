// OPT: learned positions with an offset of 2, ReLU MLP, optional projections
// around the layers (word_embed_proj_dim), pre- or post-norm.
#pragma once

#include <anatomy/families/sizes.hpp>
#include <anatomy/model.hpp>

namespace anatomy::families {

constexpr model_spec opt(const sizes& s, std::uint64_t max_positions = 2048, std::uint64_t projection = 0,
                         bool layer_norm_before = true, bool final_norm = true, bool bias = true,
                         double dropout = 0.1, double attention_dropout = 0.0) {
    model_spec m{};
    m.model_type = "opt";
    m.stack = stack_kind::decoder;
    m.hidden = s.hidden;
    m.layers = s.layers;
    m.attention = {.heads = s.heads, .qkv_bias = bias, .out_bias = bias, .positions = position_kind::none,
                   .dropout = attention_dropout, .scale_query = true};
    m.mlp = {.kind = mlp_kind::plain, .hidden = s.ffn, .act = activation::relu, .bias = bias};
    m.norm = {.kind = norm_kind::layer_norm, .bias = true};
    m.block = {.placement = layer_norm_before ? norm_placement::pre : norm_placement::post_residual,
               .dropout = dropout, .final_norm = final_norm && layer_norm_before};
    // OPTLearnedPositionalEmbedding keeps 2 rows before the first position.
    m.embedding = {.vocab = s.vocab, .positions = max_positions + 2, .reserved_positions = 2,
                   .projection = projection == s.hidden ? 0 : projection, .dropout = dropout};
    m.head = {.kind = task::causal_lm, .tied = s.tied};
    m.names = {.embeddings = "model.decoder", .layers = "model.decoder.layers", .attention = "self_attn",
               .o = "out_proj", .mlp = "", .up = "fc1", .down = "fc2", .attention_norm = "self_attn_layer_norm",
               .mlp_norm = "final_layer_norm", .attention_out_norm = "self_attn_layer_norm",
               .mlp_out_norm = "final_layer_norm", .final_stage = "model.decoder", .final_norm = "final_layer_norm"};
    return m;
}

}  // namespace anatomy::families
