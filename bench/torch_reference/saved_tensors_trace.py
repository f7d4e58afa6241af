#!/usr/bin/env python3
"""What autograd saves in one forward, batch by batch: every tensor the pack
hook of torch.autograd.graph.saved_tensors_hooks sees (shape, dtype, the bytes
of its storage, requires_grad), and memory_allocated after the forward.
Saved views share their base's storage, so a view saves no bytes of its own:
this is how a broadcast K/V head (a view at batch 1, a copy otherwise) shows.

  python3 saved_tensors_trace.py CONFIG.json --batches 1,2,4 --seq 512 --weights bf16 \\
      [--lora 8 --lora-targets query_key_value] --out saved.json

Builds the model as measure_h200.py does (from_config on cuda, random init,
--attn, default sdpa; T5 as a seq2seq model with --tgt target tokens); --first
N keeps the first N saved tensors of each batch (default 40).
"""
import argparse, json, torch
from transformers import AutoConfig, AutoModelForCausalLM, AutoModelForSeq2SeqLM

ap = argparse.ArgumentParser()
ap.add_argument("config")
ap.add_argument("--batches", default="1,2,4")
ap.add_argument("--seq", type=int, required=True)
ap.add_argument("--tgt", type=int, help="target tokens of an encoder-decoder (T5); default --seq")
ap.add_argument("--attn", default="sdpa")
ap.add_argument("--weights", choices=["fp32", "bf16"], default="fp32")
ap.add_argument("--lora", type=int, default=0)
ap.add_argument("--lora-targets", default="q_proj,v_proj")
ap.add_argument("--first", type=int, default=40)
ap.add_argument("--out", required=True)
a = ap.parse_args()

d = json.load(open(a.config))
cfg = AutoConfig.for_model(d.pop("model_type"), **{k: v for k, v in d.items() if k != "transformers_version"})
dtype = torch.bfloat16 if a.weights == "bf16" else torch.float32
seq2seq = cfg.model_type in ("t5", "mt5")
with torch.device("cuda"):
    model = (AutoModelForSeq2SeqLM if seq2seq else AutoModelForCausalLM).from_config(cfg, dtype=dtype,
                                                                                 attn_implementation=a.attn)
if a.lora:
    from peft import LoraConfig, get_peft_model
    model = get_peft_model(model, LoraConfig(r=a.lora, lora_alpha=16, target_modules=a.lora_targets.split(","),
                                             lora_dropout=0.0))
model.train()
# An encoder-decoder's memory as its encoder returns.
after_encoder = []
if seq2seq:
    model.encoder.register_forward_hook(lambda *_: after_encoder.append(torch.cuda.memory_allocated()))
out = {}
for b in (int(x) for x in a.batches.split(",")):
    ids = torch.randint(100, min(cfg.vocab_size, 30000), (b, a.seq), device="cuda")
    labels = torch.randint(100, min(cfg.vocab_size, 30000), (b, a.tgt or a.seq), device="cuda") if seq2seq else ids
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    base = torch.cuda.memory_allocated()
    log = []

    def pack(t):
        st = t.untyped_storage()
        log.append([list(t.shape), str(t.dtype), st.data_ptr(), st.nbytes(), t.requires_grad])
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        o = model(input_ids=ids, labels=labels)
    torch.cuda.synchronize()
    storages = {ptr: nbytes for _, _, ptr, nbytes, _ in log}
    out[b] = {"after_forward": torch.cuda.memory_allocated() - base,
              "after_encoder": after_encoder.pop() - base if after_encoder else None,
              "forward_peak": torch.cuda.max_memory_allocated() - base,
              "saved_storage_bytes": sum(storages.values()), "saved": len(log),
              "first": [[s, dt, nb, rg] for s, dt, _, nb, rg in log[:a.first]]}
    del o
    torch.cuda.empty_cache()
    print(b, out[b]["after_forward"], out[b]["forward_peak"], out[b]["saved_storage_bytes"], out[b]["saved"], flush=True)
json.dump(out, open(a.out, "w"))
