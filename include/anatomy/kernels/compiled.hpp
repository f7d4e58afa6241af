// torch.compile (inductor, its default mode) over a stage's kernels.
//
// One pass rewrites what eager autograd would do, from the same kernel list:
// - Inductor fuses every kernel it generates (pointwise ops, casts, norms,
//   softmax, reductions) and leaves matmuls, attention and lookups to
//   cuBLAS, cuDNN and aten. A fused kernel's output exists only where it
//   must: read by such an external kernel, read after one (by a later
//   fusion group), the stage's output, or kept by the step. Identical fused
//   kernels (autocast's cast of one input for q, k and v) are computed once.
// - AOTAutograd's min-cut partitioner keeps for backward what costs least:
//   an external kernel keeps what it keeps in eager (a matmul's input,
//   attention's q, k, v, output and log-sum-exp); a fused kernel's saved
//   tensor is recomputed in backward from the tensors it comes from, when
//   those are kept anyway or smaller, else kept itself. Reductions' small
//   outputs are kept (the partitioner bans recomputing an op whose output is
//   4x smaller than its inputs), and so is a softmax's output, unless it is
//   recomputed from the logits the model returns.
// Traced on an H200 (tests/data/compile-h200.jsonl holds the partitioner's
// saved values of every case): llama-3.2-1b keeps per layer the norm inputs
// and rsqrt, the normed q/k/v input, q and k after RoPE, v, the attention
// output and log-sum-exp, gate and up outputs and their product.
#pragma once

#include <anatomy/kernels/kernel.hpp>

#include <array>
#include <cstdint>

namespace anatomy::detail {

constexpr bool same_name(const char* a, const char* b) {
    while (*a != '\0' && *a == *b) {
        ++a;
        ++b;
    }
    return *a == *b;
}

// Kernels inductor calls rather than generates: they read their inputs from
// memory and write a new tensor.
constexpr bool runs_extern(const kernel& k) {
    constexpr std::array names{"addmm",           "matmul",          "bmm",
                               "baddbmm",         "embedding",       "cudnn_attention",
                               "flash_attention", "efficient_attention", "convolution",
                               "lora_A",          "lora_B",          "pixel_values"};
    for (const char* name : names)
        if (same_name(k.what, name)) return true;
    return false;
}

constexpr bool is_softmax(const kernel& k) {
    return same_name(k.what, "softmax") || same_name(k.what, "_safe_softmax") || same_name(k.what, "log_softmax");
}

class stage_compiler {
public:
    // `input_size`: the bytes of the stage's input, which backward may read.
    constexpr stage_compiler(kernel_list& kernels, tensor_slot output, bytes input_size)
        : k_(kernels), input_size_(input_size) {
        merge_duplicates();
        output_ = root(output);
        for (std::size_t i = 0; i < k_.size(); ++i) {
            std::uint16_t level = 0;
            for (tensor_slot s : k_[i].in) {
                if (root(s) < 0) continue;
                const auto r = static_cast<std::size_t>(root(s));
                const auto after = static_cast<std::uint16_t>(level_[r] + (runs_extern(k_[r]) ? 1 : 0));
                if (after > level) level = after;
            }
            level_[i] = level;
        }
    }

    constexpr void run() {
        mark_materialized();
        partition();
        for (std::size_t i = 0; i < k_.size(); ++i) {
            kernel& k = k_[i];
            // No autocast cast cache in a graph: a weight cast is freed after
            // its matmul unless backward keeps it.
            k.caches_weight_copy = false;
            k.reference_count = 0;  // nor Python names: a buffer dies after its last reader
            if (runs_extern(k)) continue;
            // A fused kernel's backward is fused too: no scratch of its own.
            k.backward_workspace = {};
            if (!k.alias && !materialized_[i]) k.out = bytes{};
        }
    }

private:
    constexpr tensor_slot root(tensor_slot s) const {
        while (s >= 0 && k_[static_cast<std::size_t>(s)].alias) s = k_[static_cast<std::size_t>(s)].in[0];
        return s;
    }
    constexpr bytes size_of_slot(tensor_slot s) const {
        return s == input_slot ? input_size_ : s >= 0 ? k_[static_cast<std::size_t>(s)].out : bytes{};
    }
    constexpr bool reduces(std::size_t i) const {
        bytes inputs{};
        for (tensor_slot s : k_[i].in) inputs += size_of_slot(root(s));
        return 4 * k_[i].out.count < inputs.count;
    }
    constexpr bool& saved(tensor_slot s) { return s >= 0 ? saved_[static_cast<std::size_t>(s)] : saved_input_; }

    // A later fused kernel that repeats an earlier one (same op, inputs and
    // output) becomes a view of it.
    constexpr void merge_duplicates() {
        for (std::size_t i = 0; i < k_.size(); ++i) {
            kernel& k = k_[i];
            if (runs_extern(k) || k.alias || k.held || k.base_model_scoped || k.out.count == 0) continue;
            for (std::size_t j = 0; j < i; ++j) {
                const kernel& e = k_[j];
                const bool same_inputs = e.in[0] == k.in[0] && e.in[1] == k.in[1] && e.in[2] == k.in[2];
                if (e.alias || !same_name(e.what, k.what) || !same_inputs || e.out != k.out || e.type != k.type ||
                    e.saved_extra.count != 0 || k.saved_extra.count != 0)
                    continue;
                k.alias = true;
                k.in[0] = static_cast<tensor_slot>(j);
                k.in[1] = k.in[2] = no_slot;
                k.out = bytes{};
                k.saves_inputs = 0;
                k.saves_output = false;
                k.grad_inputs = k.requires_grad ? 1 : 0;
                break;
            }
        }
    }

    constexpr void mark_materialized() {
        for (std::size_t i = 0; i < k_.size(); ++i) {
            const kernel& k = k_[i];
            if (runs_extern(k) || k.held || k.base_model_scoped || static_cast<tensor_slot>(i) == output_) materialized_[i] = true;
            for (tensor_slot s : k.in) {
                const tensor_slot r = root(s);
                if (r < 0) continue;
                if (runs_extern(k) || level_[i] != level_[static_cast<std::size_t>(r)])
                    materialized_[static_cast<std::size_t>(r)] = true;
            }
            // What an external kernel keeps exists and is kept.
            if (runs_extern(k) && k.requires_grad)
                for (std::size_t j = 0; j < 3; ++j)
                    if (k.saves_inputs >> j & 1u) saved(root(k.in[j])) = true;
            if (runs_extern(k) && k.saves_output) saved(static_cast<tensor_slot>(i)) = true;
        }
    }

    // The tensors backward recomputes slot s from: those that exist (or are
    // cheap reductions) on the way up from s.
    struct source_set {
        std::array<tensor_slot, 4> slots{};
        std::uint8_t count = 0;
        bool overflow = false;

        constexpr void add(tensor_slot s) {
            for (std::uint8_t j = 0; j < count; ++j)
                if (slots[j] == s) return;
            if (count == slots.size()) overflow = true;
            else slots[count++] = s;
        }
    };
    constexpr void collect(tensor_slot s, source_set& out) const {
        s = root(s);
        if (s < 0 || materialized_[static_cast<std::size_t>(s)] || reduces(static_cast<std::size_t>(s))) {
            out.add(s);
            return;
        }
        for (tensor_slot in : k_[static_cast<std::size_t>(s)].in)
            if (in != no_slot) collect(in, out);
    }
    // Bytes that keeping `set` adds to what is kept already.
    constexpr bytes cost(const source_set& set) {
        bytes total{};
        for (std::uint8_t j = 0; j < set.count; ++j)
            if (!saved(set.slots[j])) total += size_of_slot(set.slots[j]);
        return total;
    }
    constexpr void keep_sources(const source_set& set, kernel& saver) {
        for (std::uint8_t j = 0; j < set.count; ++j) {
            const tensor_slot s = set.slots[j];
            if (s >= 0) materialized_[static_cast<std::size_t>(s)] = true;
            saved(s) = true;
            bool known = false;
            for (std::uint8_t t = 0; t < saver.recompute_count; ++t) known = known || saver.recomputes_from[t] == s;
            if (known) continue;
            if (saver.recompute_count == max_recompute_sources)
                throw error("anatomy::estimate: a compiled kernel recomputes from more than 4 tensors");
            saver.recomputes_from[saver.recompute_count++] = s;
        }
    }
    // Keeps slot r for `saver`'s backward, or what it is recomputed from.
    // Returns whether r itself is kept.
    constexpr bool keep(tensor_slot r, kernel& saver) {
        if (r < 0 || materialized_[static_cast<std::size_t>(r)] || reduces(static_cast<std::size_t>(r))) {
            if (r >= 0) materialized_[static_cast<std::size_t>(r)] = true;
            saved(r) = true;
            return true;
        }
        source_set set{};
        for (tensor_slot in : k_[static_cast<std::size_t>(r)].in)
            if (in != no_slot) collect(in, set);
        if (set.overflow || !(cost(set) < size_of_slot(r))) {
            materialized_[static_cast<std::size_t>(r)] = true;
            saved(r) = true;
            return true;
        }
        keep_sources(set, saver);
        return false;
    }
    // Whether every tensor kernel i would be recomputed from is in the
    // model's output.
    constexpr bool recomputed_from_outputs(std::size_t i) const {
        source_set set{};
        for (tensor_slot in : k_[i].in)
            if (in != no_slot) collect(in, set);
        for (std::uint8_t j = 0; j < set.count; ++j)
            if (set.slots[j] < 0 || !k_[static_cast<std::size_t>(set.slots[j])].returned) return false;
        return set.count > 0 && !set.overflow;
    }

    constexpr void partition() {
        for (std::size_t i = 0; i < k_.size(); ++i) {
            kernel& k = k_[i];
            if (runs_extern(k) || !k.requires_grad || k.alias) continue;
            std::uint8_t kept = 0;
            for (std::size_t j = 0; j < 3; ++j)
                if ((k.saves_inputs >> j & 1u) && keep(root(k.in[j]), k)) kept |= static_cast<std::uint8_t>(1u << j);
            k.saves_inputs = kept;
            if (!k.saves_output) continue;
            const auto self = static_cast<tensor_slot>(i);
            if (!is_softmax(k)) {
                k.saves_output = keep(self, k);
            } else if (recomputed_from_outputs(i)) {
                source_set set{};
                for (tensor_slot in : k.in)
                    if (in != no_slot) collect(in, set);
                keep_sources(set, k);
                k.saves_output = false;
            } else {
                materialized_[i] = true;
                saved(self) = true;
            }
        }
    }

    kernel_list& k_;
    bytes input_size_{};
    tensor_slot output_ = no_slot;
    std::array<std::uint16_t, max_kernels_per_stage> level_{};
    std::array<bool, max_kernels_per_stage> materialized_{};
    std::array<bool, max_kernels_per_stage> saved_{};
    bool saved_input_ = false;
};

}  // namespace anatomy::detail
