#!/usr/bin/env python3
"""What building a model allocates and frees again on the GPU, before any step.

For each CONFIG:CLASS (CLASS: causal, s2s, mlm or cls) it builds the model in
fp32 with the allocator's history recorded, and writes one JSON line: the
allocations, the transients (blocks freed while the model was built, 1 MiB or
more, by their allocation's and free's index among the events), the
parameters' bytes, and with --loaded the segments and reserved bytes.

  from_config under torch.device("cuda"), as measure_h200.py builds:
    python3 construction.py gpt2.json:causal flan-t5-base.json:s2s bert-base.json:mlm
  from_pretrained(device_map={"": 0}) of a checkpoint saved from the CPU:
    python3 construction.py --loaded gemma-3-1b.json:causal

Writes $OUT/construction.jsonl (or --out). results/construction-h200.jsonl
holds both kinds of run, made on the H200 (PyTorch 2.11, transformers 5.17).
"""
import argparse, json, os, tempfile
import torch
from transformers import (AutoConfig, AutoModelForCausalLM, AutoModelForMaskedLM, AutoModelForSeq2SeqLM,
                          AutoModelForSequenceClassification)

CLASSES = {"causal": AutoModelForCausalLM, "s2s": AutoModelForSeq2SeqLM, "mlm": AutoModelForMaskedLM,
           "cls": AutoModelForSequenceClassification}

ap = argparse.ArgumentParser()
ap.add_argument("models", nargs="+", help="CONFIG.json:CLASS")
ap.add_argument("--loaded", action="store_true", help="from_pretrained of a saved checkpoint instead of from_config")
ap.add_argument("--out", default=os.path.join(os.environ.get("OUT", "."), "construction.jsonl"))
a = ap.parse_args()

torch.ones(1, device="cuda"); torch.cuda.synchronize()
with open(a.out, "a") as out:
    for item in a.models:
        path, kind = item.rsplit(":", 1)
        d = json.load(open(path))
        cfg = AutoConfig.for_model(d.pop("model_type"), **{k: v for k, v in d.items() if k != "transformers_version"})
        cls = CLASSES[kind]
        if a.loaded:
            saved = tempfile.mkdtemp(dir="/tmp")
            with torch.device("cpu"):
                cls.from_config(cfg, dtype=torch.float32).save_pretrained(saved)
        torch.cuda.memory._record_memory_history(enabled="all", context=None, stacks="python", max_entries=1_000_000)
        if a.loaded:
            model = cls.from_pretrained(saved, dtype=torch.float32, attn_implementation="sdpa", device_map={"": 0})
        else:
            with torch.device("cuda"):
                model = cls.from_config(cfg, dtype=torch.float32, attn_implementation="sdpa")
        torch.cuda.synchronize()
        snap = torch.cuda.memory._snapshot()
        torch.cuda.memory._record_memory_history(enabled=None)
        events = [e for e in snap["device_traces"][0] if e["action"] in ("alloc", "free_completed", "segment_alloc")]
        live, transient, segments = {}, [], 0
        for i, e in enumerate(events):
            if e["action"] == "segment_alloc":
                segments += 1
            elif e["action"] == "alloc":
                live[e["addr"]] = (i, e["size"])
            elif e["addr"] in live:
                j, size = live.pop(e["addr"])
                transient.append({"alloc_index": j, "free_index": i, "size": size})
        rec = {"config": os.path.basename(path), "class": kind, "loaded": a.loaded,
               "allocs": sum(1 for e in events if e["action"] == "alloc"),
               "transient": [t for t in transient if t["size"] >= 1 << 20],
               "tied": getattr(cfg, "tie_word_embeddings", None),
               "param_bytes": sum(p.numel() * p.element_size() for p in model.parameters()),
               "segments": segments, "reserved": torch.cuda.memory_reserved(), "allocated": torch.cuda.memory_allocated()}
        out.write(json.dumps(rec) + "\n")
        print(json.dumps(rec), flush=True)
        del model
        torch.cuda.empty_cache()
