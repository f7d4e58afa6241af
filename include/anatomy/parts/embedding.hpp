// The embedding part: what turns ids (or pixels) into the first hidden states.
#pragma once

#include <cstdint>

namespace anatomy {

struct embedding_part {
    std::uint64_t vocab = 0;
    std::uint64_t positions = 0;        // rows of a learned position table; 0: none
    std::uint64_t reserved_positions = 0;  // rows a learned table never uses (RoBERTa's padding offset, OPT's 2)
    std::uint64_t token_types = 0;      // BERT's segment embeddings
    bool scaled = false;    // Gemma: hidden * sqrt(hidden_size), in the hidden dtype
    bool norm = false;      // a norm on the embeddings (BERT, BLOOM, ModernBERT)
    std::uint64_t projection = 0;  // OPT's word_embed_proj_dim when it differs from hidden: project_in/out
    double dropout = 0.0;
    // ViT: a patch convolution over pixels instead of a token table.
    std::uint64_t image_size = 0;
    std::uint64_t patch_size = 0;
    std::uint64_t channels = 0;

    constexpr bool patches() const { return patch_size != 0; }
    constexpr std::uint64_t patch_count() const {
        return patches() ? (image_size / patch_size) * (image_size / patch_size) : 0;
    }
};

}  // namespace anatomy
