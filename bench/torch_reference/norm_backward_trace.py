#!/usr/bin/env python3
"""Every allocation and free of one transformers LlamaRMSNorm's forward and
backward on the GPU, with the autograd node and aten op that made it: what
the activation model's RMSNorm kernels must allocate, keep and free.

  python3 norm_backward_trace.py --batch 1 --seq 4096 --hidden 4096 --out norm.jsonl

One JSON line per event: {"phase", "action", "size", "node", "op"}, where
`node` is the innermost autograd node (e.g. PowBackward0) on the C++ stack
and `op` the innermost aten function; phase is "forward" or "backward".
"""
import argparse, json, re, torch
from transformers.models.llama.modeling_llama import LlamaRMSNorm

ap = argparse.ArgumentParser()
ap.add_argument("--batch", type=int, default=1)
ap.add_argument("--seq", type=int, default=4096)
ap.add_argument("--hidden", type=int, default=4096)
ap.add_argument("--dtype", choices=["bf16", "fp32"], default="bf16")
ap.add_argument("--out", required=True)
a = ap.parse_args()
dt = torch.bfloat16 if a.dtype == "bf16" else torch.float32

norm = LlamaRMSNorm(a.hidden).to("cuda", dt)
x = torch.randn(a.batch, a.seq, a.hidden, device="cuda", dtype=dt, requires_grad=True)
g = torch.randn_like(x)
torch.cuda.synchronize()

def frames(e):
    names = [f.get("name", "") for f in e.get("frames", [])]
    node = next((n for n in names if re.search(r"\w+Backward\d*::apply", n)), "")
    node = re.search(r"(\w+Backward\d*)::apply", node).group(1) if node else ""
    op = next((n for n in names if n.startswith("at::") and "::_ops::" not in n), "")
    return node, op.split("(")[0]

marks = {}
torch.cuda.memory._record_memory_history(enabled="all", context="all", stacks="all", max_entries=100000)
y = norm(x)
torch.cuda.synchronize()
marks["backward"] = len(torch.cuda.memory._snapshot()["device_traces"][0])
y.backward(g)
torch.cuda.synchronize()
snap = torch.cuda.memory._snapshot()
torch.cuda.memory._record_memory_history(enabled=None)
with open(a.out, "w") as f:
    for i, e in enumerate(snap["device_traces"][0]):
        if e["action"] not in ("alloc", "free_completed"):
            continue
        node, op = frames(e)
        f.write(json.dumps({"phase": "backward" if i >= marks["backward"] else "forward", "action": e["action"],
                            "size": e["size"], "node": node, "op": op}) + "\n")
print(a.out)
