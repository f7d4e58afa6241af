"""What segment_trace.py and context_growth.py share: the arguments that say
which step runs, and a bitsandbytes base loaded as the measurements load
one."""
import tempfile

import torch
from transformers import AutoModelForCausalLM, BitsAndBytesConfig


def add_step_arguments(ap):
    """The model's config.json, the shape, the weights' dtype, checkpointing, a quantized base with LoRA, serving."""
    ap.add_argument("config")
    ap.add_argument("--batch", type=int, required=True)
    ap.add_argument("--seq", type=int, required=True)
    ap.add_argument("--weights", choices=["fp32", "bf16"], default="fp32")
    ap.add_argument("--gc", action="store_true")
    ap.add_argument("--quant", choices=["nf4", "int8"], help="a bitsandbytes base, loaded as measure.py loads it, "
                    "then peft.prepare_model_for_kbit_training and LoRA (needs --lora)")
    ap.add_argument("--lora", type=int, default=0, help="LoRA rank (alpha 16, as the families file)")
    ap.add_argument("--inference", action="store_true", help="forwards under no_grad, as measure_h200.py serves")


def load_quantized_base(cfg, quant, dtype, attn, gc):
    """A bf16 checkpoint saved from the CPU, loaded by from_pretrained onto GPU 0 with NF4 (double quantization, bf16
    compute) or LLM.int8, then peft's prepare_model_for_kbit_training, which with use_gradient_checkpointing turns on
    the reentrant checkpoint itself."""
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
