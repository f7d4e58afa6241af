// Gemma 1, 2 and 3: RMSNorm with (1 + weight), embeddings scaled by
// sqrt(hidden), a GeGLU MLP; Gemma 2 and 3 add sandwich norms and sliding-window layers.
#pragma once

#include <anatomy/families/sizes.hpp>
#include <anatomy/model.hpp>

namespace anatomy::families {

constexpr model_spec gemma(const sizes& s, bool attention_bias = false) {
    model_spec m{};
    m.model_type = "gemma";
    m.stack = stack_kind::decoder;
    m.hidden = s.hidden;
    m.layers = s.layers;
    m.attention = {.heads = s.heads, .kv_heads = s.kv_heads, .head_dim = s.head_dim, .qkv_bias = attention_bias,
                   .out_bias = attention_bias, .positions = position_kind::rotary};
    m.mlp = {.kind = mlp_kind::gated, .hidden = s.ffn, .act = activation::gelu_tanh};
    m.norm = {.kind = norm_kind::rms_norm, .style = rms_style::unit_offset};
    m.embedding = {.vocab = s.vocab, .scaled = true};
    m.head = {.kind = task::causal_lm, .tied = s.tied};
    return m;
}

// Gemma 2: sandwich norms, soft-capped attention scores and logits, and
// sliding-window layers alternating with full ones (layer 0 slides).
constexpr model_spec gemma2(const sizes& s, std::uint64_t sliding_window, double attention_softcap = 50.0,
                            double final_softcap = 30.0) {
    model_spec m = gemma(s);
    m.model_type = "gemma2";
    m.attention.logit_softcap = attention_softcap;
    m.head.logit_softcap = final_softcap;
    m.block.placement = norm_placement::sandwich;
    m.pattern = sliding_except_every(2, sliding_window);
    m.names.attention_out_norm = "post_attention_layernorm";
    m.names.mlp_norm = "pre_feedforward_layernorm";
    m.names.mlp_out_norm = "post_feedforward_layernorm";
    return m;
}

// Gemma 3 (text): Gemma 2 without soft-capping, with q/k norms, and five
// sliding-window layers to each full one.
constexpr model_spec gemma3(const sizes& s, std::uint64_t sliding_window, std::uint64_t pattern = 6) {
    model_spec m = gemma2(s, sliding_window, 0.0, 0.0);
    m.model_type = "gemma3_text";
    m.attention.qk_norm = qk_norm_kind::per_head;
    m.pattern = sliding_except_every(pattern, sliding_window);
    return m;
}

}  // namespace anatomy::families
