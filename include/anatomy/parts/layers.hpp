// The layer pattern: which attention each layer runs (full, or a sliding window).
//
// Layers are described as a cycle of at most 8 kinds repeated over the depth
// (Gemma 2: sliding, full; Gemma 3: five sliding, one full; ModernBERT: full,
// sliding, sliding). The estimate stays linear in the layers: a walk covers
// one cycle and extrapolates.
#pragma once

#include <anatomy/error.hpp>

#include <array>
#include <cstdint>

namespace anatomy {

struct layer_pattern {
    // Window of each layer of the cycle, in tokens; 0: full attention.
    // (Llama 4's chunked attention masks like a window of the chunk size.)
    std::array<std::uint64_t, 8> windows{};
    std::uint64_t length = 1;  // layers in the cycle
    // Llama 4: layers without RoPE (its NoPE layers), and a mixture of
    // experts' layers that keep a dense MLP (Maverick's interleave).
    std::array<bool, 8> no_rope{};
    std::array<bool, 8> dense{};

    constexpr std::uint64_t window_of(std::uint64_t layer) const { return windows[layer % length]; }
    constexpr bool no_rope_of(std::uint64_t layer) const { return no_rope[layer % length]; }
    constexpr bool dense_of(std::uint64_t layer) const { return dense[layer % length]; }
    // Layers i and j run the same kernels.
    constexpr bool same_kind(std::uint64_t i, std::uint64_t j) const {
        return window_of(i) == window_of(j) && no_rope_of(i) == no_rope_of(j) && dense_of(i) == dense_of(j);
    }
    constexpr bool uniform() const {
        for (std::uint64_t i = 1; i < length; ++i)
            if (!same_kind(i, 0)) return false;
        return true;
    }
};

// Every layer full.
inline constexpr layer_pattern full_attention{};

// A sliding window of `window` tokens on every layer but each `period`-th
// (the last of each cycle): Gemma 2 (period 2) and Gemma 3 (period 6).
constexpr layer_pattern sliding_except_every(std::uint64_t period, std::uint64_t window) {
    detail::require(period >= 1 && period <= 8, "anatomy::sliding_except_every: period must be in [1, 8]");
    layer_pattern p{};
    p.length = period;
    for (std::uint64_t i = 0; i + 1 < period; ++i) p.windows[i] = window;
    return p;
}

}  // namespace anatomy
