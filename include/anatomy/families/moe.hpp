// Mixtures of experts: Mixtral, Qwen2-MoE, Qwen3-MoE, OLMoE, DeepSeek-V2/V3.
// Each is a dense family's attention with experts (parts/experts.hpp) in
// place of its MLP; DeepSeek adds latent attention.
#pragma once

#include <anatomy/families/llama.hpp>
#include <anatomy/families/sizes.hpp>
#include <anatomy/model.hpp>

namespace anatomy::families {

struct moe_sizes {
    std::uint64_t experts = 0;      // routed experts
    std::uint64_t top_k = 0;        // experts per token
    std::uint64_t hidden = 0;       // each expert's width
    std::uint64_t shared = 0;       // the shared experts' width (0: none)
    std::uint64_t first_dense = 0;  // leading layers with a dense MLP
};

// Mixtral: Mistral's attention; intermediate_size is each expert's width;
// the routing weights stay fp32 into the combine.
constexpr model_spec mixtral(const sizes& s, const moe_sizes& e, std::uint64_t sliding_window = 0) {
    model_spec m = mistral(s, sliding_window);
    m.model_type = "mixtral";
    m.experts = {.count = e.experts, .top_k = e.top_k, .hidden = e.hidden, .fp32_combine = true};
    return m;
}

// Qwen2-MoE: Qwen2's attention, a gated shared expert beside the routed ones.
constexpr model_spec qwen2_moe(const sizes& s, const moe_sizes& e) {
    model_spec m = qwen2(s);
    m.model_type = "qwen2_moe";
    m.experts = {.count = e.experts, .top_k = e.top_k, .hidden = e.hidden, .shared_hidden = e.shared,
                 .shared_gate = true};
    return m;
}

constexpr model_spec qwen3_moe(const sizes& s, const moe_sizes& e, bool attention_bias = false) {
    model_spec m = qwen3(s, attention_bias);
    m.model_type = "qwen3_moe";
    m.experts = {.count = e.experts, .top_k = e.top_k, .hidden = e.hidden};
    return m;
}

// OLMoE: q/k norms over the whole projections, experts on every layer.
constexpr model_spec olmoe(const sizes& s, const moe_sizes& e, bool attention_bias = false) {
    model_spec m = llama(s, attention_bias);
    m.model_type = "olmoe";
    m.attention.qk_norm = qk_norm_kind::full_width;
    m.experts = {.count = e.experts, .top_k = e.top_k, .hidden = e.hidden};
    return m;
}

struct latent_sizes {
    std::uint64_t q_lora_rank = 0;  // 0: one q_proj
    std::uint64_t kv_lora_rank = 0;
    std::uint64_t nope = 0;  // qk_nope_head_dim
    std::uint64_t rope = 0;  // qk_rope_head_dim
    std::uint64_t v = 0;     // v_head_dim
};

// DeepSeek-V2: latent attention (RoPE in complex fp32), a router on fp32
// copies, fp32 routing weights, shared experts, first_dense dense layers.
// `s.ffn` is the dense layers' width.
constexpr model_spec deepseek_v2(const sizes& s, const moe_sizes& e, const latent_sizes& a) {
    model_spec m = llama(s);
    m.model_type = "deepseek_v2";
    m.attention.kv_heads = 0;  // keys and values are expanded to every head
    m.attention.head_dim = a.nope + a.rope;
    m.attention.v_head_dim = a.v;
    m.attention.q_lora_rank = a.q_lora_rank;
    m.attention.kv_lora_rank = a.kv_lora_rank;
    m.attention.rope_head_dim = a.rope;
    m.attention.rotation = rotary_style::complex_fp32;
    m.experts = {.count = e.experts, .top_k = e.top_k, .hidden = e.hidden, .router_fp32 = true, .fp32_combine = true,
                 .shared_hidden = e.shared, .first_dense = e.first_dense};
    return m;
}

// DeepSeek-V3: V2 with sigmoid scoring and interleaved RoPE in the weights' dtype.
constexpr model_spec deepseek_v3(const sizes& s, const moe_sizes& e, const latent_sizes& a, bool rope_interleave = true) {
    model_spec m = deepseek_v2(s, e, a);
    m.model_type = "deepseek_v3";
    m.experts.scoring = router_scoring::sigmoid;
    m.attention.rotation = rope_interleave ? rotary_style::interleaved : rotary_style::halves_fp32;
    m.attention.rotary_modules = 0;  // its tables: not modelled
    return m;
}

// gpt-oss: biased projections everywhere, attention sinks (so eager: its
// PreTrainedModel has no SDPA), alternating 128-token sliding windows, a
// router with a bias and a softmax over its top-k logits, biased experts
// with a clamped SwiGLU, RMSNorm with the weight applied in fp32. bf16
// weights (its MXFP4 checkpoint is a quantized base, not modelled).
constexpr model_spec gpt_oss(const sizes& s, const moe_sizes& e, std::uint64_t sliding_window = 128) {
    model_spec m = llama(s, true);
    m.model_type = "gpt_oss";
    m.attention.sinks = true;
    m.attention.sdpa = false;
    m.attention.rotary_modules = 0;  // tables without the cat: not modelled
    m.attention.eager_softmax_fp32 = false;
    m.norm.style = rms_style::scale_then_cast;
    m.pattern = sliding_except_every(2, sliding_window);
    m.experts = {.count = e.experts, .top_k = e.top_k, .hidden = e.hidden, .scoring = router_scoring::softmax_of_top_k,
                 .biases = true, .clamped_swiglu = true};
    return m;
}

// Llama 4 (text): every token through every expert (its input scaled by the
// router's sigmoid scores) plus a shared expert; dense layers between MoE
// ones every `moe_step` layers (Maverick: 2); chunked attention on RoPE
// layers, full attention without RoPE every `nope_every`-th layer, where q
// is scaled by a temperature; an L2 q/k norm on RoPE layers (use_qk_norm).
// `s.ffn` is the dense layers' width (intermediate_size_mlp).
constexpr model_spec llama4(const sizes& s, const moe_sizes& e, std::uint64_t moe_step = 1, std::uint64_t nope_every = 4,
                            std::uint64_t chunk = 8192, bool qk_norm = true, bool temperature_tuning = true) {
    model_spec m = llama(s);
    m.model_type = "llama4_text";
    m.attention.qk_l2_norm = qk_norm;
    m.attention.temperature_tuning = temperature_tuning;
    m.attention.rotary_modules = 0;  // complex frequencies: not modelled
    m.experts = {.count = e.experts, .top_k = e.top_k, .hidden = e.hidden, .shared_hidden = e.shared,
                 .dense_dispatch = true};
    // One cycle covers both patterns: lcm(moe_step, nope_every) layers
    // (nope_every 0: every layer has RoPE).
    const std::uint64_t rope_period = nope_every == 0 ? 1 : nope_every;
    std::uint64_t length = rope_period;
    while (length % moe_step != 0) length += rope_period;
    m.pattern.length = length;
    for (std::uint64_t i = 0; i < length && i < m.pattern.windows.size(); ++i) {
        m.pattern.no_rope[i] = nope_every != 0 && (i + 1) % nope_every == 0;
        m.pattern.windows[i] = m.pattern.no_rope[i] ? 0 : chunk;  // NoPE layers attend fully
        m.pattern.dense[i] = (i + 1) % moe_step != 0;  // moe_layers: range(step - 1, layers, step)
    }
    m.names.mlp = "feed_forward";
    return m;
}

}  // namespace anatomy::families
