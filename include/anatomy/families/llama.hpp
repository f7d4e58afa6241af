// Llama and the decoders written like it: Mistral, Qwen2, Qwen3, Phi-3, OLMo 2.
// Pre-norm (OLMo 2: post-sublayer) RMSNorm decoders with RoPE and a gated MLP.
#pragma once

#include <anatomy/families/sizes.hpp>
#include <anatomy/model.hpp>

namespace anatomy::families {

constexpr model_spec llama(const sizes& s, bool attention_bias = false, bool mlp_bias = false) {
    model_spec m{};
    m.model_type = "llama";
    m.stack = stack_kind::decoder;
    m.hidden = s.hidden;
    m.layers = s.layers;
    m.attention = {.heads = s.heads, .kv_heads = s.kv_heads, .head_dim = s.head_dim, .qkv_bias = attention_bias,
                   .out_bias = attention_bias, .positions = position_kind::rotary};
    m.mlp = {.kind = mlp_kind::gated, .hidden = s.ffn, .act = activation::silu, .bias = mlp_bias};
    m.norm = {.kind = norm_kind::rms_norm, .style = rms_style::cast_then_scale};
    m.embedding = {.vocab = s.vocab};
    m.head = {.kind = task::causal_lm, .tied = s.tied};
    return m;
}

// Mistral: a sliding window on every layer when the config sets one (v0.1: 4096).
constexpr model_spec mistral(const sizes& s, std::uint64_t sliding_window = 0) {
    model_spec m = llama(s);
    m.model_type = "mistral";
    m.pattern.windows[0] = sliding_window;
    return m;
}

// Qwen2Attention: q, k and v with a bias, o without.
constexpr model_spec qwen2(const sizes& s) {
    model_spec m = llama(s);
    m.model_type = "qwen2";
    m.attention.qkv_bias = true;
    return m;
}

// Qwen3: RMSNorm on each head of q and k, before RoPE.
constexpr model_spec qwen3(const sizes& s, bool attention_bias = false) {
    model_spec m = llama(s, attention_bias);
    m.model_type = "qwen3";
    m.attention.qk_norm = qk_norm_kind::per_head;
    return m;
}

// Phi-3: one qkv_proj and one gate_up_proj, RoPE written as cat(rotated,
// pass-through) whatever the partial factor, residual dropouts, and (when the
// config sets sliding_window) a sliding-window mask on every layer.
constexpr model_spec phi3(const sizes& s, std::uint64_t sliding_window = 0, double rotary_fraction = 1.0,
                          double dropout = 0.0) {
    model_spec m = llama(s);
    m.model_type = "phi3";
    m.attention.layout = qkv_layout::fused;
    m.attention.rotary_fraction = rotary_fraction;
    m.attention.rotary_concat = true;
    m.mlp.fused_gate_up = true;
    m.block.dropout = dropout;
    m.pattern.windows[0] = sliding_window;
    return m;
}

// OLMo 2: norms after attention and after the MLP (on the branch, before the
// residual add), RMSNorm on the whole q and k projections.
constexpr model_spec olmo2(const sizes& s, bool attention_bias = false) {
    model_spec m = llama(s, attention_bias);
    m.model_type = "olmo2";
    m.attention.qk_norm = qk_norm_kind::full_width;
    m.norm.style = rms_style::scale_then_cast;
    m.attention.rotation = rotary_style::halves_fp32;  // cos and sin stay fp32; q and k are cast back
    m.block.placement = norm_placement::post_sublayer;
    m.names.attention_out_norm = "post_attention_layernorm";
    m.names.mlp_out_norm = "post_feedforward_layernorm";
    return m;
}

}  // namespace anatomy::families
