// Gemma 1, 2 and 3: RMSNorm with (1 + weight), embeddings scaled by
// sqrt(hidden), a GeGLU MLP; Gemma 2 and 3 add sandwich norms and sliding-window layers.
#pragma once

#include <anatomy/families/llama.hpp>
#include <anatomy/families/sizes.hpp>
#include <anatomy/model.hpp>

namespace anatomy::families {

// Llama's layout with Gemma's norm, activation and embedding scale.
constexpr model_spec gemma(const sizes& s, bool attention_bias = false) {
    model_spec m = llama(s, attention_bias);
    m.model_type = "gemma";
    m.mlp.act = activation::gelu_tanh;
    m.norm.style = rms_style::unit_offset;
    m.embedding.scaled = true;
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
    m.attention.qk_norm_after_all_projections = true;
    m.pattern = sliding_except_every(pattern, sliding_window);
    m.attention.rotary_modules = 2;  // rope_local_base_freq: the sliding layers' own
    return m;
}

}  // namespace anatomy::families
