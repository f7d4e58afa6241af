// The cases the property tests run over: every preset up to 1.6 B
// parameters (so that allocator replays stay quick) under eight recipes,
// two of them torch.compile'd (where it is modelled), two LLM.int8 with
// LoRA on the first linear module of a layer.
#pragma once

#include <anatomy/estimate.hpp>
#include <anatomy/presets.hpp>

#include <array>
#include <cstddef>
#include <string_view>

namespace anatomy::testing {

inline constexpr std::size_t property_recipe_count = 8;

inline std::array<recipe, property_recipe_count> property_recipes() {
    return {recipe{.weights = dtype::bf16},
            recipe{.weights = dtype::bf16, .grad_checkpointing = true},
            recipe{.autocast = autocast_mode::bf16},
            recipe{.weights = dtype::bf16, .optimizer = optimizer_kind::none, .inference = true, .kv_cache = true},
            recipe{.weights = dtype::bf16, .compile = true},
            recipe{.autocast = autocast_mode::bf16, .grad_checkpointing = true, .compile = true},
            recipe{.lora = {.rank = 8}, .quantize = quantization::int8},
            recipe{.grad_checkpointing = true, .lora = {.rank = 8}, .quantize = quantization::int8}};
}

// The module name of a model's first linear inside its repeated layers.
inline std::string_view first_layer_linear(const model_spec& spec) {
    for (const stage& st : lower(spec).stages)
        for (const op& o : st.ops)
            if (st.block && o.kind == op_kind::linear) return o.module.name;
    return {};
}

// Calls check(preset name, spec, recipe, k) for every preset of the
// property tests and every recipe of `recipes` it can run (compile only
// where it is modelled), with LoRA aimed at the preset's first layer linear.
template <std::size_t N, class Check>
void for_each_property_case(std::array<recipe, N> recipes, Check check) {
    for (const auto& p : presets::all) {
        const model_spec spec = p.spec();
        if (parameter_count(lower(spec)) > 1'600'000'000ULL) continue;
        const bool compilable = !spec.experts.enabled() && !spec.attention.latent() &&
                                spec.stack != stack_kind::encoder_decoder;
        for (std::size_t k = 0; k < N; ++k) {
            if (recipes[k].compile && !compilable) continue;
            if (recipes[k].lora.enabled()) recipes[k].lora.targets[0] = first_layer_linear(spec);
            check(p.name, spec, recipes[k], k);
        }
    }
}

}  // namespace anatomy::testing
