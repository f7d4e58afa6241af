// The model spec: a constexpr aggregate of parts. A model is what its blocks
// are made of (attention, MLP, norms and their placement, residual style,
// embeddings, head, layer pattern), not a named architecture: a family is a
// choice of parts (families/), and a config reader fills them from config.json.
#pragma once

#include <anatomy/detail/checked.hpp>
#include <anatomy/error.hpp>
#include <anatomy/parts/attention.hpp>
#include <anatomy/parts/block.hpp>
#include <anatomy/parts/embedding.hpp>
#include <anatomy/parts/experts.hpp>
#include <anatomy/parts/head.hpp>
#include <anatomy/parts/layers.hpp>
#include <anatomy/parts/mlp.hpp>
#include <anatomy/parts/names.hpp>
#include <anatomy/parts/norm.hpp>

#include <cstdint>
#include <string_view>

namespace anatomy {

// Which stacks of layers a model has.
enum class stack_kind {
    encoder,          // bidirectional layers: BERT, ModernBERT, ViT
    decoder,          // causal layers: GPT-2, Llama and the other decoders
    encoder_decoder,  // T5: an encoder and a decoder with cross-attention
};

struct model_spec {
    std::string_view model_type = "llama";  // transformers' model_type, for display
    stack_kind stack = stack_kind::decoder;
    std::uint64_t hidden = 0;
    std::uint64_t layers = 0;          // encoder layers of an encoder-decoder, else all layers
    std::uint64_t decoder_layers = 0;  // encoder-decoder only
    attention_part attention{};
    mlp_part mlp{};
    experts_part experts{};  // a mixture of experts in place of the MLP (from layer experts.first_dense on)
    norm_part norm{};
    block_part block{};
    embedding_part embedding{};
    layer_pattern pattern{};
    head_part head{};
    module_names names{};

    constexpr std::uint64_t heads() const { return attention.heads; }
    constexpr std::uint64_t kv_head_count() const {
        return attention.kv_heads == 0 ? attention.heads : attention.kv_heads;
    }
    constexpr std::uint64_t head_width() const {
        return attention.head_dim == 0 ? hidden / attention.heads : attention.head_dim;
    }
    constexpr std::uint64_t v_head_width() const {
        return attention.v_head_dim == 0 ? head_width() : attention.v_head_dim;
    }
    constexpr std::uint64_t q_width() const { return detail::checked_mul(attention.heads, head_width()); }
    constexpr std::uint64_t kv_width() const { return detail::checked_mul(kv_head_count(), head_width()); }
    constexpr std::uint64_t v_width() const { return detail::checked_mul(kv_head_count(), v_head_width()); }
    constexpr std::uint64_t attention_out_width() const { return detail::checked_mul(attention.heads, v_head_width()); }
    // Rotated features of each head: a whole, even number of them.
    constexpr std::uint64_t rotary_width() const {
        if (attention.positions != position_kind::rotary) return 0;
        if (attention.latent()) return attention.rope_head_dim;
        // The fraction is in (0, 1]; in double a head near 2^64 wide rounds
        // up to 2^64, which no cast may take (found by fuzz_hf_config).
        const double product = static_cast<double>(head_width()) * attention.rotary_fraction;
        const std::uint64_t rotated =
            product >= static_cast<double>(head_width()) ? head_width() : static_cast<std::uint64_t>(product);
        return rotated - rotated % 2;
    }
};

// The tasks each stack trains.
constexpr bool supports_task(const model_spec& m, task t) {
    switch (m.stack) {
        case stack_kind::encoder:
            return m.embedding.patches() ? t == task::image_cls : (t == task::seq_cls || t == task::masked_lm);
        case stack_kind::decoder: return t == task::causal_lm || t == task::seq_cls;
        case stack_kind::encoder_decoder: return t == task::seq2seq;
    }
    return false;
}

// Rejects specs that no transformers model could have, naming the field to fix.
constexpr void validate(const model_spec& m) {
    using detail::require;
    require(m.hidden > 0, "anatomy::validate(model_spec): hidden must be > 0");
    require(m.layers > 0, "anatomy::validate(model_spec): layers must be > 0");
    require(m.attention.heads > 0, "anatomy::validate(model_spec): heads must be > 0");
    require(m.embedding.patches() || m.embedding.vocab > 0, "anatomy::validate(model_spec): vocab must be > 0");
    require(m.mlp.hidden > 0, "anatomy::validate(model_spec): mlp.hidden (the FFN width) must be > 0");
    require(m.attention.head_dim != 0 || m.hidden % m.attention.heads == 0,
            "anatomy::validate(model_spec): hidden must be a multiple of heads, or set attention.head_dim");
    require(m.kv_head_count() <= m.attention.heads && m.attention.heads % m.kv_head_count() == 0,
            "anatomy::validate(model_spec): heads must be a multiple of kv_heads");
    require(m.attention.rotary_fraction > 0.0 && m.attention.rotary_fraction <= 1.0,
            "anatomy::validate(model_spec): attention.rotary_fraction (partial rotary) must be in (0, 1]");
    require(m.attention.positions != position_kind::rotary || m.rotary_width() > 0,
            "anatomy::validate(model_spec): partial rotary rotates no feature of a head; raise rotary_fraction");
    require(m.attention.logit_softcap >= 0.0 && m.head.logit_softcap >= 0.0,
            "anatomy::validate(model_spec): soft-capping values must be >= 0 (0: none)");
    require(m.attention.dropout >= 0.0 && m.attention.dropout < 1.0 && m.block.dropout >= 0.0 &&
                m.block.dropout < 1.0 && m.embedding.dropout >= 0.0 && m.embedding.dropout < 1.0 &&
                m.mlp.dropout >= 0.0 && m.mlp.dropout < 1.0 && m.head.classifier_dropout >= 0.0 &&
                m.head.classifier_dropout < 1.0,
            "anatomy::validate(model_spec): dropout probabilities must be in [0, 1)");
    require(m.pattern.length >= 1 && m.pattern.length <= m.pattern.windows.size(),
            "anatomy::validate(model_spec): pattern.length must be in [1, 8]");
    require(m.pattern.uniform() || m.stack != stack_kind::encoder_decoder,
            "anatomy::validate(model_spec): sliding-window layers are modelled for encoder or decoder stacks only");
    require(m.stack != stack_kind::encoder_decoder || m.decoder_layers > 0,
            "anatomy::validate(model_spec): an encoder-decoder model needs decoder_layers > 0");
    require(m.attention.positions != position_kind::relative_bias || m.attention.relative_buckets > 0,
            "anatomy::validate(model_spec): a relative position bias needs attention.relative_buckets > 0");
    require(!m.embedding.patches() || (m.embedding.image_size >= m.embedding.patch_size && m.embedding.channels > 0),
            "anatomy::validate(model_spec): a patch embedding needs image_size >= patch_size and channels > 0");
    require(!m.embedding.patches() || m.stack == stack_kind::encoder,
            "anatomy::validate(model_spec): patch embeddings (ViT) need an encoder stack");
    require(m.embedding.reserved_positions <= m.embedding.positions,
            "anatomy::validate(model_spec): embedding.reserved_positions exceeds embedding.positions");
    require(supports_task(m, m.head.kind),
            m.stack == stack_kind::encoder
                ? (m.embedding.patches() ? "anatomy::validate(model_spec): a patch (ViT) encoder supports task image-cls only"
                                         : "anatomy::validate(model_spec): an encoder supports task seq-cls or masked-lm")
            : m.stack == stack_kind::decoder
                ? "anatomy::validate(model_spec): a decoder-only model supports causal-lm or seq-cls, not seq2seq"
                : "anatomy::validate(model_spec): an encoder-decoder supports task seq2seq only");
    require((m.head.kind != task::seq_cls && m.head.kind != task::image_cls) || m.head.num_labels > 0,
            "anatomy::validate(model_spec): a classifier needs num_labels > 0");
    require(m.block.residual == residual_kind::sequential || m.block.placement == norm_placement::pre,
            "anatomy::validate(model_spec): a parallel residual block needs pre-norm placement");
    const experts_part& e = m.experts;
    require(!e.enabled() || (e.top_k >= 1 && e.top_k <= e.count),
            "anatomy::validate(model_spec): experts.top_k (num_experts_per_tok) must be in [1, experts.count]");
    require(!e.enabled() || e.hidden > 0, "anatomy::validate(model_spec): experts.hidden (moe_intermediate_size) must be > 0");
    require(e.first_dense <= m.layers,
            "anatomy::validate(model_spec): experts.first_dense (first_k_dense_replace) exceeds the layers");
    require(!e.enabled() || (m.stack == stack_kind::decoder && m.block.residual == residual_kind::sequential),
            "anatomy::validate(model_spec): experts are modelled in sequential decoder layers");
    require(!m.attention.latent() ||
                (m.attention.rope_head_dim > 0 && m.attention.rope_head_dim < m.head_width() && m.stack == stack_kind::decoder),
            "anatomy::validate(model_spec): latent attention needs 0 < rope_head_dim < head_dim (qk_nope + qk_rope)");
}

}  // namespace anatomy
