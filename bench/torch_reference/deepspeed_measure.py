#!/usr/bin/env python3
"""DeepSpeed ZeRO memory on one GPU, bookkept like shared/calibration/measure_h200.py.

Single process, no launcher: RANK=0 LOCAL_RANK=0 WORLD_SIZE=1 MASTER_ADDR/PORT are set here if
absent, then deepspeed.init_distributed("nccl"). Each case: the model is built from an HF config
(AutoModelForCausalLM.from_config, fp32, on the CPU), a torch.optim.AdamW(lr 1e-5) is made on its
parameters and handed to deepspeed.initialize with a config dict (bf16 enabled = bf16 weights,
fp32 master in the ZeRO optimizer; "zero_force_ds_cpu_optimizer": false so the torch optimizer is
kept when the optimizer is offloaded). Then `steps` steps of engine(**batch) -> loss ->
engine.backward(loss) -> engine.step(). The peak counter is reset at the start of every phase
(init, fwd, bwd, step); all figures are relative to memory_allocated()/memory_reserved() before
the model was built. peak_alloc = max over the steps' phase peaks. Host RSS (psutil) and the
process's max RSS are recorded per phase.

With --snapshot, torch.cuda.memory._record_memory_history(stacks="python") runs from before the
model is built, and at the end of step 2's backward and of step 2 the live blocks are grouped by
(size, the innermost deepspeed frame) so the ZeRO buffers can be named; so are the blocks alive at
step 2's backward peak, rebuilt from the allocator's event trace between two marker allocations.

Usage (one GPU):
  python3 deepspeed_measure.py --configs DIR [--cases gpt2:1,gpt2:2,...] [--snapshot] --out ds.jsonl
A case is model:stage[:offopt|:offall].
"""
import argparse
import collections
import gc
import json
import os
import resource
import sys
import time
import traceback

for k, v in (("RANK", "0"), ("LOCAL_RANK", "0"), ("WORLD_SIZE", "1"), ("MASTER_ADDR", "127.0.0.1"),
             ("MASTER_PORT", "29511")):
    os.environ.setdefault(k, v)

BATCH = {"gpt2": (4, 1024), "tinyllama-1.1b": (2, 1024)}
DEFAULT_CASES = ["%s:%s" % (m, c) for m in ("gpt2", "tinyllama-1.1b")
                 for c in ("1", "2", "3", "2:offopt", "3:offopt", "3:offall")]


def load_config(d, model):
    import transformers
    c = dict(json.load(open(os.path.join(d, model + ".json"))))
    mt = c.pop("model_type")
    c.pop("transformers_version", None)
    return transformers.AutoConfig.for_model(mt, **c)


def ds_config(stage, off, batch):
    z = {"stage": stage}
    if off in ("offopt", "offall"):
        z["offload_optimizer"] = {"device": "cpu"}
    if off == "offall":
        z["offload_param"] = {"device": "cpu"}
    return {"train_micro_batch_size_per_gpu": batch, "gradient_accumulation_steps": 1,
            "bf16": {"enabled": True}, "zero_optimization": z, "zero_force_ds_cpu_optimizer": False,
            "gradient_clipping": 0.0, "steps_per_print": 10 ** 9, "wall_clock_breakdown": False}


def engine_settings(engine):
    out = {}
    for name in ("zero_optimization_stage", "zero_reduce_bucket_size", "zero_allgather_bucket_size",
                 "zero_contiguous_gradients", "zero_overlap_comm", "zero_prefetch_bucket_size",
                 "zero_param_persistence_threshold", "zero_max_live_parameters", "zero_max_reuse_distance",
                 "zero_reduce_scatter", "zero_allgather_partitions", "zero_cpu_offload", "zero_offload_param",
                 "zero_offload_optimizer", "bfloat16_enabled", "zero_model_persistence_threshold",
                 "zero_elastic_checkpoint", "communication_data_type"):
        f = getattr(engine, name, None)
        if f is None:
            continue
        try:
            v = f() if callable(f) else f
            json.dumps(v, default=str)
            out[name] = v if isinstance(v, (int, float, bool, str, type(None))) else str(v)
        except Exception as e:
            out[name] = "error: %s" % e
    try:
        out["zero_config"] = json.loads(engine._config.zero_config.model_dump_json())
    except Exception as e:
        out["zero_config"] = "error: %s" % e
    opt = engine.optimizer
    out["optimizer_wrapper"] = type(opt).__name__
    base = getattr(opt, "optimizer", None)
    out["base_optimizer"] = type(base).__name__ if base is not None else None
    return out


def group_blocks(torch, top=30):
    snap = torch.cuda.memory._snapshot()
    groups = collections.defaultdict(lambda: [0, 0])
    total = 0
    for seg in snap["segments"]:
        for blk in seg["blocks"]:
            if blk["state"] != "active_allocated":
                continue
            frames = blk.get("frames") or []
            where = "?"
            for fr in frames:
                fn = fr.get("filename", "")
                if "deepspeed" in fn or "transformers" in fn or "bench/torch_reference" in fn:
                    where = "%s:%s:%s" % (fn.split("site-packages/")[-1], fr.get("line"), fr.get("name"))
                    break
            key = (blk["size"], where)
            groups[key][0] += 1
            groups[key][1] += blk["size"]
            total += blk["size"]
    rows = sorted(groups.items(), key=lambda kv: -kv[1][1])
    return {"total_active": total, "n_groups": len(rows),
            "groups": [{"size": k[0], "where": k[1], "count": v[0], "bytes": v[1]} for k, v in rows[:top]]}


MARK_BYTES = 12345 * 512  # a size nothing else allocates: marks a phase's start and end in the trace


def mark(torch):
    torch.empty(MARK_BYTES, dtype=torch.uint8, device="cuda")
    torch.cuda.synchronize()


def where_of(frames):
    for fr in frames or []:
        fn = fr.get("filename", "")
        if "deepspeed" in fn or "transformers" in fn or "bench/torch_reference" in fn or "torch/" in fn:
            return "%s:%s:%s" % (fn.split("site-packages/")[-1], fr.get("line"), fr.get("name"))
    return "?"


def peak_live(torch, top=40):
    """The live blocks at the highest point between the last two marks, rebuilt from the
    allocator's trace (alloc / free_completed events since recording began), grouped by
    (size, innermost deepspeed/transformers/torch frame)."""
    trace = torch.cuda.memory._snapshot()["device_traces"][0]
    marks = [i for i, ev in enumerate(trace) if ev["action"] == "alloc" and ev["size"] == MARK_BYTES]
    if len(marks) < 2:
        return {"error": "marks not found (%d)" % len(marks)}
    begin, end = marks[-2], marks[-1]
    live, cur, best, best_live, at_begin = {}, 0, -1, None, None
    for i, ev in enumerate(trace[:end]):
        if ev["action"] == "alloc":
            live[ev["addr"]] = ev
            cur += ev["size"]
        elif ev["action"] == "free_completed" and ev["addr"] in live:
            cur -= live.pop(ev["addr"])["size"]
        if i == begin:
            at_begin = cur
        if i > begin and cur > best:
            best, best_live = cur, dict(live)
    groups = collections.defaultdict(lambda: [0, 0])
    for ev in best_live.values():
        key = (ev["size"], where_of(ev.get("frames")))
        groups[key][0] += 1
        groups[key][1] += ev["size"]
    rows = sorted(groups.items(), key=lambda kv: -kv[1][1])
    return {"peak_over_trace_start": best, "at_begin": at_begin,
            "groups": [{"size": k[0], "where": k[1], "count": v[0], "bytes": v[1]} for k, v in rows[:top]]}


def run_case(spec, args, torch, deepspeed, psutil):
    model_name, stage, off = spec
    b, s = BATCH[model_name]
    proc = psutil.Process()
    rss = lambda: proc.memory_info().rss
    maxrss = lambda: resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    gc.collect()
    torch.cuda.empty_cache()
    torch.cuda.synchronize()
    base = torch.cuda.memory_allocated()
    base_res = torch.cuda.memory_reserved()
    alloc = lambda: torch.cuda.memory_allocated() - base
    peak = lambda: torch.cuda.max_memory_allocated() - base
    rpeak = lambda: torch.cuda.max_memory_reserved() - base_res
    rec = {"case": "%s_zero%d%s_b%d_s%d" % (model_name, stage, ("_" + off) if off else "", b, s),
           "spec": {"model": model_name, "stage": stage, "offload": off or None, "batch": b, "seq": s,
                    "weights": "bf16", "master": "fp32", "opt": "adamw", "lr": 1e-5},
           "base_alloc": base, "base_reserved": base_res, "rss_before": rss()}
    if args.snapshot:
        torch.cuda.memory._record_memory_history(max_entries=2000000, stacks="python")
    torch.manual_seed(0)
    from transformers import AutoModelForCausalLM
    cfg = load_config(args.configs, model_name)
    model = AutoModelForCausalLM.from_config(cfg, dtype=torch.float32, attn_implementation="sdpa")
    model.train()
    params = list({id(p): p for p in model.parameters()}.values())
    rec["params"] = sum(p.numel() for p in params)
    rec["n_param_tensors"] = len(params)
    opt = torch.optim.AdamW(params, lr=1e-5)
    rec["rss_after_model"] = rss()
    dcfg = ds_config(stage, off, b)
    rec["ds_config"] = dcfg
    torch.cuda.reset_peak_memory_stats()
    t0 = time.time()
    engine, dopt, _, _ = deepspeed.initialize(model=model, optimizer=opt, config=dcfg)
    torch.cuda.synchronize()
    rec["init_s"] = time.time() - t0
    rec["init_peak"] = peak()
    rec["after_init_alloc"] = alloc()
    rec["after_init_reserved"] = torch.cuda.memory_reserved() - base_res
    rec["rss_after_init"] = rss()
    rec["settings"] = engine_settings(engine)
    ids = torch.randint(100, min(cfg.vocab_size, 30000), (b, s), device=engine.device)
    batch = {"input_ids": ids, "labels": ids}
    steps = []
    snaps = {}
    for i in range(args.steps):
        st = {}
        torch.cuda.synchronize()
        t1 = time.perf_counter()
        st["start_alloc"] = alloc()
        torch.cuda.reset_peak_memory_stats()
        out = engine(**batch)
        loss = out.loss
        torch.cuda.synchronize()
        st["fwd_peak"] = peak(); st["after_fwd_alloc"] = alloc(); st["rss_after_fwd"] = rss()
        torch.cuda.reset_peak_memory_stats()
        if args.snapshot and i == 1:
            mark(torch)
        engine.backward(loss)
        torch.cuda.synchronize()
        st["bwd_peak"] = peak(); st["after_bwd_alloc"] = alloc(); st["rss_after_bwd"] = rss()
        if args.snapshot and i == 1:
            mark(torch)
            snaps["bwd_peak_step2"] = peak_live(torch)
        if args.snapshot and i == 1:
            snaps["after_bwd_step2"] = group_blocks(torch)
        del out
        torch.cuda.reset_peak_memory_stats()
        engine.step()
        torch.cuda.synchronize()
        st["opt_peak"] = peak(); st["after_opt_alloc"] = alloc(); st["rss_after_opt"] = rss()
        del loss
        torch.cuda.synchronize()
        st["end_alloc"] = alloc()
        st["max_reserved"] = rpeak()
        st["reserved"] = torch.cuda.memory_reserved() - base_res
        st["time_s"] = time.perf_counter() - t1
        st["peak"] = max(st["fwd_peak"], st["bwd_peak"], st["opt_peak"])
        st["loss"] = None
        steps.append(st)
        if args.snapshot and i == 1:
            snaps["after_step2"] = group_blocks(torch)
    rec["steps"] = steps
    rec["peak_alloc"] = max(st["peak"] for st in steps)
    rec["peak_reserved"] = max(st["max_reserved"] for st in steps)
    rec["rss_peak_process"] = maxrss()
    rec["rss_end"] = rss()
    if snaps:
        rec["snapshots"] = snaps
    if args.snapshot:
        torch.cuda.memory._record_memory_history(enabled=None)
    # tear down
    try:
        engine.destroy()
    except Exception:
        pass
    del engine, dopt, opt, model, params, batch, ids
    gc.collect()
    torch.cuda.empty_cache()
    rec["after_teardown_alloc"] = alloc()
    return rec


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--configs", required=True)
    ap.add_argument("--cases", default=",".join(DEFAULT_CASES))
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--snapshot", action="store_true")
    ap.add_argument("--out", default="-")
    args = ap.parse_args()
    import torch
    import psutil
    import deepspeed
    import transformers
    torch.cuda.set_device(0)
    torch.ones(1, device="cuda")
    deepspeed.init_distributed("nccl")
    out = sys.stdout if args.out == "-" else open(args.out, "a")
    env = {"torch": torch.__version__, "transformers": transformers.__version__, "deepspeed": deepspeed.__version__,
           "gpu": torch.cuda.get_device_name(0), "cuda": torch.version.cuda,
           "total_mem": torch.cuda.get_device_properties(0).total_memory,
           "world_size": int(os.environ["WORLD_SIZE"])}
    out.write(json.dumps({"env": env}) + "\n"); out.flush()
    for c in args.cases.split(","):
        parts = c.split(":")
        spec = (parts[0], int(parts[1]), parts[2] if len(parts) > 2 else "")
        t0 = time.time()
        try:
            rec = run_case(spec, args, torch, deepspeed, psutil)
            rec["wall_s"] = time.time() - t0
        except Exception:
            rec = {"case": c, "error": traceback.format_exc()}
            try:
                torch.cuda.memory._record_memory_history(enabled=None)
            except Exception:
                pass
            gc.collect(); torch.cuda.empty_cache()
        out.write(json.dumps(rec, default=str) + "\n"); out.flush()
        print("[ds] %-40s peak_alloc=%s init=%s  %.1fs %s" % (rec.get("case"), rec.get("peak_alloc"),
              rec.get("after_init_alloc"), time.time() - t0, "ERROR" if "error" in rec else ""),
              file=sys.stderr, flush=True)
        if "error" in rec:
            print(rec["error"][-2000:], file=sys.stderr, flush=True)


if __name__ == "__main__":
    main()
