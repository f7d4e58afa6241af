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

// RoBERTa numbers positions from padding_idx + 1, so two rows of its table
// are never used.
constexpr std::uint64_t usable_positions(const model_spec& m) {
    return m.arch == architecture::roberta ? (m.max_positions > 2 ? m.max_positions - 2 : 0) : m.max_positions;
}

constexpr void validate(const shape& s, const model_spec& m) {
    detail::require(s.batch > 0, "anatomy::validate(shape): batch must be > 0");
    detail::require(s.seq > 0, "anatomy::validate(shape): seq must be > 0");
    detail::require(positions_of(m.arch) != position_kind::learned || s.seq <= usable_positions(m),
                    "anatomy::validate(shape): seq exceeds the model's learned positions (max_position_embeddings)");
    detail::require(s.target_seq == 0 || family_of(m.arch) == family::encoder_decoder,
                    "anatomy::validate(shape): target_seq applies to encoder-decoder models only");
}

}  // namespace anatomy
