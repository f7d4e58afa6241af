// The llm.c execution profile. karpathy/llm.c's train_gpt2.cu gives every
// buffer its own cudaMalloc: the cuBLASLt workspace, the parameters, their
// gradients, one activation arena, the batch, AdamW's m and v and the fp32
// master weights. Its device memory is that short list, to the byte.
#pragma once

#include <anatomy/bytes.hpp>
#include <anatomy/detail/checked.hpp>
#include <anatomy/detail/static_vector.hpp>
#include <anatomy/driver.hpp>
#include <anatomy/dtype.hpp>
#include <anatomy/error.hpp>
#include <anatomy/max_batch.hpp>
#include <anatomy/model.hpp>

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>
#include <type_traits>

namespace anatomy::llmc {

// train_gpt2.cu's GPT2Config.
struct gpt2_config {
    std::uint64_t max_seq_len = 0;
    std::uint64_t vocab = 0;
    std::uint64_t padded_vocab = 0;  // rows of wte: the vocabulary padded for its kernels
    std::uint64_t layers = 0;
    std::uint64_t heads = 0;
    std::uint64_t channels = 0;
};

// llm.c pads the vocabulary to a multiple of 128 (50257 -> 50304).
inline constexpr std::uint64_t vocab_padding = 128;

constexpr std::uint64_t padded_vocab(std::uint64_t vocab) {
    return detail::checked_mul((vocab + vocab_padding - 1) / vocab_padding, vocab_padding);
}

// The llm.c model of a GPT-2 spec (a preset or an HF GPT-2 config.json).
constexpr gpt2_config from_model(const model_spec& m) {
    validate(m);
    detail::require(m.model_type == "gpt2",
                    "anatomy::llmc::from_model: llm.c's train_gpt2.cu trains GPT-2 models only; pass a gpt2 "
                    "preset, a GPT-2 config.json or an llm.c descriptor such as d12");
    detail::require(m.mlp.hidden == detail::checked_mul(4, m.hidden) && m.kv_head_count() == m.heads() &&
                        anatomy::detail::checked_mul(m.head_width(), m.heads()) == m.hidden && m.head.tied && m.head.kind == task::causal_lm,
                    "anatomy::llmc::from_model: llm.c's GPT-2 has a 4x MLP, no GQA, tied embeddings and an LM "
                    "head; this spec differs, so llm.c cannot train it");
    return {m.embedding.positions, m.embedding.vocab, padded_vocab(m.embedding.vocab), m.layers, m.heads(), m.hidden};
}

namespace detail {
constexpr std::optional<std::uint64_t> parse_count(std::string_view digits) {
    if (digits.empty() || digits.size() > 9) return std::nullopt;
    std::uint64_t n = 0;
    for (char c : digits) {
        if (c < '0' || c > '9') return std::nullopt;
        n = n * 10 + static_cast<std::uint64_t>(c - '0');
    }
    return n;
}
}  // namespace detail

// The model of an llm.c `-e` descriptor: "d12" or "gpt2:d12" (GPT-2 by depth)
// and "gpt3:c768" (GPT-3 by width), with llm.c's own table. nullopt for a
// descriptor llm.c rejects.
constexpr std::optional<gpt2_config> from_descriptor(std::string_view descriptor) {
    const auto gpt2 = [](std::uint64_t depth) -> std::optional<gpt2_config> {
        struct row { std::uint64_t depth, channels, heads; };
        constexpr row table[] = {{6, 384, 6},    {12, 768, 12},   {24, 1024, 16}, {36, 1280, 20},
                                 {48, 1600, 25}, {60, 1920, 30}, {72, 2880, 30}, {84, 3456, 36}};
        for (const row& r : table)
            if (r.depth == depth) return gpt2_config{1024, 50257, 50304, r.depth, r.heads, r.channels};
        return std::nullopt;
    };
    const auto gpt3 = [](std::uint64_t channels) -> std::optional<gpt2_config> {
        struct row { std::uint64_t channels, depth, head_size; };
        constexpr row table[] = {{384, 6, 64},     {768, 12, 64},    {1024, 24, 64},  {1536, 24, 96},
                                 {2048, 24, 128},  {2560, 32, 80},   {4096, 32, 128}, {5140, 40, 128},
                                 {12288, 96, 128}};
        for (const row& r : table)
            // llm.c asserts channels % head_size == 0, which its own 5140 row fails.
            if (r.channels == channels && channels % r.head_size == 0)
                return gpt2_config{2048, 50257, 50304, r.depth, channels / r.head_size, channels};
        return std::nullopt;
    };
    if (descriptor.starts_with("gpt2:d")) descriptor.remove_prefix(5);
    if (descriptor.size() > 1 && descriptor[0] == 'd') {
        const auto depth = detail::parse_count(descriptor.substr(1));
        return depth ? gpt2(*depth) : std::nullopt;
    }
    if (descriptor.starts_with("gpt3:c")) {
        const auto channels = detail::parse_count(descriptor.substr(6));
        return channels ? gpt3(*channels) : std::nullopt;
    }
    return std::nullopt;
}

// How train_gpt2.cu was built and started.
struct run_config {
    dtype floatx = dtype::bf16;   // PRECISION=BF16 (the default build) or FP32
    int recompute = 1;            // -r: 0 none, 1 GELU, 2 GELU and LayerNorm
    bool cudnn = false;           // built with USE_CUDNN=1 (cuDNN flash attention)
    bool master_weights = true;   // -w 1: an fp32 copy of the parameters for AdamW
};

constexpr void validate(const run_config& run) {
    anatomy::detail::require(run.floatx == dtype::bf16 || run.floatx == dtype::fp32,
                             "anatomy::llmc::validate: llm.c builds in bf16 or fp32; pass floatx bf16 or fp32");
    anatomy::detail::require(run.recompute >= 0 && run.recompute <= 2,
                             "anatomy::llmc::validate: recompute is llm.c's -r, 0, 1 or 2");
    anatomy::detail::require(!run.cudnn || run.floatx == dtype::bf16,
                             "anatomy::llmc::validate: llm.c's cuDNN attention needs the bf16 build");
}

constexpr void validate(const gpt2_config& c, std::uint64_t batch, std::uint64_t seq) {
    anatomy::detail::require(c.layers > 0 && c.heads > 0 && c.channels > 0 && c.channels % c.heads == 0 &&
                                 c.padded_vocab >= c.vocab && c.vocab > 0,
                             "anatomy::llmc::validate: the GPT-2 config needs layers, heads, channels (a multiple "
                             "of heads) and a vocabulary");
    anatomy::detail::require(batch > 0 && seq > 0, "anatomy::llmc::validate: batch and seq must be > 0");
    anatomy::detail::require(seq <= c.max_seq_len,
                             "anatomy::llmc::validate: llm.c asserts T <= max_seq_len (the wpe rows); lower seq");
}

// One tensor of llm.c's activation arena (fill_in_activation_sizes), in order.
struct arena_tensor {
    std::string_view name;
    std::uint64_t elements = 0;
    dtype type = dtype::bf16;
    constexpr bytes size() const { return elements * size_of(type); }
};

inline constexpr std::size_t arena_tensor_count = 21;

constexpr std::array<arena_tensor, arena_tensor_count> activation_arena(const gpt2_config& c, const run_config& run,
                                                                        std::uint64_t B, std::uint64_t T) {
    validate(run);
    validate(c, B, T);
    using anatomy::detail::checked_mul;
    const dtype x = run.floatx;
    const std::uint64_t L = c.layers, NH = c.heads, C = c.channels, Vp = c.padded_vocab;
    const std::uint64_t BT = checked_mul(B, T);
    const std::uint64_t BTC = checked_mul(BT, C);
    const std::uint64_t LBT = checked_mul(L, BT);
    const std::uint64_t LBTC = checked_mul(L, BTC);
    std::uint64_t widest = checked_mul(3, C);  // the output buffer doubles as (B,T,3C), (B,NH,T,T) scratch and logits
    if (checked_mul(NH, T) > widest) widest = checked_mul(NH, T);
    if (Vp > widest) widest = Vp;
    return {{
        {"encoded", BTC, x},
        {"ln1", run.recompute < 2 ? LBTC : 0, x},
        {"ln1_mean", LBT, dtype::fp32},
        {"ln1_rstd", LBT, dtype::fp32},
        {"atty", LBTC, x},
        // cuDNN keeps only the softmax statistics; llm.c's own attention the whole (T, T) matrix.
        {"att", run.cudnn ? checked_mul(LBT, NH) : checked_mul(checked_mul(LBT, NH), T), run.cudnn ? dtype::fp32 : x},
        {"residual2", LBTC, x},
        {"ln2", run.recompute < 2 ? LBTC : 0, x},
        {"ln2_mean", LBT, dtype::fp32},
        {"ln2_rstd", LBT, dtype::fp32},
        {"fch", checked_mul(LBTC, 4), x},
        {"fch_gelu", run.recompute < 1 ? checked_mul(LBTC, 4) : checked_mul(BTC, 4), x},
        {"residual3", LBTC, x},
        {"lnf", BTC, x},
        {"lnf_mean", BT, dtype::fp32},
        {"lnf_rstd", BT, dtype::fp32},
        {"losses", BT, dtype::fp32},
        {"qkvr", checked_mul(LBTC, 3), x},
        {"output", checked_mul(BT, widest), x},
        {"scratch_bt4c", checked_mul(BTC, 4), x},
        {"scratch_btc", BTC, x},
    }};
}

constexpr std::uint64_t parameter_count(const gpt2_config& c) {
    using anatomy::detail::checked_add;
    using anatomy::detail::checked_mul;
    const std::uint64_t C = c.channels, L = c.layers;
    // Per layer: ln1 w+b (2C), qkv w+b (3C^2 + 3C), attn proj w+b (C^2 + C),
    // ln2 w+b (2C), fc w+b (4C^2 + 4C), fc proj w+b (4C^2 + C): 12C^2 + 13C.
    const std::uint64_t per_layer = checked_add(checked_mul(12, checked_mul(C, C)), checked_mul(13, C));
    return checked_add(checked_add(checked_mul(c.padded_vocab, C), checked_mul(c.max_seq_len, C)),
                       checked_add(checked_mul(L, per_layer), checked_mul(2, C)));
}

// cublas_common.h: one 32 MiB cuBLASLt workspace ("only Hopper needs 32").
inline constexpr bytes cublaslt_workspace = 32 * MiB;

// A device buffer train_gpt2.cu allocates, with the ledger entry it belongs to.
struct buffer {
    std::string_view name;
    std::string_view entry;  // weights, gradients, master_weights, optimizer_state, activations, temporaries
    bytes size;
};

using buffer_list = anatomy::detail::static_vector<buffer, 12>;

// Every cudaMalloc of a training run, in the order train_gpt2.cu makes them:
// common_start, the model build, then gpt2_allocate_state.
constexpr buffer_list allocations(const gpt2_config& c, const run_config& run, std::uint64_t B, std::uint64_t T) {
    bytes arena{};
    for (const arena_tensor& t : activation_arena(c, run, B, T)) arena += t.size();
    const std::uint64_t params = parameter_count(c);
    const bytes parameters = params * size_of(run.floatx);
    const bytes fp32_copy = params * size_of(dtype::fp32);
    const bytes tokens = anatomy::detail::checked_mul(B, T) * size_of(dtype::fp32);  // int32 token ids
    buffer_list list;
    list.push_back({"cublaslt_workspace", "temporaries", cublaslt_workspace});
    list.push_back({"parameters", "weights", parameters});
    list.push_back({"parameter_gradients", "gradients", parameters});
    list.push_back({"activations", "activations", arena});
    list.push_back({"inputs", "activations", tokens});
    list.push_back({"targets", "activations", tokens});
    list.push_back({"accumulated_mean_loss", "activations", size_of(dtype::fp32)});
    list.push_back({"adamw_m", "optimizer_state", fp32_copy});
    list.push_back({"adamw_v", "optimizer_state", fp32_copy});
    if (run.master_weights) list.push_back({"master_weights", "master_weights", fp32_copy});
    return list;
}

// cudnn_att.cpp grows one workspace to what each attention graph asks for:
// 256 bytes in the forward pass, then, in the first backward, the forward's
// is freed and the backward's allocated.
inline constexpr bytes cudnn_forward_workspace = 256 * B;

// The backward's, measured with cuDNN 9.19 on an H200 in 9 runs (T 256 to
// 2048, head sizes 64, 96 and 128, B 1 to 32): 2 bytes per (b, h, t, t), a
// bf16 T x T matrix per head, plus 4 per (b, h, t), an fp32 row statistic,
// plus the forward's 256 bytes. cuDNN picks it; other versions may not.
constexpr bytes cudnn_backward_workspace(const gpt2_config& c, std::uint64_t B, std::uint64_t T) {
    using anatomy::detail::checked_add;
    using anatomy::detail::checked_mul;
    const std::uint64_t rows = checked_mul(checked_mul(B, c.heads), T);
    const std::uint64_t per_row = checked_add(checked_mul(2, T), 4);
    return checked_mul(rows, per_row) * anatomy::B + cudnn_forward_workspace;
}

// What is alive once training runs: every buffer of `allocations`, then the
// cuDNN workspace of the first backward pass.
constexpr buffer_list peak_allocations(const gpt2_config& c, const run_config& run, std::uint64_t B,
                                       std::uint64_t T) {
    buffer_list list = allocations(c, run, B, T);
    if (run.cudnn) list.push_back({"cudnn_workspace", "temporaries", cudnn_backward_workspace(c, B, T)});
    return list;
}

constexpr bytes total(const buffer_list& list) {
    bytes sum{};
    for (const buffer& b : list) sum += b.size;
    return sum;
}

// The device memory `list` takes, each buffer a cudaMalloc of its own.
constexpr bytes device_footprint(const buffer_list& list) {
    cuda_driver driver;
    bytes sum{};
    for (const buffer& b : list) sum += driver.allocate(b.size);
    return sum;
}

// The largest B whose buffers, each a cudaMalloc of its own, fit `budget`
// bytes of device memory (the card minus h200_process_overhead, say); 0 if
// B = 1 does not.
constexpr std::uint64_t max_batch(const gpt2_config& c, const run_config& run, std::uint64_t T, bytes budget,
                                  std::uint64_t limit = max_batch_search_limit) {
    validate(run);
    validate(c, 1, T);
    const auto need = [&](std::uint64_t B) { return device_footprint(peak_allocations(c, run, B, T)); };
    return anatomy::detail::largest_batch_from(1, 0, limit, [&](std::uint64_t B) {
        if (std::is_constant_evaluated()) return need(B) <= budget;
        try {
            return need(B) <= budget;
        } catch (const overflow_error&) {
            return false;  // a batch whose bytes overflow 64 bits fits no device
        }
    });
}

// Device memory the trainer's process holds besides its buffers: the CUDA
// context with llm.c's kernels, the cuBLASLt handle and, built with cuDNN, the
// cuDNN handle. Measured on an H200 (driver 580.159, CUDA 13.0, cuDNN 9.19):
// its "device memory usage" line minus the footprint of every buffer before
// it is 528 MiB in all 9 runs without cuDNN and 536 MiB in all 9 with it. The
// line prints whole MiB, so each is exact to within 1 MiB.
constexpr bytes h200_process_overhead(const run_config& run) { return run.cudnn ? 536 * MiB : 528 * MiB; }

// What train_gpt2.cu prints.
// "allocating N MiB for ...": llm.c divides in integers first, so N is floor(bytes / MiB).
constexpr std::uint64_t printed_mib(bytes size) { return size / MiB; }

// "memory per sequence": the arena divided by B, tensor by tensor.
constexpr bytes bytes_per_sequence(const gpt2_config& c, const run_config& run, std::uint64_t B, std::uint64_t T) {
    bytes sum{};
    for (const arena_tensor& t : activation_arena(c, run, B, T)) sum += bytes{t.size().count / B};
    return sum;
}

// "-> estimated maximum batch size": B + free / bytes_per_sequence, with
// `free` what cudaMemGetInfo reports after gpt2_allocate_state.
constexpr std::uint64_t printed_max_batch(const gpt2_config& c, const run_config& run, std::uint64_t B,
                                          std::uint64_t T, bytes free) {
    return B + free / bytes_per_sequence(c, run, B, T);
}

}  // namespace anatomy::llmc
