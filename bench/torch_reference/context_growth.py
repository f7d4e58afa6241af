#!/usr/bin/env python3
"""Device memory outside PyTorch's caching allocator, as a process trains.

The CUDA context is not all of it: with lazy module loading (CUDA 12+'s
default) each kernel's code is loaded on its first launch, and cuBLAS,
cuDNN and bitsandbytes keep memory of their own. A budget of the card's
memory less the context measured at the first CUDA call is then too
generous once the step has run. For one case per process, this prints one
JSON line with used - reserved (cudaMemGetInfo's used memory less
torch.cuda.memory_reserved()) at the first CUDA call, after the model is
built, and after each of three training steps (or two serving forwards).

  python3 context_growth.py CONFIG.json --batch 1 --seq 4096 --weights bf16 --gc [--amp bf16] [--attn eager]
                            [--quant nf4 --lora 8] [--inference] [--compile] >> $OUT/context.jsonl
"""
import argparse, json, os, sys
import torch
from transformers import AutoConfig, AutoModelForCausalLM

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from step_setup import add_step_arguments, load_quantized_base  # noqa: E402 (beside this script)

ap = argparse.ArgumentParser()
add_step_arguments(ap)
ap.add_argument("--amp", choices=["bf16", "fp16"])
ap.add_argument("--attn", default="sdpa")
ap.add_argument("--compile", action="store_true", help="torch.compile(model), default mode")
a = ap.parse_args()


def outside():
    free, total = torch.cuda.mem_get_info()
    return total - free - torch.cuda.memory_reserved()


torch.ones(1, device="cuda"); torch.cuda.synchronize()
points = {"first_call": outside()}
d = json.load(open(a.config))
cfg = AutoConfig.for_model(d.pop("model_type"), **{k: v for k, v in d.items() if k != "transformers_version"})
dtype = torch.bfloat16 if a.weights == "bf16" else torch.float32
if a.quant:
    import peft
    model = load_quantized_base(cfg, a.quant, dtype, a.attn, a.gc)
    model = peft.get_peft_model(model, peft.LoraConfig(r=a.lora, lora_alpha=16, target_modules=["q_proj", "v_proj"]))
else:
    with torch.device("cuda"):
        model = AutoModelForCausalLM.from_config(cfg, dtype=dtype, attn_implementation=a.attn)
    if a.gc:
        model.gradient_checkpointing_enable()
torch.cuda.synchronize()
points["built"] = outside()
opt = None if a.inference else torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-5)
model.eval() if a.inference else model.train()
if a.compile:
    model = torch.compile(model)
for step in range(2 if a.inference else 3):
    ids = torch.randint(100, min(cfg.vocab_size, 30000), (a.batch, a.seq), device="cuda")
    if a.inference:
        with torch.no_grad():
            out = model(input_ids=ids, use_cache=False)
        del out
    else:
        with torch.autocast("cuda", dtype=torch.bfloat16 if a.amp == "bf16" else torch.float16, enabled=a.amp is not None):
            out = model(input_ids=ids, labels=ids)
        out.loss.backward(); del out
        opt.step(); opt.zero_grad(set_to_none=True)
    torch.cuda.synchronize()
    points[f"step{step + 1}"] = outside()
print(json.dumps({"config": a.config.rsplit("/", 1)[-1], "args": {k: v for k, v in vars(a).items() if k != "config"},
                  "total": torch.cuda.mem_get_info()[1], "outside_allocator": points}), flush=True)
