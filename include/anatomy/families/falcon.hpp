// Falcon: a fused query_key_value (multi-query, or grouped in the new decoder
// architecture), rotary or ALiBi, and parallel branches added in place.
#pragma once

#include <anatomy/families/sizes.hpp>
#include <anatomy/model.hpp>

namespace anatomy::families {

// `kv_heads` in `s`: 1 for multi_query, num_kv_heads for the new decoder
// architecture, heads otherwise. `parallel_norms`: 2 when each branch has its
// own norm (ln_attn, ln_mlp), 1 when input_layernorm feeds both.
constexpr model_spec falcon(const sizes& s, bool bias = false, bool alibi = false, bool parallel = true,
                            std::uint64_t parallel_norms = 1, double dropout = 0.0, double attention_dropout = 0.0) {
    model_spec m{};
    m.model_type = "falcon";
    m.stack = stack_kind::decoder;
    m.hidden = s.hidden;
    m.layers = s.layers;
    m.attention = {.heads = s.heads, .kv_heads = s.kv_heads, .layout = qkv_layout::fused, .qkv_bias = bias,
                   .out_bias = bias, .positions = alibi ? position_kind::alibi : position_kind::rotary,
                   .dropout = attention_dropout, .always_masked = true, .split_copies = true,
                   .sdpa_broadcasts_kv = true};
    m.mlp = {.kind = mlp_kind::plain, .hidden = s.ffn, .act = activation::gelu, .bias = bias};
    m.norm = {.kind = norm_kind::layer_norm, .bias = true};
    m.block = {.residual = parallel ? residual_kind::parallel : residual_kind::sequential,
               .shared_parallel_norm = parallel_norms == 1, .dropout = dropout, .parallel_add_in_place = true};
    m.embedding = {.vocab = s.vocab};
    m.head = {.kind = task::causal_lm, .tied = s.tied};
    m.names = {.embeddings = "transformer", .token_table = "word_embeddings", .layers = "transformer.h",
               .attention = "self_attention", .qkv = "query_key_value", .o = "dense", .mlp = "mlp",
               .up = "dense_h_to_4h", .down = "dense_4h_to_h",
               .attention_norm = parallel_norms == 2 ? "ln_attn" : "input_layernorm",
               .mlp_norm = parallel_norms == 2 ? "ln_mlp" : "post_attention_layernorm",
               .final_stage = "transformer", .final_norm = "ln_f"};
    return m;
}

}  // namespace anatomy::families
