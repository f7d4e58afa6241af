"""Per-rank memory of data-parallel training: DDP and FSDP2, measured the way
the single-GPU calibration cases are (torch.cuda.max_memory_allocated per
phase, from a baseline taken before the model exists).

Run under torchrun, one process per GPU:
    NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 \\
    torchrun --nproc_per_node 2 distributed.py --configs CONFIG_DIR --case CASE_JSON --out OUT.jsonl

CASE_JSON: {"model": "gpt2", "batch": 8, "seq": 1024, "weights": "fp32",
            "parallel": "ddp" | "fsdp", "bucket_view": false,
            "reshard": true, "param_dtype": "bf16" (FSDP2 MixedPrecisionPolicy), "steps": 3}
Each rank appends one JSON line to OUT.jsonl. FSDP2 models are built on the
meta device, sharded with one fully_shard per transformer block plus the
root, then materialised with to_empty (left uninitialised: memory is what
is measured).
"""
import argparse
import json
import os
import time

import torch
import torch.distributed as dist

from measure import MemoryMeter, auto_class, load_config, make_optimizer, task_of


def blocks_of(model):
    """The repeated transformer blocks: the first ModuleList of 2+ equal-typed modules."""
    for module in model.modules():
        if isinstance(module, torch.nn.ModuleList) and len(module) > 1:
            if len({type(m) for m in module}) == 1:
                return list(module)
    raise RuntimeError("no transformer blocks found")


def write_live_blocks(path):
    """The allocated blocks now, each with its size and the Python frames that allocated it."""
    snap = torch.cuda.memory._snapshot()
    blocks = []
    for seg in snap["segments"]:
        for blk in seg["blocks"]:
            if blk["state"] != "active_allocated":
                continue
            frames = [f"{f['filename'].split('site-packages/')[-1]}:{f['line']}:{f['name']}"
                      for f in blk.get("frames", []) if f["filename"].endswith(".py")][:6]
            blocks.append({"size": blk["size"], "requested": blk.get("requested_size"), "frames": frames})
    blocks.sort(key=lambda b: -b["size"])
    with open(path, "w") as f:
        json.dump({"total": sum(b["size"] for b in blocks), "blocks": blocks}, f)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--configs", required=True)
    ap.add_argument("--case", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--snapshot", default=None,
                    help="write the live blocks at the last step's start, with their allocating frames, as JSON")
    args = ap.parse_args()
    spec = json.loads(args.case)

    rank = int(os.environ["RANK"])
    world = int(os.environ["WORLD_SIZE"])
    local = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local)
    dist.init_process_group("nccl", device_id=torch.device("cuda", local))
    torch.ones(1, device="cuda")
    torch.cuda.synchronize()
    if args.snapshot:
        torch.cuda.memory._record_memory_history(max_entries=200000)
    meter = MemoryMeter(torch)
    base_res, alloc, peak = meter.base_res, meter.alloc, meter.peak

    cfg = load_config(args.configs, spec["model"])
    task = task_of(cfg)
    wdt = {"bf16": torch.bfloat16, "fp32": torch.float32}[spec.get("weights", "fp32")]
    parallel = spec["parallel"]
    torch.manual_seed(0)
    if parallel == "ddp":
        with torch.device("cuda"):
            model = auto_class(task).from_config(cfg, dtype=wdt, attn_implementation="sdpa")
        model.train()
        model = torch.nn.parallel.DistributedDataParallel(
            model, device_ids=[local], gradient_as_bucket_view=bool(spec.get("bucket_view", False)))
        inner = model.module
    elif parallel == "fsdp":
        from torch.distributed.fsdp import fully_shard, MixedPrecisionPolicy
        with torch.device("meta"):
            model = auto_class(task).from_config(cfg, dtype=wdt, attn_implementation="sdpa")
        model.train()
        kw = {"reshard_after_forward": bool(spec.get("reshard", True))}
        if spec.get("param_dtype"):
            kw["mp_policy"] = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
        for block in blocks_of(model):
            fully_shard(block, **kw)
        fully_shard(model, **kw)
        model.to_empty(device="cuda")  # uninitialised values: the memory is what is measured
        inner = model
    else:
        raise ValueError("parallel must be ddp or fsdp")
    torch.cuda.synchronize()
    after_model_alloc = alloc()
    params = list(inner.parameters())
    local_param_bytes = sum(
        (p.to_local() if hasattr(p, "to_local") else p).numel() * p.element_size() for p in params)
    opt = make_optimizer(torch, spec, [p for p in params if p.requires_grad])

    b, s = int(spec["batch"]), int(spec["seq"])
    input_ids = torch.randint(0, cfg.vocab_size, (b, s), device="cuda")
    batch = {"input_ids": input_ids, "labels": input_ids}

    steps = []
    nsteps = int(spec.get("steps", 3))
    for step in range(nsteps):
        if args.snapshot and step == nsteps - 1 and rank == 0:
            write_live_blocks(args.snapshot)
        rec = {}
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        rec["start_alloc"] = alloc()
        torch.cuda.reset_peak_memory_stats()
        out = model(**batch)
        torch.cuda.synchronize()
        rec["fwd_peak"] = peak()
        rec["after_fwd_alloc"] = alloc()
        torch.cuda.reset_peak_memory_stats()
        out.loss.backward()
        del out
        torch.cuda.synchronize()
        rec["bwd_peak"] = peak()
        rec["after_bwd_alloc"] = alloc()
        torch.cuda.reset_peak_memory_stats()
        opt.step()
        torch.cuda.synchronize()
        rec["opt_peak"] = peak()
        rec["after_opt_alloc"] = alloc()
        opt.zero_grad(set_to_none=True)
        torch.cuda.synchronize()
        rec["end_alloc"] = alloc()
        rec["time_s"] = time.perf_counter() - t0
        rec["max_reserved"] = torch.cuda.max_memory_reserved() - base_res
        rec["peak"] = max(rec["fwd_peak"], rec["bwd_peak"], rec["opt_peak"])
        steps.append(rec)
        dist.barrier()

    result = {
        "case": spec.get("name"), "spec": spec, "rank": rank, "world_size": world,
        "params": sum(p.numel() for p in params), "local_param_bytes": local_param_bytes,
        "after_model_alloc": after_model_alloc, "steps": steps,
        "peak_alloc": max(st["peak"] for st in steps),
        "peak_reserved": max(st["max_reserved"] for st in steps),
        "torch": torch.__version__, "gpu": torch.cuda.get_device_name(local),
    }
    for r in range(world):
        if r == rank:
            with open(args.out, "a") as f:
                f.write(json.dumps(result) + "\n")
        dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
