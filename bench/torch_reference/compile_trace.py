#!/usr/bin/env python3
"""Where a torch.compile'd training step peaks: one model, measure.py's bookkeeping (from_config on
the GPU, AdamW, out = model(**batch); out.loss.backward()), three steps; the third step's forward
and backward run under torch.cuda.memory._record_memory_history, and for each phase this prints
every allocation or free of at least --min-mib MiB in order (size, running total) and the live
blocks at the phase's highest point, grouped by size.

Usage: compile_trace.py --configs DIR --model NAME --batch B --seq S [--weights bf16] [--amp bf16]
                        [--loop keep|drop] [--min-mib 8] --out FILE.json
"""
import argparse, collections, json, os

ap = argparse.ArgumentParser()
ap.add_argument("--configs", required=True); ap.add_argument("--model", required=True)
ap.add_argument("--batch", type=int, required=True); ap.add_argument("--seq", type=int, required=True)
ap.add_argument("--weights", default="fp32"); ap.add_argument("--amp", default=None)
ap.add_argument("--loop", default="keep"); ap.add_argument("--min-mib", type=float, default=8)
ap.add_argument("--out", required=True)
a = ap.parse_args()
import torch, transformers
MARK = 12347 * 512

d = dict(json.load(open(os.path.join(a.configs, a.model + ".json"))))
mt = d.pop("model_type"); d.pop("transformers_version", None)
cfg = transformers.AutoConfig.for_model(mt, **d)
wdt = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(a.weights, torch.float32)
base = torch.cuda.memory_allocated()
with torch.device("cuda"):
    model = transformers.AutoModelForCausalLM.from_config(cfg, dtype=wdt, attn_implementation="sdpa")
model.train()
model = torch.compile(model)
opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-5)
ids = torch.randint(100, min(cfg.vocab_size, 30000), (a.batch, a.seq), device="cuda")
batch = {"input_ids": ids, "labels": ids}
amp = torch.autocast("cuda", dtype=torch.bfloat16 if a.amp == "bf16" else torch.float16, enabled=a.amp is not None)
mib = lambda n: round(n / 2**20, 2)


def mark():
    torch.empty(MARK, dtype=torch.uint8, device="cuda"); torch.cuda.synchronize()


def phase(trace, begin, end):
    live, cur, best, best_live, events = {}, 0, -1, None, []
    for i, ev in enumerate(trace[:end]):
        if ev["action"] == "alloc":
            live[ev["addr"]] = ev["size"]; cur += ev["size"]
            if i > begin and ev["size"] >= a.min_mib * 2**20: events.append(("+", mib(ev["size"]), mib(cur)))
        elif ev["action"] == "free_completed" and ev["addr"] in live:
            sz = live.pop(ev["addr"]); cur -= sz
            if i > begin and sz >= a.min_mib * 2**20: events.append(("-", mib(sz), mib(cur)))
        if i == begin:
            at_begin = cur
        if i > begin and cur > best:
            best, best_live = cur, dict(live)
    sizes = collections.Counter(best_live.values())
    return {"at_begin_mib": mib(at_begin), "peak_mib": mib(best), "events": events,
            "live_at_peak": sorted(([mib(s), n, mib(s * n)] for s, n in sizes.items()), key=lambda r: -r[2])[:40]}


rec = {"args": vars(a), "torch": torch.__version__, "steps": []}
for step in range(3):
    tracing = step == 2
    if tracing:
        torch.cuda.memory._record_memory_history(max_entries=1000000, stacks="python")
    torch.cuda.synchronize(); torch.cuda.reset_peak_memory_stats()
    st = {"start": mib(torch.cuda.memory_allocated() - base)}
    if tracing: mark()
    with amp:
        out = model(**batch)
        loss = out.loss
        if a.loop == "drop":
            out = None
    torch.cuda.synchronize()
    if tracing: mark()
    st["fwd_peak"] = mib(torch.cuda.max_memory_allocated() - base); st["after_fwd"] = mib(torch.cuda.memory_allocated() - base)
    torch.cuda.reset_peak_memory_stats()
    loss.backward()
    torch.cuda.synchronize()
    if tracing: mark()
    st["bwd_peak"] = mib(torch.cuda.max_memory_allocated() - base)
    del out, loss
    opt.step(); opt.zero_grad(set_to_none=True)
    rec["steps"].append(st)
    if tracing:
        trace = torch.cuda.memory._snapshot()["device_traces"][0]
        torch.cuda.memory._record_memory_history(enabled=None)
        marks = [i for i, ev in enumerate(trace) if ev["action"] == "alloc" and ev["size"] == MARK]
        rec["forward"] = phase(trace, marks[0], marks[1])
        rec["backward"] = phase(trace, marks[1], marks[2])
json.dump(rec, open(a.out, "w"), indent=1)
print(json.dumps(rec["steps"]))
