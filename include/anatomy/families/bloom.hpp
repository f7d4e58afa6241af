// BLOOM: ALiBi instead of positions, a norm on the embeddings, fused
// query_key_value; transformers runs its own attention (no SDPA).
#pragma once

#include <anatomy/families/sizes.hpp>
#include <anatomy/model.hpp>

namespace anatomy::families {

constexpr model_spec bloom(const sizes& s, double dropout = 0.0, double attention_dropout = 0.0) {
    model_spec m{};
    m.model_type = "bloom";
    m.stack = stack_kind::decoder;
    m.hidden = s.hidden;
    m.layers = s.layers;
    m.attention = {.heads = s.heads, .layout = qkv_layout::fused, .qkv_bias = true, .out_bias = true,
                   .positions = position_kind::alibi, .dropout = attention_dropout, .sdpa = false,
                   .eager_baddbmm = true};
    m.mlp = {.kind = mlp_kind::plain, .hidden = s.ffn, .act = activation::bloom_gelu, .bias = true};
    m.norm = {.kind = norm_kind::layer_norm, .bias = true};
    m.block = {.dropout = dropout};
    m.embedding = {.vocab = s.vocab, .norm = true};
    m.head = {.kind = task::causal_lm, .tied = s.tied};
    m.names = {.embeddings = "transformer", .token_table = "word_embeddings",
               .embedding_norm = "word_embeddings_layernorm", .layers = "transformer.h",
               .attention = "self_attention", .qkv = "query_key_value", .o = "dense", .mlp = "mlp",
               .up = "dense_h_to_4h", .down = "dense_4h_to_h", .final_stage = "transformer", .final_norm = "ln_f"};
    return m;
}

}  // namespace anatomy::families
