// The attention part: heads, projections, positions and the extras some
// families add to the scores.
#pragma once

#include <cstdint>

namespace anatomy {

enum class position_kind {
    none,           // no position information in attention (learned tables live in the embeddings)
    rotary,         // RoPE on q and k (a fraction of each head with partial rotary)
    alibi,          // a per-head linear bias added to the scores (BLOOM, Falcon with alibi)
    relative_bias,  // T5's learned relative-position bias, computed once per stack
};

// Where a model normalizes q and k: not at all, per head over head_dim
// (Qwen3, Gemma 3), or over the whole projection before the head split (OLMo 2).
enum class qk_norm_kind { none, per_head, full_width };

// How q, k and v leave the input: three projections, or one fused projection
// whose output is split into views.
enum class qkv_layout { separate, fused };

// How RoPE is written: rotate_half on the projection's dtype (Llama and most),
// the same in fp32 and cast back (OLMo 2; ModernBERT, which also takes two
// .float() copies first), GPT-J's interleaved rotate_every_two, or
// DeepSeek-V2's complex product: view_as_complex(q.float()) and k's, each
// times complex frequencies, cast back with type_as.
enum class rotary_style { halves, halves_fp32, halves_float_copies, interleaved, complex_fp32 };

// The fp32 styles return q_embed.to(q.dtype), k_embed.to(k.dtype): both
// casts after both rotations. DeepSeek-V2 makes both .float() copies first,
// then each product and its cast.
constexpr bool rotates_in_fp32(rotary_style s) {
    return s == rotary_style::halves_fp32 || s == rotary_style::halves_float_copies ||
           s == rotary_style::complex_fp32;
}

struct attention_part {
    std::uint64_t heads = 0;
    std::uint64_t kv_heads = 0;    // 0: as many as heads (no GQA)
    std::uint64_t head_dim = 0;    // of q and k; 0: hidden / heads
    std::uint64_t v_head_dim = 0;  // 0: head_dim
    qkv_layout layout = qkv_layout::separate;
    bool qkv_bias = false;
    bool out_bias = false;
    qk_norm_kind qk_norm = qk_norm_kind::none;
    // Where the q/k norms run: Qwen3 and OLMo write q_norm(q_proj(x)), then
    // k's, then v_proj; Gemma 3 projects q, k and v first. The order decides
    // which projections are alive while a norm makes its fp32 temporaries.
    bool qk_norm_after_all_projections = false;
    position_kind positions = position_kind::rotary;
    double rotary_fraction = 1.0;  // partial rotary: the share of head_dim that is rotated
    rotary_style rotation = rotary_style::halves;
    std::uint64_t relative_buckets = 0;  // T5's relative_attention_num_buckets
    double logit_softcap = 0.0;  // Gemma 2: tanh(scores / cap) * cap; 0: none
    double dropout = 0.0;        // on the attention probabilities
    // Eager attention takes its softmax in fp32 (transformers' Llama-style
    // eager_attention_forward, T5) rather than in the scores' dtype (BERT, GPT-2).
    bool eager_softmax_fp32 = true;
    // The family's PreTrainedModel declares SDPA support; without it
    // transformers runs eager attention whatever is asked.
    bool sdpa = true;
    // Phi-3 writes RoPE as cat(rotated, pass-through) even when nothing passes through.
    bool rotary_concat = false;
    // OPT scales q by head_dim^-0.5 right after q_proj: one more tensor.
    bool scale_query = false;
    // GPT-J's eager attention upcasts q and k to fp32 before the scores.
    bool eager_upcast_qk = false;
    // BLOOM: alibi.baddbmm(q, k^T) makes the scaled, biased scores in one kernel.
    bool eager_baddbmm = false;
    // Falcon calls SDPA itself with a mask that is never skipped, and its
    // q, k and v leave the fused projection as copies (reshape, indexing).
    bool always_masked = false;
    bool split_copies = false;
    // Falcon hands SDPA its K/V heads as they are (no repeat_kv, no
    // enable_gqa): a single head is broadcast by the math decomposition's bmm.
    bool sdpa_broadcasts_kv = false;
    // Multi-head latent attention (DeepSeek-V2/V3): q through a low-rank
    // bottleneck (q_lora_rank, 0: one q_proj), keys and values expanded from
    // a kv_lora_rank-wide latent plus rope_head_dim shared rotary features;
    // head_dim is nope + rope. The cache keeps the latent and the rotary part.
    // gpt-oss: a learned sink logit per head, a column cat to the scores
    // before their softmax (eager attention).
    bool sinks = false;
    // Llama 4: q and k get a weightless L2 norm on RoPE layers only; NoPE
    // layers scale q by a per-position temperature (a new tensor).
    bool qk_l2_norm = false;
    bool temperature_tuning = false;
    std::uint64_t q_lora_rank = 0;
    std::uint64_t kv_lora_rank = 0;  // 0: not latent attention
    std::uint64_t rope_head_dim = 0;

    // The rotary embedding modules the model calls once per forward, each
    // making cos and sin tables as LlamaRotaryEmbedding does (Gemma 3: a
    // global and a local one, traced). 0 where the family's module differs
    // and is not modelled: GPT-J's sincos buffer, DeepSeek's and Llama 4's
    // complex frequencies, gpt-oss's tables without the cat, ModernBERT's
    // module called per layer type.
    std::uint64_t rotary_modules = 1;

    constexpr bool latent() const { return kv_lora_rank > 0; }
    constexpr std::uint64_t rotary_tables() const {
        return positions == position_kind::rotary ? rotary_modules : 0;
    }
};

}  // namespace anatomy
