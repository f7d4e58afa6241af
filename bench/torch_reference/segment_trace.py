#!/usr/bin/env python3
"""The caching allocator's event history of a few training steps, for comparing
with anatomy's replay event by event: which request opened which segment.

Builds the model as measure_h200.py's families style does (from_config on cuda,
random init), runs `--steps` steps (forward, backward, optimizer.step,
zero_grad(set_to_none=True)) and writes one JSON line per allocator event:
[action, address, size] (with --frames-over-mib, large allocs add their
Python frames) with action alloc | free_completed | segment_alloc |
segment_free (free_requested is dropped), then a summary line.

  python3 segment_trace.py CONFIG.json --batch 1 --seq 4096 --weights bf16 --gc --out trace.jsonl
  python3 segment_trace.py CONFIG.json --batch 5 --seq 2048 --amp bf16 --gc --cap-gib 80 --steps 3 --out trace.jsonl

With --node-names (and --frames-over-mib) the same allocs also get
[autograd node, at:: function], the innermost of each on the C++ stack:
which backward made a gradient (e.g. MulBackward0); the function is most
often the allocation helper itself (at::detail::empty_generic). The C++
stacks take longer; trace a model with few layers.

Under a cap a step that runs out of memory ends the run; the summary's
oom_step names it (null: every step ran), with PyTorch's message and the
failed request's size and Python frames. `--inference` makes each step
measure_h200.py's serving step instead: a forward under no_grad on the
input ids alone (use_cache=False), its output deleted. `--use-cache` serves
as fresh_fit.py's serving searches do: eval() mode, use_cache=True (the KV
cache lives in the output until it is deleted).

  python3 segment_trace.py gemma-3-1b.json --batch 71 --seq 256 --inference --cap-gib 24 --out trace.jsonl
"""
import argparse, json, os, re, sys
import torch
from transformers import AutoConfig, AutoModelForCausalLM

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from step_setup import add_step_arguments, load_quantized_base  # noqa: E402 (beside this script)

ap = argparse.ArgumentParser()
add_step_arguments(ap)
ap.add_argument("--steps", type=int, default=2)
ap.add_argument("--amp", choices=["bf16"], help="torch.autocast(bf16) around the forward")
ap.add_argument("--cap-gib", type=float, help="set_per_process_memory_fraction to this many GiB")
ap.add_argument("--lora-targets", default="q_proj,v_proj")
ap.add_argument("--use-cache", action="store_true", help="with --inference: eval() mode and use_cache=True")
ap.add_argument("--frames-over-mib", type=float,
                help="append the making Python frames (innermost 4) to each alloc at least this many MiB")
ap.add_argument("--node-names", action="store_true",
                help="with --frames-over-mib: record C++ stacks too and add each large alloc's autograd node and at:: function")
ap.add_argument("--out", required=True)
a = ap.parse_args()
if a.use_cache and not a.inference:
    ap.error("--use-cache needs --inference")
if a.inference and (a.gc or a.lora or a.quant):
    ap.error("--inference runs no backward: leave out --gc, --lora and --quant")
if a.quant and not a.lora:
    ap.error("--quant trains LoRA adapters: pass --lora R")
if a.node_names and not a.frames_over_mib:
    ap.error("--node-names needs --frames-over-mib")

d = json.load(open(a.config))
cfg = AutoConfig.for_model(d.pop("model_type"), **{k: v for k, v in d.items() if k != "transformers_version"})
torch.ones(1, device="cuda"); torch.cuda.synchronize()
if a.cap_gib:
    torch.cuda.set_per_process_memory_fraction(a.cap_gib * 2**30 / torch.cuda.get_device_properties(0).total_memory)
torch.cuda.memory._record_memory_history(enabled="all", context="alloc" if a.frames_over_mib else None,
                                        stacks="all" if a.node_names else "python", max_entries=4_000_000)
dtype = torch.bfloat16 if a.weights == "bf16" else torch.float32
if a.quant:
    model = load_quantized_base(cfg, a.quant, dtype, "sdpa", a.gc)
else:
    with torch.device("cuda"):
        model = AutoModelForCausalLM.from_config(cfg, dtype=dtype, attn_implementation="sdpa")
    if a.gc:
        model.gradient_checkpointing_enable()
if a.lora:
    import peft
    if a.gc and not a.quant:
        model.enable_input_require_grads()
    model = peft.get_peft_model(model, peft.LoraConfig(r=a.lora, lora_alpha=16, target_modules=a.lora_targets.split(","),
                                                       lora_dropout=0.0))
model.eval() if a.use_cache else model.train()
opt = None if a.inference else torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-5)
oom_step = None  # under a cap: the step that ran out of memory; the history up to it is still written
oom_message = None
for step in range(a.steps):
    try:
        ids = torch.randint(100, min(cfg.vocab_size, 30000), (a.batch, a.seq), device="cuda")
        if a.inference:
            with torch.no_grad(), torch.autocast("cuda", dtype=torch.bfloat16, enabled=a.amp == "bf16"):
                out = model(input_ids=ids, use_cache=a.use_cache)
            del out, ids
            torch.cuda.synchronize()
            print(f"step {step + 1} done: reserved {torch.cuda.memory_reserved()}", flush=True)
            continue
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=a.amp == "bf16"):
            out = model(input_ids=ids, labels=ids)
        loss = out.loss
        loss.backward(); del out, loss
        opt.step(); opt.zero_grad(set_to_none=True)
        del ids
        torch.cuda.synchronize()
    except torch.OutOfMemoryError as e:
        oom_step = step + 1
        oom_message = str(e)
        print(f"step {step + 1}: out of memory, reserved {torch.cuda.memory_reserved()}", flush=True)
        break
    print(f"step {step + 1} done: reserved {torch.cuda.memory_reserved()}", flush=True)
snap = torch.cuda.memory._snapshot()
torch.cuda.memory._record_memory_history(enabled=None)
# An OOM entry has no address; the summary says where the run stopped.
events = [e for e in snap["device_traces"][0] if e["action"] != "free_requested" and "addr" in e]
# The request that failed, and the Python frames that made it (the op that ran out).
oom = next((e for e in snap["device_traces"][0] if e["action"] == "oom"), None)
oom_request = None if oom is None else {
    "size": oom["size"], "frames": [f"{f['filename'].rsplit('/', 2)[-1]}:{f['line']} {f['name']}" for f in oom.get("frames", [])[:12]]}
with open(a.out, "w") as f:
    for e in events:
        row = [e["action"], e["addr"], e["size"]]
        if a.frames_over_mib and e["action"] == "alloc" and e["size"] >= a.frames_over_mib * 2**20:
            frames = e.get("frames", [])
            python = [f for f in frames if f["filename"].endswith(".py")]
            row.append([f"{f['filename'].rsplit('/', 1)[-1]}:{f['line']} {f['name']}" for f in python[:4]])
            if a.node_names:
                # The innermost autograd node (e.g. MulBackward0) and at:: function on the C++ stack.
                names = [f.get("name", "") for f in frames]
                node = next((m.group(1) for n in names if (m := re.search(r"(\w+Backward\d*)::apply", n))), "")
                op = next((n.split("(")[0] for n in names if n.startswith("at::") and "::_ops::" not in n), "")
                row.append([node, op])
        f.write(json.dumps(row) + "\n")
    f.write(json.dumps({"max_reserved": torch.cuda.max_memory_reserved(), "max_allocated": torch.cuda.max_memory_allocated(),
                        "events": len(events), "steps": a.steps, "oom_step": oom_step, "oom_message": oom_message,
                        "oom_request": oom_request}) + "\n")
print(a.out, len(events), torch.cuda.max_memory_reserved(), torch.cuda.max_memory_allocated())
