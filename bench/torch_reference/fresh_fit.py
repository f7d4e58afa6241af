#!/usr/bin/env python3
"""Does batch b train under a memory cap in a fresh process?

Each trial is its own process: set_per_process_memory_fraction(cap), build the
model from its config on the GPU, then 3 training steps at batch b (the
optimizer state is created in step 1, at that batch, as in a real run).
Prints one JSON line per trial: ok or the phase that ran out of memory.

  python3 fresh_fit.py --configs DIR --model gpt2 --seq 1024 --cap-gib 16 --batch 7 [--weights bf16]
                       [--amp bf16|fp16] [--tgt 128]
  python3 fresh_fit.py --configs DIR --spec '{...}' --batch 7

--spec takes a largest-batch search's spec as the data files record it
(tests/data/*maxbatch*.jsonl: model, seq, budget_gib, and the recipe's keys
such as lora, loop, quant, style), so that the trial runs what the search
ran, at the given batch.
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--configs", required=True)
    ap.add_argument("--spec", default="")
    ap.add_argument("--model")
    ap.add_argument("--seq", type=int)
    ap.add_argument("--tgt", type=int, default=0)
    ap.add_argument("--batch", type=int, required=True)
    ap.add_argument("--cap-gib", type=float)
    ap.add_argument("--weights", default="fp32")
    ap.add_argument("--amp", default="")
    ap.add_argument("--gc", action="store_true")
    a = ap.parse_args()

    if a.spec:
        search = json.loads(a.spec)
        spec = {k: v for k, v in search.items() if k not in ("budget_gib", "hi", "name")}
        cap_gib = float(search["budget_gib"])
    elif a.model is None or a.seq is None or a.cap_gib is None:
        ap.error("give --spec, or --model, --seq and --cap-gib")
    else:
        spec = {"model": a.model, "seq": a.seq}
        cap_gib = a.cap_gib
        if a.tgt:
            spec["tgt"] = a.tgt
        if a.weights != "fp32":
            spec["weights"] = a.weights
        if a.amp:
            spec["amp"] = a.amp
        if a.gc:
            spec["gc"] = True
    spec.update(batch=a.batch, name="fresh")

    import torch
    import measure

    total = torch.cuda.get_device_properties(0).total_memory
    torch.cuda.set_per_process_memory_fraction(cap_gib * (1 << 30) / total)
    out = {"spec": spec, "cap_gib": cap_gib}
    try:
        _, rec = measure.run_case(spec, argparse.Namespace(configs=a.configs, trace=False, trace_dir=None))
        out.update(ok=True, peak_alloc=rec["peak_alloc"], peak_reserved=rec["peak_reserved"])
    except torch.OutOfMemoryError as e:
        out.update(ok=False, error=str(e).splitlines()[0][:200])
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
