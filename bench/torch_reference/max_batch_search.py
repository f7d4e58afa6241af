#!/usr/bin/env python3
"""Find, on the GPU, the largest batch that trains under a memory cap.

For each case (model config, recipe, seq, cap_gib) the model and optimizer are built once, exactly
like measure.py builds them, with torch.cuda.set_per_process_memory_fraction(cap_bytes / total)
in force from before the model is built. A trial at batch b is: gc.collect(), empty_cache(),
reset_peak_memory_stats(), fresh inputs of batch b, then `steps` (default 3) training steps with
measure.py's loop and phase bookkeeping (forward with labels [under autocast], loss.backward()
[scaled for fp16], optimizer.step() [scaler.step/update], zero_grad(set_to_none=True)); the peak
counter is reset at the start of each phase and every figure is relative to the allocator state
before the model was built (absolute values are recorded too: the cap applies to them).
A trial passes when all steps finish without an out-of-memory error. On OOM the trial's tensors are
dropped (they live only in the trial's frame), the grads are set to None, a half-made optimizer state
(OOM during the first optimizer step) is removed, the GradScaler's per-step state is reset, then
gc.collect() and empty_cache().

Search: exponential growth from b=1 (1, 2, 4, ...) up to the first failure, then bisection between
the largest pass and the smallest failure; each case stops starting trials after --case-seconds.
The optimizer state is created in the first step that reaches optimizer.step() and persists across
trials (recorded per trial as opt_state_bytes_at_start), so every passing trial ran at least two
steady-state steps.

Each case runs in a forked child with a fresh CUDA context (as measure.py --isolation fork).

Usage:
  python3 max_batch_search.py --configs .calib/configs --out max_batch.json [--cases cases.json]
                              [--only REGEX] [--case-seconds 60] [--case-timeout 150]
A cases file is a JSON list of measure.py specs (batch omitted) plus `cap_gib`.
"""
import argparse
import collections
import gc as pygc
import json
import os
import re
import sys
import tempfile
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import measure  # noqa: E402  (sets PYTORCH_NVML_BASED_CUDA_CHECK; no CUDA in the parent)

MiB = 1 << 20
GiB = 1 << 30

DEFAULT_CASES = [
    {"name": "gpt2_fp32_adamw_s1024_cap16", "model": "gpt2", "seq": 1024, "cap_gib": 16},
    {"name": "gpt2_fp32_adamw_s1024_cap40", "model": "gpt2", "seq": 1024, "cap_gib": 40},
    {"name": "bert-large_fp32_adamw_s512_cap16", "model": "bert-large", "seq": 512, "cap_gib": 16},
    {"name": "tinyllama_bf16_adamw_s2048_cap40", "model": "tinyllama-1.1b", "seq": 2048,
     "weights": "bf16", "cap_gib": 40},
    {"name": "llama3.2-1b_bf16_adamw_gc_s2048_cap40", "model": "llama3.2-1b", "seq": 2048,
     "weights": "bf16", "gc": True, "cap_gib": 40},
    {"name": "qwen2.5-0.5b_amp-bf16_adamw_s1024_cap24", "model": "qwen2.5-0.5b", "seq": 1024,
     "amp": "bf16", "cap_gib": 24},
    {"name": "t5-small_fp32_adamw_s512_t128_cap8", "model": "t5-small", "seq": 512, "tgt": 128,
     "cap_gib": 8},
    {"name": "distilbert_amp16_adamw_s128_cap4", "model": "distilbert-base", "seq": 128,
     "amp": "fp16", "cap_gib": 4},
]


# ----------------------------------------------------------------------------------------------
# search (pure: testable without a GPU)
# ----------------------------------------------------------------------------------------------

def search(trial, out_of_time, b0=1, bmax=1 << 14):
    """Largest b with trial(b) true, assuming monotonicity: grow b0, 2*b0, 4*b0, ... until a failure,
    then bisect. trial(b) returns True (pass) or False (fail). Returns (lo, hi, complete): lo = the
    largest passing batch found (0: none), hi = the smallest failing batch (None: none found)."""
    lo, hi = 0, None
    b = b0
    while hi is None:
        if out_of_time():
            return lo, hi, False
        if trial(b):
            lo = b
            if b >= bmax:
                return lo, hi, False
            b = min(2 * b, bmax)
        else:
            hi = b
    while hi - lo > 1:
        if out_of_time():
            return lo, hi, False
        mid = (lo + hi) // 2
        if trial(mid):
            lo = mid
        else:
            hi = mid
    return lo, hi, True


# ----------------------------------------------------------------------------------------------
# one case (child)
# ----------------------------------------------------------------------------------------------

OOM_PATTERNS = ("out of memory", "CUBLAS_STATUS_ALLOC_FAILED", "CUDNN_STATUS_ALLOC_FAILED",
                "cudaErrorMemoryAllocation")


def run_case(spec, args, path):
    import torch

    t_wall = time.time()
    dev = 0
    nv0 = measure.nvml_used(dev)
    torch.ones(1, device="cuda")
    torch.cuda.synchronize()
    nv1 = measure.nvml_used(dev)
    free0, total = torch.cuda.mem_get_info(dev)
    OOMError = getattr(torch, "OutOfMemoryError", None) or torch.cuda.OutOfMemoryError
    cap_bytes = int(float(spec["cap_gib"]) * GiB)
    fraction = cap_bytes / float(total)
    torch.cuda.set_per_process_memory_fraction(fraction, dev)
    env = {"torch": torch.__version__, "gpu": torch.cuda.get_device_name(dev),
           "total_mem_props": torch.cuda.get_device_properties(dev).total_memory,
           "total_mem_info": total, "free_at_start": free0, "ctx_used": nv1 - nv0,
           "cuda": torch.version.cuda}
    try:
        import transformers
        env["transformers"] = transformers.__version__
    except Exception:
        pass
    torch.manual_seed(0)
    torch.cuda.synchronize()
    base_alloc = torch.cuda.memory_allocated()
    base_res = torch.cuda.memory_reserved()

    cfg = measure.load_config(args.configs, spec["model"])
    task = measure.task_of(cfg)
    if task == "seqcls":
        cfg.num_labels = 2
    wdt = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32,
           None: torch.float32}[spec.get("weights")]
    attn = spec.get("attn", "sdpa")
    with torch.device("cuda"):
        model = measure.auto_class(task).from_config(cfg, dtype=wdt, attn_implementation=attn)
    if spec.get("gc"):
        model.gradient_checkpointing_enable()
    model.train()
    torch.cuda.synchronize()
    after_model_alloc = torch.cuda.memory_allocated() - base_alloc
    params = list({id(p): p for p in model.parameters()}.values())
    trainable = [p for p in params if p.requires_grad]
    param_bytes = sum(p.numel() * p.element_size() for p in params)

    opt = measure.make_optimizer(torch, spec, trainable)
    amp = spec.get("amp")
    amp_dtype = {"fp16": torch.float16, "bf16": torch.bfloat16}.get(amp)
    scaler = torch.amp.GradScaler("cuda") if amp == "fp16" else None
    nsteps = int(spec.get("steps", 3))
    s = int(spec["seq"])
    V = cfg.vocab_size

    def alloc():
        return torch.cuda.memory_allocated() - base_alloc

    def opt_state_bytes():
        n = 0
        for st in opt.state.values():
            for v in st.values():
                if torch.is_tensor(v) and v.is_cuda:
                    n += v.numel() * v.element_size()
        return n

    def repair_opt_state():
        """Drop per-parameter optimizer states left half-made by an OOM in the first step."""
        full = None
        for st in opt.state.values():
            if full is None or len(st) > len(full):
                full = set(st.keys())
        dropped = 0
        if full:
            for p in list(opt.state.keys()):
                if set(opt.state[p].keys()) != full:
                    del opt.state[p]
                    dropped += 1
        return dropped

    def reset_scaler():
        if scaler is not None:
            try:
                import torch.amp.grad_scaler as gs
                scaler._per_optimizer_states = collections.defaultdict(gs._refresh_per_optimizer_state)
            except Exception:
                traceback.print_exc()

    def phase_mark(rec, name):
        torch.cuda.synchronize()
        rec[name + "_peak"] = torch.cuda.max_memory_allocated() - base_alloc
        rec[name + "_peak_reserved"] = torch.cuda.max_memory_reserved() - base_res
        rec["after_%s_alloc" % name] = alloc()

    def steps_at(b, trec):
        """All tensors of the trial live in this frame (and the step records in trec)."""
        input_ids = torch.randint(0, V, (b, s), device="cuda")
        batch = {"input_ids": input_ids}
        if task == "seqcls":
            batch["labels"] = torch.randint(0, 2, (b,), device="cuda")
        elif task == "causal":
            batch["labels"] = input_ids
        else:
            batch["labels"] = torch.randint(0, V, (b, int(spec.get("tgt", s))), device="cuda")
        torch.cuda.synchronize()
        trec["after_inputs_alloc"] = alloc()
        for i in range(nsteps):
            rec = {"step": i, "start_alloc": alloc(), "opt_state_bytes": opt_state_bytes()}
            trec["steps"].append(rec)
            t0 = time.perf_counter()
            trec["where"] = (i, "fwd")
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
            if amp_dtype is not None:
                with torch.autocast("cuda", dtype=amp_dtype):
                    out = model(**batch)
            else:
                out = model(**batch)
            phase_mark(rec, "fwd")
            loss = out.loss if hasattr(out, "loss") else out["loss"]
            trec["where"] = (i, "bwd")
            torch.cuda.reset_peak_memory_stats()
            if scaler is not None:
                scaler.scale(loss).backward()
            else:
                loss.backward()
            del out, loss
            phase_mark(rec, "bwd")
            trec["where"] = (i, "opt")
            torch.cuda.reset_peak_memory_stats()
            if scaler is not None:
                scaler.step(opt)
                scaler.update()
            else:
                opt.step()
            phase_mark(rec, "opt")
            opt.zero_grad(set_to_none=True)
            torch.cuda.synchronize()
            rec["end_alloc"] = alloc()
            rec["reserved"] = torch.cuda.memory_reserved() - base_res
            rec["peak"] = max(rec["fwd_peak"], rec["bwd_peak"], rec["opt_peak"])
            rec["max_reserved"] = max(rec["fwd_peak_reserved"], rec["bwd_peak_reserved"],
                                      rec["opt_peak_reserved"])
            rec["time_s"] = time.perf_counter() - t0
        trec["where"] = None

    trials = []
    result = {"case": spec.get("name") or measure.case_name(dict(spec, batch=0)), "spec": spec,
              "env": env, "cap_bytes": cap_bytes, "fraction": fraction,
              "base_alloc": base_alloc, "base_reserved": base_res,
              "params": sum(p.numel() for p in params), "param_bytes": param_bytes,
              "after_model_alloc": after_model_alloc, "task": task, "trials": trials}

    def dump():
        with open(path, "w") as f:
            json.dump(result, f, default=str)

    n_errors = [0]

    def trial(b):
        pygc.collect()
        torch.cuda.empty_cache()
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        ms0 = torch.cuda.memory_stats()
        trec = {"batch": b, "status": None, "steps": [], "start_alloc": alloc(),
                "start_reserved": torch.cuda.memory_reserved() - base_res,
                "opt_state_bytes_at_start": opt_state_bytes(), "where": None}
        t0 = time.time()
        try:
            steps_at(b, trec)
            trec["status"] = "ok"
        except OOMError as e:
            trec["status"] = "oom"
            trec["error"] = str(e)[:600]
        except Exception as e:  # noqa: BLE001
            msg = str(e)
            if any(p in msg for p in OOM_PATTERNS):
                trec["status"] = "oom_other"
                trec["error"] = msg[:600]
            else:
                trec["status"] = "error"
                trec["error"] = traceback.format_exc()[-3000:]
                n_errors[0] += 1
        # the exception (and with it the trial frame and its tensors) is gone here
        torch.cuda.synchronize()
        # whole-trial maxima (absolute): the recorded phase peaks and the phase running at the end
        trec["max_memory_allocated"] = max([torch.cuda.max_memory_allocated()] + [
            r[k] + base_alloc for r in trec["steps"] for k in ("fwd_peak", "bwd_peak", "opt_peak") if k in r])
        trec["max_memory_reserved"] = max([torch.cuda.max_memory_reserved()] + [
            r[k] + base_res for r in trec["steps"]
            for k in ("fwd_peak_reserved", "bwd_peak_reserved", "opt_peak_reserved") if k in r])
        if trec["steps"]:
            st = trec["steps"]
            trec["peak_alloc"] = max(max(r.get(k, 0) for k in ("fwd_peak", "bwd_peak", "opt_peak"))
                                     for r in st)
            trec["peak_reserved"] = max(max(r.get(k, 0) for k in
                                            ("fwd_peak_reserved", "bwd_peak_reserved", "opt_peak_reserved"))
                                        for r in st)
        if trec["status"] != "ok":
            opt.zero_grad(set_to_none=True)
            for p in trainable:
                p.grad = None
            trec["opt_states_dropped"] = repair_opt_state()
            reset_scaler()
            # peaks of the phase that failed (counter reset at its start)
            trec["failed_phase_peak"] = torch.cuda.max_memory_allocated() - base_alloc
            trec["failed_phase_peak_reserved"] = torch.cuda.max_memory_reserved() - base_res
        pygc.collect()
        torch.cuda.empty_cache()
        torch.cuda.synchronize()
        ms1 = torch.cuda.memory_stats()
        trec["num_alloc_retries"] = ms1.get("num_alloc_retries", 0) - ms0.get("num_alloc_retries", 0)
        trec["num_ooms"] = ms1.get("num_ooms", 0) - ms0.get("num_ooms", 0)
        trec["end_alloc"] = alloc()
        trec["wall_s"] = time.time() - t0
        trials.append(trec)
        dump()
        print("[max_batch] %-42s b=%-5d %-9s peak_alloc=%8.1f MiB peak_res=%8.1f MiB "
              "max_alloc_abs=%8.1f MiB max_res_abs=%8.1f MiB retries=%d %.1fs%s" % (
                  result["case"], b, trec["status"], trec.get("peak_alloc", -1) / MiB,
                  trec.get("peak_reserved", -1) / MiB, trec["max_memory_allocated"] / MiB,
                  trec["max_memory_reserved"] / MiB, trec["num_alloc_retries"], trec["wall_s"],
                  "" if trec["status"] == "ok" else "  at %s" % (trec["where"],)), flush=True)
        if trec["status"] == "error":
            print(trec["error"], flush=True)
        return trec["status"] == "ok"

    t_search = time.time()

    def out_of_time():
        return time.time() - t_search > args.case_seconds or n_errors[0] >= 2

    lo, hi, complete = search(trial, out_of_time, b0=int(spec.get("b0", 1)),
                              bmax=int(spec.get("bmax", args.bmax)))
    result.update({"max_batch": lo, "first_fail": hi, "complete": complete,
                   "n_errors": n_errors[0], "search_s": time.time() - t_search})
    best = [t for t in trials if t["batch"] == lo and t["status"] == "ok"]
    if best:
        t = best[-1]
        result["best"] = {
            "batch": lo, "steps": t["steps"], "peak_alloc": t["peak_alloc"],
            "peak_reserved": t["peak_reserved"],
            "fwd_peak": max(r["fwd_peak"] for r in t["steps"]),
            "bwd_peak": max(r["bwd_peak"] for r in t["steps"]),
            "opt_peak": max(r["opt_peak"] for r in t["steps"]),
            "opt_state_bytes_at_start": t["opt_state_bytes_at_start"],
            "num_alloc_retries": t["num_alloc_retries"],
        }
    fails = [t for t in trials if t["status"] != "ok"]
    if fails:
        result["smallest_failing_trial"] = min(fails, key=lambda t: t["batch"])["batch"]
    result["opt_state_bytes_end"] = opt_state_bytes()
    result["wall_s"] = time.time() - t_wall
    dump()


def child_main(spec, args, path):
    try:
        run_case(spec, args, path)
    except Exception:
        partial = {}
        try:
            partial = json.load(open(path))
        except Exception:
            pass
        partial["error"] = traceback.format_exc()
        partial.setdefault("spec", spec)
        with open(path, "w") as f:
            json.dump(partial, f, default=str)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--configs", required=True)
    ap.add_argument("--cases", default=None, help="JSON list of specs with cap_gib (default: built-in)")
    ap.add_argument("--out", default="max_batch.json")
    ap.add_argument("--only", default=None, help="regex on case names")
    ap.add_argument("--case-seconds", type=float, default=60.0, help="start no new trial after this")
    ap.add_argument("--case-timeout", type=float, default=150.0, help="kill a case's child after this")
    ap.add_argument("--max-seconds", type=float, default=1e9, help="start no new case after this")
    ap.add_argument("--bmax", type=int, default=1 << 14)
    args = ap.parse_args()

    specs = json.load(open(args.cases)) if args.cases else [dict(c) for c in DEFAULT_CASES]
    if args.only:
        specs = [c for c in specs if re.search(args.only, c.get("name", c["model"]))]
    import torch
    import transformers  # noqa: F401
    measure.preimport(args.configs, specs)
    if torch.cuda.is_initialized():
        sys.exit("CUDA got initialized in the parent")
    tmpdir = tempfile.mkdtemp(prefix="max_batch_")
    results = []
    t_begin = time.time()
    for i, spec in enumerate(specs):
        name = spec.get("name", spec["model"])
        if time.time() - t_begin > args.max_seconds:
            print("[max_batch] time budget reached; skipping %s" % name, flush=True)
            results.append({"case": name, "spec": spec, "error": "skipped (time budget)"})
            continue
        path = os.path.join(tmpdir, "case%d.json" % i)
        t0 = time.time()
        status = measure.run_forked(lambda: child_main(spec, args, path), args.case_timeout)
        try:
            res = json.load(open(path))
        except Exception:
            res = {"case": name, "spec": spec}
        if status not in (0, None):
            res["child_status"] = status
            res.setdefault("error", "child ended with status %r" % (status,))
        res.setdefault("case", name)
        results.append(res)
        best = res.get("best", {})
        print("[max_batch] == %-40s max_batch=%s first_fail=%s complete=%s peak_alloc=%s MiB "
              "peak_reserved=%s MiB (%.0fs)%s" % (
                  name, res.get("max_batch"), res.get("first_fail"), res.get("complete"),
                  "%.1f" % (best["peak_alloc"] / MiB) if best else "-",
                  "%.1f" % (best["peak_reserved"] / MiB) if best else "-", time.time() - t0,
                  "  ERROR" if res.get("error") else ""), flush=True)
        if res.get("error"):
            print(res["error"], flush=True)
        with open(args.out, "w") as f:
            json.dump({"cases": results, "wall_s": time.time() - t_begin}, f, indent=1, default=str)
    print("\n%-42s %6s %6s %12s %12s %5s" % ("case", "max_b", "fail", "peak_alloc", "peak_res", "cap"))
    for res in results:
        best = res.get("best", {})
        print("%-42s %6s %6s %12s %12s %5s" % (
            res["case"], res.get("max_batch"), res.get("first_fail"),
            "%.1f" % (best["peak_alloc"] / MiB) if best else "-",
            "%.1f" % (best["peak_reserved"] / MiB) if best else "-",
            res.get("spec", {}).get("cap_gib")))


if __name__ == "__main__":
    main()
