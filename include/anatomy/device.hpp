// Device profiles: what the estimate needs to know of a GPU, and where each
// figure comes from. The default is the measured H200; the H100 80GB is
// measured too.
#pragma once

#include <anatomy/bytes.hpp>
#include <anatomy/detail/checked.hpp>
#include <anatomy/dtype.hpp>

#include <array>
#include <cstdint>
#include <string_view>

namespace anatomy {

// Where a figure of a profile comes from.
enum class figure_source {
    measured,        // on that card, by this project (bench/torch_reference)
    pytorch_source,  // PyTorch 2.11's rules for the card's architecture
    public_reports,  // the card's datasheet, or what cudaMemGetInfo reports on it
    carried_over,    // measured on the H200, assumed the same
};

// The attention kernel SDPA runs for fused attention.
enum class sdpa_backend { cudnn, flash, efficient };

struct device_profile {
    std::string_view name;
    std::uint32_t major;  // compute capability
    std::uint32_t minor;
    std::uint32_t sms;
    bytes total;  // cudaMemGetInfo's total
    figure_source total_from;
    bytes context;  // CUDA context, loaded kernels and driver reservations, outside the caching allocator
    figure_source context_from;
    // The cuBLAS workspaces and SDPA's kernels below: traced on the card, or PyTorch's rules for it.
    figure_source kernels_from;

    // bf16 kernels need sm80 (torch.cuda.is_bf16_supported(including_emulation=False)).
    constexpr bool has_bf16() const { return major >= 8; }

    // PyTorch 2.11 (CublasHandlePool.cpp): a 32 MiB cuBLAS workspace on sm90,
    // 2 x 4 MiB + 8 x 16 KiB elsewhere, per handle and stream (each thread
    // that multiplies: training has the forward's and autograd's); cuBLASLt
    // 1 MiB of its own. All through the caching allocator. Measured on the
    // H200: 65 MiB in training, 33 MiB in inference.
    constexpr bytes cublas_workspace() const {
        return major == 9 && minor == 0 ? 32 * MiB : 2 * (4 * MiB) + 8 * (16 * KiB);
    }
    static constexpr bytes cublaslt_workspace = 1 * MiB;

    // A sum over tokens stages partial values in at most one 1 MiB block per SM.
    constexpr bytes reduction_staging_cap() const { return detail::checked_mul(sms, MiB.count) * B; }

    // SDPA's choice for fused attention (sdp_utils.cpp, PyTorch 2.11): cuDNN
    // first on sm90, sm100 and sm103 (its head dim up to 256 there), then
    // flash (sm80 to sm121, fp16/bf16, head dim up to 256, no mask), then the
    // memory-efficient kernel (any dtype, any mask).
    constexpr sdpa_backend fused_attention(dtype t, std::uint64_t head_dim, bool masked) const {
        if (!is_half(t)) return sdpa_backend::efficient;
        const bool cudnn_first = (major == 9 || major == 10) && (minor == 0 || minor == 3);
        if (cudnn_first && head_dim <= 256) return sdpa_backend::cudnn;
        const bool flash = major * 10 + minor >= 80 && major * 10 + minor <= 121;
        if (flash && head_dim <= 256 && !masked) return sdpa_backend::flash;
        return sdpa_backend::efficient;
    }
};

namespace detail {
// Measured on an H200 (PyTorch 2.11, CUDA 13): the memory outside the
// caching allocator once a step has run, the largest of ten workloads
// (tests/data/context-growth-h200.jsonl, bench/torch_reference/context_growth.py:
// cudaMemGetInfo's used memory less memory_reserved). It is 618.8 MiB at
// the first CUDA call, and grows as the step's kernels load (lazy module
// loading) and its libraries make their handles: to 694.8 MiB serving,
// 750.8 to 766.8 MiB training (SDPA's kernels, cuBLAS, cuDNN; compiled the
// same), 814.8 MiB with bitsandbytes' LLM.int8. With the first-call figure a
// whole card's budget was 194 MiB too large: llama-3-8b bf16 checkpointed
// at 10 x 4096 was said to fit an H200 and ran out of memory (its 19.57 GiB
// logits with 19.46 GiB free).
inline constexpr bytes h200_context = 854392832 * B;
// Measured on an H100 80GB HBM3 the same way (tests/data/context-growth-h100.jsonl):
// the same figures at the first call, serving and training; LLM.int8 2 MiB
// more than on the H200, from the second step on.
inline constexpr bytes h100_context = 856489984 * B;
}  // namespace detail

namespace devices {
inline constexpr device_profile h200{"h200", 9, 0, 132, 150109880320 * B, figure_source::measured,
                                     detail::h200_context, figure_source::measured, figure_source::measured};
// cudaMemGetInfo's total, 480 MiB below the 81,559 MiB nvidia-smi shows (the
// figure this profile carried before it was measured). Its kernels follow
// PyTorch's sm90 rules, which the H200's traces confirmed; none traced here.
inline constexpr device_profile h100_80gb{"h100-80gb", 9, 0, 132, 85017493504 * B, figure_source::measured,
                                          detail::h100_context, figure_source::measured,
                                          figure_source::pytorch_source};
}  // namespace devices

namespace detail {
// A card this project has not measured: its memory as cudaMemGetInfo reports
// it on that card (public reports), the H200's context, PyTorch's rules.
constexpr device_profile reported(std::string_view name, std::uint32_t major, std::uint32_t minor, std::uint32_t sms,
                                  bytes total) {
    return {name, major, minor, sms, total, figure_source::public_reports, h200_context,
            figure_source::carried_over, figure_source::pytorch_source};
}
}  // namespace detail

inline constexpr std::array device_profiles = {
    detail::reported("v100-16gb", 7, 0, 80, 16945709056 * B),
    detail::reported("v100-32gb", 7, 0, 80, 34089730048 * B),
    detail::reported("a100-40gb", 8, 0, 108, 42505273344 * B),
    detail::reported("a100-80gb", 8, 0, 108, 85198045184 * B),
    devices::h100_80gb,
    devices::h200,
    detail::reported("l4", 8, 9, 58, 23580639232 * B),
    detail::reported("a10", 8, 6, 72, 23836098560 * B),
    detail::reported("rtx3090", 8, 6, 82, 25447170048 * B),
    detail::reported("rtx4090", 8, 9, 128, 25393692672 * B),
};

namespace detail {
constexpr char lower_ascii(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }
constexpr bool same_ignoring_case(std::string_view a, std::string_view b) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i)
        if (lower_ascii(a[i]) != lower_ascii(b[i])) return false;
    return true;
}
}  // namespace detail

// The profiles whose name is `name` or starts with it, ignoring case: one
// for "H200" or "a100-80GB", two for "a100". An exact name wins.
struct device_matches {
    std::array<const device_profile*, device_profiles.size()> found{};
    std::size_t count = 0;
};
constexpr device_matches find_devices(std::string_view name) {
    device_matches m{};
    if (name.empty()) return m;
    for (const device_profile& d : device_profiles)
        if (detail::same_ignoring_case(d.name, name)) {
            m.found[0] = &d;
            m.count = 1;
            return m;
        }
    for (const device_profile& d : device_profiles)
        if (d.name.size() > name.size() && detail::same_ignoring_case(d.name.substr(0, name.size()), name))
            m.found[m.count++] = &d;
    return m;
}

// What the caching allocator may hold on the card: its memory minus its context.
constexpr bytes allocator_budget(const device_profile& d) { return d.total - d.context; }

}  // namespace anatomy
