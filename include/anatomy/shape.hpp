// The shape of one micro-batch.
#pragma once

#include <anatomy/error.hpp>
#include <anatomy/model.hpp>

#include <cstdint>

namespace anatomy {

struct shape {
    std::uint64_t batch = 1;
    std::uint64_t seq = 0;
    std::uint64_t target_seq = 0;  // decoder (label) length of an encoder-decoder; 0: same as seq
};

constexpr std::uint64_t target_length(const shape& s) { return s.target_seq == 0 ? s.seq : s.target_seq; }

// Rows of a learned position table a sequence may use (RoBERTa and OPT
// keep two before the first position); 0: no table, no limit.
constexpr std::uint64_t usable_positions(const model_spec& m) {
    return m.embedding.positions - m.embedding.reserved_positions;
}

// A ViT's sequence is its patches plus the CLS token, whatever `seq` says.
constexpr std::uint64_t image_tokens(const model_spec& m) { return m.embedding.patch_count() + 1; }

// The shape a step runs: `seq` derived for image models (0 or the derived
// count are accepted there).
constexpr shape resolve(const shape& s, const model_spec& m) {
    shape out = s;
    if (m.embedding.patches()) out.seq = image_tokens(m);
    return out;
}

constexpr void validate(const shape& s, const model_spec& m) {
    detail::require(s.batch > 0, "anatomy::validate(shape): batch must be > 0");
    detail::require(m.embedding.patches() ? (s.seq == 0 || s.seq == image_tokens(m)) : s.seq > 0,
                    m.embedding.patches()
                        ? "anatomy::validate(shape): an image model's seq is its patches + 1; pass seq 0 to derive it"
                        : "anatomy::validate(shape): seq must be > 0");
    detail::require(m.embedding.positions == 0 || m.embedding.patches() || s.seq <= usable_positions(m),
                    "anatomy::validate(shape): seq exceeds the model's learned positions (max_position_embeddings)");
    detail::require(s.target_seq == 0 || m.stack == stack_kind::encoder_decoder,
                    "anatomy::validate(shape): target_seq applies to encoder-decoder models only");
}

}  // namespace anatomy
