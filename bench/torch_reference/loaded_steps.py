#!/usr/bin/env python3
"""Three training steps (AdamW, labels = inputs) of a causal LM built with
from_config under torch.device("cuda") (`config`) or loaded with
from_pretrained(device_map={"": 0}) from a checkpoint saved on the CPU
(`loaded`), each in its own process: whether loading changes the step's
reserved memory. Prints one JSON line.

  python3 loaded_steps.py CONFIG.json BATCH SEQ bf16|fp32 config|loaded

results/loaded-steps-h200.jsonl: llama-3.2-1b bf16 at 4 x 2048 and gpt2 fp32
at 8 x 1024, both ways, on the H200 (PyTorch 2.11, transformers 5.17).
"""
import json, sys, os, tempfile, torch
from transformers import AutoConfig, AutoModelForCausalLM
path, b, s, wd = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
dtype = torch.bfloat16 if wd == "bf16" else torch.float32
d = json.load(open(path)); cfg = AutoConfig.for_model(d.pop("model_type"), **{k: v for k, v in d.items() if k != "transformers_version"})
torch.ones(1, device="cuda"); torch.cuda.synchronize()
base = torch.cuda.memory_allocated()
if sys.argv[5] == "loaded":
    tmp = tempfile.mkdtemp(dir="/tmp")
    with torch.device("cpu"):
        AutoModelForCausalLM.from_config(cfg, dtype=dtype).save_pretrained(tmp)
    model = AutoModelForCausalLM.from_pretrained(tmp, dtype=dtype, attn_implementation="sdpa", device_map={"": 0})
else:
    with torch.device("cuda"):
        model = AutoModelForCausalLM.from_config(cfg, dtype=dtype, attn_implementation="sdpa")
model.train()
torch.cuda.reset_peak_memory_stats()
after_model = torch.cuda.memory_reserved()
opt = torch.optim.AdamW(model.parameters(), lr=1e-5)
for step in range(3):
    ids = torch.randint(100, min(cfg.vocab_size, 30000), (b, s), device="cuda")
    out = model(input_ids=ids, labels=ids); out.loss.backward(); del out
    opt.step(); opt.zero_grad(set_to_none=True); del ids
    torch.cuda.synchronize()
print(json.dumps({"config": os.path.basename(path), "how": sys.argv[5], "batch": b, "seq": s, "weights": wd,
                  "reserved_after_model": after_model, "max_reserved": torch.cuda.max_memory_reserved(),
                  "max_allocated": torch.cuda.max_memory_allocated() - base}), flush=True)
