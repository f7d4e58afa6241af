// The model spec: a plain constexpr aggregate describing a transformer.
#pragma once

#include <anatomy/error.hpp>

#include <cstdint>

namespace anatomy {

enum class architecture { bert, roberta, distilbert, gpt2, llama, mistral, qwen2, t5 };
enum class family { encoder, decoder, encoder_decoder };
enum class task { causal_lm, seq_cls, seq2seq };
enum class ffn_kind { mlp, gated };
enum class norm_kind { layer_norm, rms_norm };
enum class activation { gelu, gelu_tanh, relu, silu, tanh };
enum class position_kind { learned, rotary, relative_bias };

struct model_spec {
    architecture arch = architecture::llama;
    std::uint64_t hidden = 0;
    std::uint64_t layers = 0;          // encoder layers for T5, decoder layers otherwise
    std::uint64_t decoder_layers = 0;  // T5 only
    std::uint64_t heads = 0;
    std::uint64_t kv_heads = 0;        // 0: as many as heads (no GQA)
    std::uint64_t head_dim = 0;        // 0: hidden / heads
    ffn_kind ffn = ffn_kind::mlp;
    std::uint64_t ffn_hidden = 0;
    activation act = activation::gelu;
    std::uint64_t vocab = 0;
    std::uint64_t max_positions = 0;   // rows of a learned position table; a hard limit on seq
    std::uint64_t token_types = 0;     // BERT segment embeddings
    std::uint64_t relative_buckets = 0;  // T5 relative attention bias
    bool tie_embeddings = true;
    norm_kind norm = norm_kind::layer_norm;
    bool qkv_bias = false;
    bool attn_out_bias = false;
    bool mlp_bias = false;
    double hidden_dropout = 0.0;
    double attention_dropout = 0.0;
    task head = task::causal_lm;
    std::uint64_t num_labels = 2;

    constexpr std::uint64_t kv_head_count() const { return kv_heads == 0 ? heads : kv_heads; }
    constexpr std::uint64_t head_width() const { return head_dim == 0 ? hidden / heads : head_dim; }
    constexpr std::uint64_t attention_width() const { return heads * head_width(); }
    constexpr std::uint64_t kv_width() const { return kv_head_count() * head_width(); }
};

constexpr family family_of(architecture arch) {
    switch (arch) {
        case architecture::bert:
        case architecture::roberta:
        case architecture::distilbert: return family::encoder;
        case architecture::gpt2:
        case architecture::llama:
        case architecture::mistral:
        case architecture::qwen2: return family::decoder;
        case architecture::t5: return family::encoder_decoder;
    }
    throw error("anatomy::family_of: unknown architecture");
}

constexpr position_kind positions_of(architecture arch) {
    switch (family_of(arch)) {
        case family::encoder: return position_kind::learned;
        case family::encoder_decoder: return position_kind::relative_bias;
        case family::decoder: return arch == architecture::gpt2 ? position_kind::learned : position_kind::rotary;
    }
    throw error("anatomy::positions_of: unknown architecture");
}

// Rejects specs that no HF model could have, naming the field to fix.
constexpr void validate(const model_spec& m) {
    detail::require(m.hidden > 0, "anatomy::validate(model_spec): hidden must be > 0");
    detail::require(m.layers > 0, "anatomy::validate(model_spec): layers must be > 0");
    detail::require(m.heads > 0, "anatomy::validate(model_spec): heads must be > 0");
    detail::require(m.vocab > 0, "anatomy::validate(model_spec): vocab must be > 0");
    detail::require(m.ffn_hidden > 0, "anatomy::validate(model_spec): ffn_hidden must be > 0");
    detail::require(m.head_dim != 0 || m.hidden % m.heads == 0,
                    "anatomy::validate(model_spec): hidden must be a multiple of heads, or set head_dim");
    detail::require(m.kv_head_count() <= m.heads && m.heads % m.kv_head_count() == 0,
                    "anatomy::validate(model_spec): heads must be a multiple of kv_heads");
    detail::require(m.hidden_dropout >= 0.0 && m.hidden_dropout < 1.0 && m.attention_dropout >= 0.0 &&
                        m.attention_dropout < 1.0,
                    "anatomy::validate(model_spec): dropout probabilities must be in [0, 1)");
    const family fam = family_of(m.arch);
    detail::require(fam != family::encoder_decoder || m.decoder_layers > 0,
                    "anatomy::validate(model_spec): an encoder-decoder model needs decoder_layers > 0");
    detail::require(fam != family::encoder_decoder || m.relative_buckets > 0,
                    "anatomy::validate(model_spec): T5 needs relative_buckets > 0");
    detail::require(positions_of(m.arch) != position_kind::learned || m.max_positions > 0,
                    "anatomy::validate(model_spec): a model with learned positions needs max_positions > 0");
    detail::require(fam != family::encoder || m.head == task::seq_cls,
                    "anatomy::validate(model_spec): an encoder-only model supports task seq-cls only");
    detail::require(fam != family::decoder || m.head != task::seq2seq,
                    "anatomy::validate(model_spec): a decoder-only model supports causal-lm or seq-cls, not seq2seq");
    detail::require(fam != family::encoder_decoder || m.head == task::seq2seq,
                    "anatomy::validate(model_spec): T5 supports task seq2seq only");
    detail::require(m.head != task::seq_cls || m.num_labels > 0,
                    "anatomy::validate(model_spec): seq-cls needs num_labels > 0");
}

}  // namespace anatomy
