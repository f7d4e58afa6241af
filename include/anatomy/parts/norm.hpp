// The norm part: which normalization a model uses, and how transformers writes it.
#pragma once

#include <cstdint>

namespace anatomy {

enum class norm_kind { layer_norm, rms_norm };

// How an RMSNorm is written in Python; each style is a different chain of
// kernels, so a different set of temporaries and saved tensors.
enum class rms_style {
    cast_then_scale,   // Llama, Qwen, Mistral, Phi-3: x.float() ... .to(dtype); weight * x
    scale_then_cast,   // OLMo 2: (weight * x.float()).to(dtype)
    unit_offset,       // Gemma: x.float() * (1 + weight.float()), then .type_as(x)
    t5,                // T5: the variance of an fp32 copy scales x in its own dtype
};

struct norm_part {
    norm_kind kind = norm_kind::rms_norm;
    bool bias = true;  // LayerNorm's bias (ModernBERT and OLMo's LayerNorms have none)
    rms_style style = rms_style::cast_then_scale;
};

}  // namespace anatomy
