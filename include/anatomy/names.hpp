// The names of enum values as users write them ("seq-cls", "adamw-fused"),
// shared by the CLI, JSON output and error messages.
#pragma once

#include <anatomy/device.hpp>
#include <anatomy/dtype.hpp>
#include <anatomy/model.hpp>
#include <anatomy/recipe.hpp>

#include <array>
#include <optional>
#include <string_view>

namespace anatomy {

// One row of an enum's name table. An aggregate, not std::pair: thirteen
// pair instantiations cost every TU that includes this header about 0.07 s.
template <class Enum>
struct enum_name {
    Enum value;
    std::string_view name;
};

template <class Enum>
struct enum_names;  // specialized below: `table` maps each value to its name

template <class Enum>
concept NamedEnum = requires { enum_names<Enum>::table; };

template <>
struct enum_names<stack_kind> {
    static constexpr std::string_view what = "stack";
    static constexpr std::array<enum_name<stack_kind>, 3> table{
        {{stack_kind::encoder, "encoder"}, {stack_kind::decoder, "decoder"}, {stack_kind::encoder_decoder, "encoder-decoder"}}};
};

template <>
struct enum_names<task> {
    static constexpr std::string_view what = "task";
    static constexpr std::array<enum_name<task>, 5> table{{{task::causal_lm, "causal-lm"},
                                                                             {task::seq_cls, "seq-cls"},
                                                                             {task::seq2seq, "seq2seq"},
                                                                             {task::masked_lm, "masked-lm"},
                                                                             {task::image_cls, "image-cls"}}};
};

template <>
struct enum_names<dtype> {
    static constexpr std::string_view what = "dtype";
    static constexpr std::array<enum_name<dtype>, 3> table{
        {{dtype::fp32, "fp32"}, {dtype::bf16, "bf16"}, {dtype::fp16, "fp16"}}};
};

template <>
struct enum_names<autocast_mode> {
    static constexpr std::string_view what = "autocast";
    static constexpr std::array<enum_name<autocast_mode>, 3> table{
        {{autocast_mode::off, "off"}, {autocast_mode::fp16, "fp16"}, {autocast_mode::bf16, "bf16"}}};
};

template <>
struct enum_names<master_weights> {
    static constexpr std::string_view what = "master weights";
    static constexpr std::array<enum_name<master_weights>, 2> table{
        {{master_weights::none, "none"}, {master_weights::fp32, "fp32"}}};
};

template <>
struct enum_names<optimizer_kind> {
    static constexpr std::string_view what = "optimizer";
    static constexpr std::array<enum_name<optimizer_kind>, 11> table{{
        {optimizer_kind::adamw, "adamw"},
        {optimizer_kind::adamw_fused, "adamw-fused"},
        {optimizer_kind::adamw_forloop, "adamw-forloop"},
        {optimizer_kind::sgd, "sgd"},
        {optimizer_kind::sgd_momentum, "sgd-momentum"},
        {optimizer_kind::adafactor, "adafactor"},
        {optimizer_kind::adam8bit, "adam8bit"},
        {optimizer_kind::lion, "lion"},
        {optimizer_kind::lion8bit, "lion8bit"},
        {optimizer_kind::paged_adamw8bit, "paged-adamw8bit"},
        {optimizer_kind::none, "none"},
    }};
};

template <>
struct enum_names<attention_kernel> {
    static constexpr std::string_view what = "attention";
    static constexpr std::array<enum_name<attention_kernel>, 2> table{
        {{attention_kernel::sdpa, "sdpa"}, {attention_kernel::eager, "eager"}}};
};

template <>
struct enum_names<figure_source> {
    static constexpr std::string_view what = "figure source";
    static constexpr std::array<enum_name<figure_source>, 4> table{
        {{figure_source::measured, "measured"},
         {figure_source::pytorch_source, "pytorch-source"},
         {figure_source::public_reports, "public-reports"},
         {figure_source::carried_over, "carried-over-from-h200"}}};
};

template <>
struct enum_names<quantization> {
    static constexpr std::string_view what = "quantization";
    static constexpr std::array<enum_name<quantization>, 4> table{
        {{quantization::none, "none"}, {quantization::nf4, "nf4"}, {quantization::fp4, "fp4"}, {quantization::int8, "int8"}}};
};

template <>
struct enum_names<checkpoint_impl> {
    static constexpr std::string_view what = "checkpoint implementation";
    static constexpr std::array<enum_name<checkpoint_impl>, 3> table{{{checkpoint_impl::as_enabled, "as-enabled"},
                                                                      {checkpoint_impl::non_reentrant, "non-reentrant"},
                                                                      {checkpoint_impl::reentrant, "reentrant"}}};
};

template <>
struct enum_names<training_loop> {
    static constexpr std::string_view what = "loop";
    static constexpr std::array<enum_name<training_loop>, 3> table{
        {{training_loop::plain, "plain"}, {training_loop::loss_only, "loss-only"}, {training_loop::hf_trainer, "hf-trainer"}}};
};

template <>
struct enum_names<parallelism> {
    static constexpr std::string_view what = "parallelism";
    static constexpr std::array<enum_name<parallelism>, 6> table{
        {{parallelism::none, "none"},
         {parallelism::ddp, "ddp"},
         {parallelism::fsdp, "fsdp"},
         {parallelism::zero1, "zero1"},
         {parallelism::zero2, "zero2"},
         {parallelism::zero3, "zero3"}}};
};

template <>
struct enum_names<offload_target> {
    static constexpr std::string_view what = "offload";
    static constexpr std::array<enum_name<offload_target>, 3> table{
        {{offload_target::none, "none"}, {offload_target::optimizer, "optimizer"}, {offload_target::params, "params"}}};
};

template <>
struct enum_names<offload_device> {
    static constexpr std::string_view what = "offload device";
    static constexpr std::array<enum_name<offload_device>, 2> table{
        {{offload_device::cpu, "cpu"}, {offload_device::nvme, "nvme"}}};
};

template <NamedEnum Enum>
constexpr std::string_view name_of(Enum value) {
    for (const auto& [v, name] : enum_names<Enum>::table)
        if (v == value) return name;
    throw error("anatomy::name_of: value has no name");
}

template <NamedEnum Enum>
constexpr std::optional<Enum> parse_name(std::string_view name) {
    for (const auto& [v, n] : enum_names<Enum>::table)
        if (n == name) return v;
    return std::nullopt;
}

}  // namespace anatomy
