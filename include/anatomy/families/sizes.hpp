// The sizes every family builder takes: what a config.json must give.
#pragma once

#include <cstdint>

namespace anatomy::families {

struct sizes {
    std::uint64_t vocab = 0;
    std::uint64_t hidden = 0;
    std::uint64_t layers = 0;
    std::uint64_t heads = 0;
    std::uint64_t kv_heads = 0;  // 0: as many as heads
    std::uint64_t head_dim = 0;  // 0: hidden / heads
    std::uint64_t ffn = 0;       // the MLP's intermediate width
    bool tied = false;           // tie_word_embeddings
};

}  // namespace anatomy::families
