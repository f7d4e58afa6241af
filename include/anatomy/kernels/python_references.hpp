// When Python lets go of a tensor. Autograd and the kernels free a tensor
// after its last reader, but a Python name can hold it longer, and the
// allocator sees the difference (traced on the H200: a llama-3-8b layer's
// allocator events, tests/calibration/segment_trace_check.cpp's traces):
// - a module's argument is held by its caller until the module returns:
//   `hidden_states = self.mlp(hidden_states)` frees the norm's output after
//   down_proj's output exists, not after up_proj has read it;
// - a module's locals live until it returns (LlamaRMSNorm's fp32 product).
// A kernel's `references` are the tensors whose last name dies after it.
#pragma once

#include <anatomy/error.hpp>
#include <anatomy/graph.hpp>
#include <anatomy/kernels/kernel.hpp>

namespace anatomy::detail {

// Tensor `held` is referenced until kernel k has run.
constexpr void reference_until(kernel& k, tensor_slot held) {
    for (std::uint8_t i = 0; i < k.reference_count; ++i)
        if (k.references[i] == held) return;
    if (k.reference_count == max_references)
        throw error("anatomy::expand: internal error, a kernel ends more Python references than it can hold");
    k.references[k.reference_count++] = held;
}

// The last kernel of op `index` or of an op before it; -1 when none made one.
constexpr std::ptrdiff_t last_kernel_of(const kernel_list& kernels, std::size_t index) {
    for (std::size_t i = kernels.size(); i-- > 0;)
        if (kernels[i].op <= index) return static_cast<std::ptrdiff_t>(i);
    return -1;
}

// Op `in`'s output is named until kernel `last` has run.
constexpr void name_until(expansion& ex, op_input in, std::ptrdiff_t last) {
    if (in < 0 || last < 0) return;  // the stage's input and the encoder's are held by the walk
    const tensor_slot held = ex.op_output[static_cast<std::size_t>(in)];
    if (held >= 0) reference_until(ex.kernels[static_cast<std::size_t>(last)], held);
}

// The end of the run of ops with the same `same` as op `first`.
template <class Same>
constexpr std::size_t run_end(const stage& st, std::size_t first, Same same) {
    std::size_t end = first + 1;
    while (end < st.ops.size() && same(st.ops[end], st.ops[first])) ++end;
    return end;
}

// The names of transformers' module code, as they hold tensors:
// - a module scope (a run of ops with one module_path::scope, "self_attn",
//   "mlp") is called with tensors made outside it, which its caller's
//   variables hold until it returns, after its last op;
// - an attention module keeps what it hands the attention kernel (its
//   query_states, key_states, value_states) until it returns, except the
//   key and value a cache update rebinds: `key_states, value_states =
//   past_key_values.update(...)` names the cache's copies, and the
//   originals die once update() returns (expand_attention);
// - `q, k = apply_rotary_pos_emb(q, k, ...)` rebinds both names once both
//   rotations exist (and, computed in fp32, both are cast back): a run of
//   rotary ops and their casts holds its inputs to its end.
// `cache_rebinds(o)`: whether attention op o's key and value names are
// rebound to a cache's copies.
template <class CacheRebinds>
constexpr void hold_python_names(expansion& ex, const stage& st, CacheRebinds cache_rebinds) {
    for (std::size_t first = 0; first < st.ops.size();) {
        const std::size_t end = run_end(st, first, [](const op& a, const op& b) { return a.module.scope == b.module.scope; });
        if (!st.ops[first].module.scope.empty()) {
            const std::ptrdiff_t last = last_kernel_of(ex.kernels, end - 1);
            for (std::size_t j = first; j < end; ++j) {
                const op& o = st.ops[j];
                const bool attention = o.kind == op_kind::attention;
                const bool rebound = attention && cache_rebinds(o);
                for (std::size_t i = 0; i < o.inputs.size(); ++i) {
                    const op_input in = o.inputs[i];
                    const bool argument = in >= 0 && static_cast<std::size_t>(in) < first;
                    const bool handed_to_attention = attention && !(rebound && (i == 1 || i == 2));
                    if (argument || handed_to_attention) name_until(ex, in, last);
                }
            }
        }
        first = end;
    }
    // A norm module holds its argument until it returns: q_norm(q_proj(x))
    // frees q_proj's output after the norm's output exists.
    for (std::size_t j = 0; j < st.ops.size(); ++j)
        if (st.ops[j].kind == op_kind::norm) name_until(ex, st.ops[j].inputs[0], last_kernel_of(ex.kernels, j));
    // One apply_rotary_pos_emb call: its rotations and casts back.
    const auto rope_call = [](const op& o) { return o.kind == op_kind::rotary || o.kind == op_kind::rotary_cast; };
    for (std::size_t first = 0; first < st.ops.size();) {
        const std::size_t end = run_end(st, first, [&](const op& a, const op& b) { return rope_call(a) && rope_call(b); });
        if (st.ops[first].kind == op_kind::rotary) {
            const std::ptrdiff_t last = last_kernel_of(ex.kernels, end - 1);
            for (std::size_t j = first; j < end; ++j) name_until(ex, st.ops[j].inputs[0], last);
        }
        first = end;
    }
}

}  // namespace anatomy::detail
