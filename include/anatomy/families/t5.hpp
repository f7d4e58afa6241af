// T5: an encoder-decoder with a relative position bias and T5's RMSNorm.
// transformers 5 ties its LM head to `shared` whatever tie_word_embeddings
// says; the published flag only decides whether the decoder output is
// rescaled by d_model^-0.5 before the head.
#pragma once

#include <anatomy/families/sizes.hpp>
#include <anatomy/model.hpp>

namespace anatomy::families {

struct t5_sizes {
    std::uint64_t vocab = 32128;
    std::uint64_t d_model = 0;
    std::uint64_t d_kv = 0;
    std::uint64_t d_ff = 0;
    std::uint64_t layers = 0;
    std::uint64_t decoder_layers = 0;  // 0: as many as layers
    std::uint64_t heads = 0;
    std::uint64_t buckets = 32;
};

constexpr model_spec t5(const t5_sizes& s, bool gated = false, activation act = activation::relu,
                        bool scale_decoder_outputs = true, double dropout = 0.1) {
    model_spec m{};
    m.model_type = "t5";
    m.stack = stack_kind::encoder_decoder;
    m.hidden = s.d_model;
    m.layers = s.layers;
    m.decoder_layers = s.decoder_layers == 0 ? s.layers : s.decoder_layers;
    // T5's dropout_rate drops attention probabilities, branch outputs, the
    // MLP's hidden states and the embeddings alike.
    m.attention = {.heads = s.heads, .head_dim = s.d_kv, .positions = position_kind::relative_bias,
                   .relative_buckets = s.buckets, .dropout = dropout};
    m.mlp = {.kind = gated ? mlp_kind::gated : mlp_kind::plain, .hidden = s.d_ff, .act = act, .dropout = dropout};
    m.norm = {.kind = norm_kind::rms_norm, .style = rms_style::t5};
    m.block = {.dropout = dropout};
    m.embedding = {.vocab = s.vocab, .dropout = dropout};
    m.head = {.kind = task::seq2seq, .tied = true, .loss_upcast = false, .rescale_before_head = scale_decoder_outputs};
    return m;
}

}  // namespace anatomy::families
