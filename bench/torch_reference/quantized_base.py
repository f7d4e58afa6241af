"""A bitsandbytes base as the measurements load one: a bf16 checkpoint saved
from the CPU, loaded by from_pretrained onto GPU 0 with NF4 (double
quantization, bf16 compute) or LLM.int8, then peft's
prepare_model_for_kbit_training, which with use_gradient_checkpointing turns
on the reentrant checkpoint itself. Shared by segment_trace.py and
context_growth.py."""
import tempfile

import torch
from transformers import AutoModelForCausalLM, BitsAndBytesConfig


def load_quantized_base(cfg, quant, dtype, attn, gc):
    import peft
    saved = tempfile.mkdtemp(dir="/tmp")
    with torch.device("cpu"):
        AutoModelForCausalLM.from_config(cfg, dtype=torch.bfloat16).save_pretrained(saved)
    qcfg = (BitsAndBytesConfig(load_in_8bit=True) if quant == "int8" else
            BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type="nf4", bnb_4bit_use_double_quant=True,
                               bnb_4bit_compute_dtype=torch.bfloat16))
    model = AutoModelForCausalLM.from_pretrained(saved, quantization_config=qcfg, dtype=dtype, attn_implementation=attn,
                                                 device_map={"": 0})
    return peft.prepare_model_for_kbit_training(model, use_gradient_checkpointing=gc)
