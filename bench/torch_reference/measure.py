#!/usr/bin/env python3
"""Reference memory bench for memory-anatomy: real PyTorch / transformers training steps.

Reproduces the bookkeeping of shared/calibration (see its README.md):
  * the model is built from an HF config with AutoModelFor<Task>.from_config(cfg, dtype=...,
    attn_implementation=...) directly on cuda (under `with torch.device("cuda")`);
  * each step = forward, loss.backward(), optimizer.step(), optimizer.zero_grad(set_to_none=True);
  * the peak counter is reset at the start of every phase; all byte figures are relative to
    memory_allocated() / memory_reserved() before the model was built;
  * one JSON line per case, in the calibration file's schema.

With --trace, one extra step is run after the measured ones and instrumented (the measured steps
are never instrumented, so the calibration-schema numbers are untouched):
  a. saved tensors: torch.autograd.graph.saved_tensors_hooks + global module pre/post hooks;
     every packed tensor is attributed to the innermost module and, through a walk of the autograd
     graph after the forward, to the autograd node (and its `_saved_*` slot) that holds it;
     storages are deduplicated by untyped_storage().data_ptr(); kinds: activation / param /
     weight_cast (autocast copy of a parameter) / buffer / input.
  b. live allocations at the forward, backward and optimizer peaks, reconstructed from
     torch.cuda.memory._record_memory_history(stacks="python") + _snapshot(): every allocation of
     the traced step is matched to the aten op that made it (a TorchDispatchMode logs the
     allocator's cumulative allocation counter around every op), so the peak can be broken down
     into params / grads / optimizer state / saved tensors (per module and op) / transients
     (per op) without dumping the raw snapshot.
  c. optimizer-step temporaries: every op of the optimizer step with its transient and net bytes.

Each case runs in a forked child (torch/transformers are imported once in the parent, which never
touches CUDA), so every case sees a fresh CUDA context like a fresh process would.

Usage:
  python3 measure.py --cases specs.jsonl --configs DIR [--trace] [--out results.jsonl]
                     [--trace-dir DIR] [--only REGEX] [--max-seconds S]
A cases file holds one spec per line (or calibration records: their "spec" is used), or a JSON
list of specs. Spec fields: model, batch, seq, tgt, weights (bf16|fp16), amp (fp16|bf16),
opt (adamw|sgd|sgdm|adafactor|none), fused, foreach, attn (eager|sdpa), gc, inference,
use_cache, steps, lora_rank, lora_targets, lora_alpha, lora_dropout, grad_accum, eval
(inference only: call model.eval(), default true), name; and, as in
shared/calibration/measure_h200.py (the families file): loop (keep|drop: `loss = model(**b).loss`,
the outputs die before the backward), lora (rank; alpha 16, no task_type), style
(bench|families, default --style; families = measure_h200.py's token-id range, inference left in
train() mode with use_cache=False unless given).
Tasks as in measure_h200.py: vit -> image classification (pixel_values of the config's image_size
in the weight dtype, labels over num_labels); architectures naming *ForSequenceClassification ->
seqcls; *ForMaskedLM (modernbert-base) -> masked-lm (AutoModelForMaskedLM, labels = input_ids);
bert/roberta/... -> seqcls; t5/bart/... -> seq2seq; else causal. A spec with `budget_gib` (and
optional `hi`, no batch) is a largest-batch search as measure_h200.py's max_batch (see max_batch_case);
its record holds `max_batch` and the `trials`. With a `batch` too it is one trial of that batch under the
cap: its record holds `fits` (two steps ran) and the trial. The asked attn
implementation (default sdpa) falls back to eager on ValueError/ImportError; the record says
`attn_implementation` (what transformers used) and `attn_fallback` (the error, if any).
"""
import argparse
import bisect
import collections
import gc as pygc
import json
import os
import re
import signal
import sys
import tempfile
import time
import traceback

os.environ.setdefault("PYTORCH_NVML_BASED_CUDA_CHECK", "1")  # keep the parent free of cuInit
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

SEQCLS = {"bert", "roberta", "distilbert", "albert", "deberta", "deberta-v2", "electra"}
SEQ2SEQ = {"t5", "mt5", "bart", "mbart", "pegasus", "umt5"}


# ----------------------------------------------------------------------------------------------
# specs and configs
# ----------------------------------------------------------------------------------------------

def load_specs(path):
    text = open(path).read().strip()
    specs = []
    if text.startswith("["):
        items = json.loads(text)
    else:
        items = [json.loads(l) for l in text.splitlines() if l.strip()]
    for d in items:
        if "spec" in d:
            d = d["spec"]
        if "model" not in d:
            continue  # env line
        specs.append(dict(d))
    return specs


def case_name(spec):
    if spec.get("name"):
        return spec["name"]
    if "budget_gib" in spec:
        return "maxb_%s_%s_s%d_%gGiB" % (spec["model"], spec.get("weights") or spec.get("amp") or "fp32",
                                         spec["seq"], spec["budget_gib"])
    parts = [spec["model"], spec.get("weights") or ("amp-" + spec["amp"] if spec.get("amp") else "fp32")]
    parts.append(spec.get("opt", "adamw"))
    parts.append("b%d_s%d" % (spec["batch"], spec["seq"]))
    for k in ("attn", "gc", "inference", "use_cache", "grad_accum", "lora_rank"):
        if spec.get(k):
            parts.append("%s%s" % (k, "" if spec[k] is True else spec[k]))
    return "_".join(str(p) for p in parts)


def load_config(configs_dir, model):
    import transformers
    d = json.load(open(os.path.join(configs_dir, model + ".json")))
    d = dict(d)
    mt = d.pop("model_type")
    d.pop("transformers_version", None)  # as measure_h200.py
    return transformers.AutoConfig.for_model(mt, **d)


def task_of(cfg):
    """As shared/calibration/measure_h200.py: vit -> image classification; a config whose
    architectures name *ForSequenceClassification (modernbert-s) -> seqcls; then by model type."""
    if cfg.model_type == "vit":
        return "image"
    arch = (getattr(cfg, "architectures", None) or [""])[0] or ""
    if "SequenceClassification" in arch:
        return "seqcls"
    if "ForMaskedLM" in arch:  # e.g. modernbert-base: masked-LM head, labels = input_ids
        return "masked-lm"
    if cfg.model_type in SEQCLS:
        return "seqcls"
    if cfg.model_type in SEQ2SEQ:
        return "seq2seq"
    return "causal"


def auto_class(task):
    import transformers
    return {"seqcls": transformers.AutoModelForSequenceClassification,
            "causal": transformers.AutoModelForCausalLM,
            "seq2seq": transformers.AutoModelForSeq2SeqLM,
            "image": transformers.AutoModelForImageClassification,
            "masked-lm": transformers.AutoModelForMaskedLM}[task]


def families_style(spec):
    """measure_h200.py (the families file) differs from the first calibration file's bench in a
    few conventions: token ids drawn from [100, min(V, 30000)), inference runs with the model
    left in train() mode and use_cache=False unless given, `lora` = rank with lora_alpha 16 and
    no task_type. Chosen per spec by `style` ("families" or "bench"), else by --style."""
    return spec.get("style") == "families"


def preimport(configs_dir, specs):
    """Import the modeling modules in the parent so that forked children do not pay for it."""
    seen = set()
    for s in specs:
        if s["model"] in seen:
            continue
        seen.add(s["model"])
        try:
            cfg = load_config(configs_dir, s["model"])
            cls = auto_class(task_of(cfg))
            cls._model_mapping[type(cfg)]
        except Exception as e:  # pragma: no cover
            print("preimport %s: %r" % (s["model"], e), file=sys.stderr)
    for mod in ("peft", "transformers.optimization"):
        try:
            __import__(mod)
        except Exception:
            pass


# ----------------------------------------------------------------------------------------------
# small helpers (child only)
# ----------------------------------------------------------------------------------------------

def nvml_used(dev_index=0):
    try:
        import pynvml
        pynvml.nvmlInit()
        h = pynvml.nvmlDeviceGetHandleByIndex(dev_index)
        return int(pynvml.nvmlDeviceGetMemoryInfo(h).used)
    except Exception:
        try:
            import torch
            return int(torch.cuda.device_memory_used(dev_index))
        except Exception:
            return -1


def storage_ptr(t):
    try:
        return t.untyped_storage().data_ptr()
    except Exception:
        return None


def dtype_name(dt):
    return str(dt).replace("torch.", "")


LAYER_RE = re.compile(r"\.(\d+)(?=\.|$)")


def pattern(path):
    """'model.layers.3.self_attn.q_proj' -> 'model.layers.*.self_attn.q_proj'."""
    return LAYER_RE.sub(".*", path or "")


def layer_key(path):
    """'model.layers.3.self_attn.q_proj' -> 'model.layers.3' (the repeated block), else None."""
    m = LAYER_RE.search(path or "")
    if not m:
        return None
    return path[: m.end()]


def top_frame(frames):
    """The model-code frame of an allocation ('file:line(func)'): the innermost frame in
    transformers/peft, else the innermost one outside torch and this script."""
    if not frames:
        return None
    keep = None
    for f in frames:
        fn = f.get("filename", "")
        if "/transformers/" in fn or "/peft/" in fn:
            keep = f
            break
    if keep is None:
        for f in frames:
            fn = f.get("filename", "")
            if "/torch/" in fn or fn.endswith("measure.py") or fn.startswith("<"):
                continue
            keep = f
            break
    if keep is None:
        keep = frames[0]
    fn = keep.get("filename", "")
    for marker in ("site-packages/", "dist-packages/"):
        if marker in fn:
            fn = fn.split(marker, 1)[1]
    return "%s:%s(%s)" % (fn, keep.get("line"), keep.get("name"))


# ----------------------------------------------------------------------------------------------
# tracer: saved tensors + op log + memory history
# ----------------------------------------------------------------------------------------------

class _Packed(object):
    """What the pack hook returns: holds the saved tensor exactly like autograd would, and notes
    when autograd drops it (node freed during backward, or dead branch during forward)."""
    __slots__ = ("tr", "t", "rid")

    def __init__(self, tr, t, rid):
        self.tr, self.t, self.rid = tr, t, rid

    def __del__(self):
        try:
            r = self.tr.saved[self.rid]
            r["freed_op"] = len(self.tr.ops)
            r["freed_phase"] = self.tr.phase
        except Exception:
            pass


class Tracer:
    def __init__(self, torch, model, opt, batch, dev):
        self.torch = torch
        self.dev = dev
        self.model = model
        self.modname = {id(m): n for n, m in model.named_modules()}
        self.param_ptr = {}
        self.param_shapes = {}
        for n, p in model.named_parameters(remove_duplicate=False):
            self.param_ptr.setdefault(storage_ptr(p), n)
            self.param_shapes.setdefault(tuple(p.shape), n)
        self.buffer_ptr = {storage_ptr(b): n for n, b in model.named_buffers()}
        self.input_ptr = {storage_ptr(v): k for k, v in batch.items() if hasattr(v, "untyped_storage")}
        self.opt_ptr = {}
        if opt is not None:
            pname = {id(p): n for n, p in model.named_parameters()}
            for p, st in opt.state.items():
                for k, v in st.items():
                    if torch.is_tensor(v) and v.is_cuda:
                        self.opt_ptr[storage_ptr(v)] = "%s[%s]" % (k, pname.get(id(p), "?"))
        self.modstack = []
        self.saved = []
        self.unpacked = []
        self.ops = []
        self.phase = None
        self.free_log = []
        self.phase_counts = {}
        self.enabled_ops = False

    # -- stats
    def stats(self):
        s = self.torch._C._cuda_memoryStats(self.dev)
        return s["allocation"]["all"]["allocated"], s["allocated_bytes"]["all"]["current"]

    # -- module stack
    def install_module_hooks(self):
        mm = self.torch.nn.modules.module

        def pre(mod, inp):
            self.modstack.append(self.modname.get(id(mod), "<%s>" % type(mod).__name__))

        def post(mod, inp, out):
            if self.modstack:
                self.modstack.pop()

        self.h_pre = mm.register_module_forward_pre_hook(pre)
        try:
            self.h_post = mm.register_module_forward_hook(post, always_call=True)
        except TypeError:
            self.h_post = mm.register_module_forward_hook(post)

    def remove_module_hooks(self):
        self.h_pre.remove()
        self.h_post.remove()
        self.modstack = []

    # -- saved tensor hooks
    def classify(self, t, ptr):
        if ptr in self.param_ptr:
            return "param", self.param_ptr[ptr]
        if ptr in self.buffer_ptr:
            return "buffer", self.buffer_ptr[ptr]
        if ptr in self.input_ptr:
            return "input", self.input_ptr[ptr]
        gf = t.grad_fn
        hops = 0
        while gf is not None and hops < 6:
            nm = type(gf).__name__
            if nm.startswith("ToCopyBackward") or nm.startswith("_ToCopyBackward"):
                nxt = [f for f, _ in gf.next_functions if f is not None]
                if nxt and type(nxt[0]).__name__ == "AccumulateGrad":
                    var = nxt[0].variable
                    return "weight_cast", self.param_ptr.get(storage_ptr(var), "?")
                break
            if nm in ("TBackward0", "TransposeBackward0", "PermuteBackward0", "ViewBackward0",
                      "ExpandBackward0", "UnsafeViewBackward0", "AliasBackward0", "SliceBackward0",
                      "SelectBackward0", "UnsqueezeBackward0", "ReshapeAliasBackward0"):
                nxt = [f for f, _ in gf.next_functions if f is not None]
                if not nxt:
                    break
                gf = nxt[0]
                hops += 1
                continue
            break
        if t.grad_fn is None and not t.requires_grad and t.dim() == 2 and t.numel() >= 65536 \
                and t.dtype in (self.torch.float16, self.torch.bfloat16):
            if tuple(t.shape) in self.param_shapes or tuple(t.shape[::-1]) in self.param_shapes:
                return "weight_cast_nograd?", None
        return "activation", None

    def pack(self, t):
        rid = len(self.saved)
        mod = self.modstack[-1] if self.modstack else ""
        try:
            st = t.untyped_storage()
            ptr, sbytes = st.data_ptr(), st.nbytes()
        except Exception:
            ptr, sbytes = None, 0
        try:
            kind, ref = self.classify(t, ptr)
        except Exception:
            kind, ref = "activation?", None
        gf = t.grad_fn
        cnt, _ = self.stats()
        self.saved.append({
            "rid": rid, "mod": mod, "shape": list(t.shape), "dtype": dtype_name(t.dtype),
            "tbytes": t.numel() * t.element_size(), "ptr": ptr, "sbytes": sbytes,
            "device": t.device.type, "kind": kind, "ref": ref,
            "producer": type(gf).__name__ if gf is not None else None,
            "count_at_pack": cnt, "op_at_pack": len(self.ops), "saver": None, "slot": None,
            "freed_op": None, "freed_phase": None,
        })
        del gf
        return _Packed(self, t, rid)

    def unpack(self, p):
        self.unpacked.append(p.rid)
        return p.t

    # -- autograd graph walk: saver node + slot for each packed tensor; node -> module metadata
    def walk(self, roots):
        """Name the saver of every packed tensor by unpacking the `_saved_*` slots of every node.

        Nodes inside non-reentrant checkpoint regions hold checkpoint's own holders, whose unpack
        would trigger a recompute: the guard makes those unpacks raise before anything happens."""
        torch = self.torch
        import torch.utils.checkpoint as ckpt

        class _Guard(Exception):
            pass

        def _raise(*a, **k):
            raise _Guard()

        patched = []
        for obj, attr in ((torch._C, "_current_graph_task_id"),
                          (getattr(ckpt, "GraphExecGroup", None), "_get_current_group")):
            if obj is not None and hasattr(obj, attr):
                patched.append((obj, attr, getattr(obj, attr)))
                setattr(obj, attr, _raise)
        try:
            return self._walk(roots)
        finally:
            for obj, attr, orig in patched:
                setattr(obj, attr, orig)

    def _walk(self, roots):
        seen = set()
        nodes = []
        stack = [r for r in roots if r is not None]
        while stack:
            n = stack.pop()
            if id(n) in seen:
                continue
            seen.add(id(n))
            nodes.append(n)
            try:
                for f, _ in n.next_functions:
                    if f is not None and id(f) not in seen:
                        stack.append(f)
            except Exception:
                pass
        attr_cache = {}
        node_mod = {}
        node_names = collections.Counter()
        for n in nodes:
            tn = type(n)
            name = tn.__name__
            node_names[name] += 1
            attrs = attr_cache.get(tn)
            if attrs is None:
                attrs = [a for a in dir(n) if a.startswith("_saved_")]
                attr_cache[tn] = attrs
            mods = []
            for a in attrs:
                self.unpacked = []
                try:
                    getattr(n, a)
                except Exception:
                    continue
                for rid in self.unpacked:
                    r = self.saved[rid]
                    if r["saver"] is None:
                        r["saver"], r["slot"] = name, a[len("_saved_"):]
                    mods.append(r["mod"])
            if not attrs and hasattr(n, "saved_tensors"):
                self.unpacked = []
                try:
                    n.saved_tensors
                except Exception:
                    pass
                for rid in self.unpacked:
                    r = self.saved[rid]
                    if r["saver"] is None:
                        r["saver"], r["slot"] = name, "saved_tensors"
                    mods.append(r["mod"])
            if mods:
                node_mod[id(n)] = collections.Counter(mods).most_common(1)[0][0]
        # propagate module labels to nodes that save nothing (children first)
        for n in reversed(nodes):
            if id(n) in node_mod:
                continue
            try:
                for f, _ in n.next_functions:
                    if f is not None and id(f) in node_mod:
                        node_mod[id(n)] = node_mod[id(f)]
                        break
            except Exception:
                pass
        for n in nodes:
            m = node_mod.get(id(n))
            if m is not None:
                try:
                    n.metadata["mod"] = m
                except Exception:
                    pass
        self.unpacked = []
        n_nodes = len(nodes)
        del nodes, stack
        return n_nodes, node_names

    # -- op log (TorchDispatchMode)
    def make_mode(self):
        from torch.utils._python_dispatch import TorchDispatchMode
        tracer = self
        torch = self.torch
        try:
            current_node = torch._C._current_autograd_node
        except AttributeError:
            current_node = None

        def summarize(out):
            n, nbytes, first = 0, 0, None
            stack = [out]
            while stack:
                o = stack.pop()
                if isinstance(o, torch.Tensor):
                    n += 1
                    if o.device.type == "cuda":
                        nbytes += o.numel() * o.element_size()
                    if first is None:
                        first = "%s%s" % (dtype_name(o.dtype), list(o.shape))
                elif isinstance(o, (list, tuple)):
                    stack.extend(reversed(o))
            return n, nbytes, first

        class OpLog(TorchDispatchMode):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                if not tracer.enabled_ops:
                    return func(*args, **(kwargs or {}))
                c0, a0 = tracer.stats()
                out = func(*args, **(kwargs or {}))
                c1, a1 = tracer.stats()
                node, nmod = None, None
                if tracer.phase != "fwd" and current_node is not None:
                    try:
                        nd = current_node()
                        if nd is not None:
                            node = type(nd).__name__
                            nmod = nd.metadata.get("mod")
                    except Exception:
                        pass
                nout, obytes, first = summarize(out)
                tracer.ops.append({
                    "i": len(tracer.ops), "phase": tracer.phase, "op": func.__name__ if hasattr(func, "__name__") else str(func),
                    "mod": tracer.modstack[-1] if tracer.modstack else (nmod or ""),
                    "node": node, "c0": c0, "c1": c1, "a0": a0, "a1": a1,
                    "nout": nout, "obytes": obytes, "out": first,
                })
                return out

        return OpLog()


def replay(torch, snap0, snap1, tracer, c_start, dev, labels_pre, grad_ptrs, phase_bounds):
    """Rebuild the live set during the traced step from the memory-history trace.

    Returns per-phase peak info with the live-set composition at the peak."""
    def bsize(n):
        # the trace records the requested size; the allocator counts whole blocks (>= 512 B,
        # multiples of 512). Blocks handed out unsplit (remainder < 1 MiB in the large pool) are
        # larger still: that part stays unattributed ("slack_vs_counter" below).
        return max(512, (n + 511) // 512 * 512)

    live = {}
    total = 0
    for seg in snap0["segments"]:
        if seg.get("device", dev) != dev:
            continue
        addr = seg["address"]
        for b in seg["blocks"]:
            a = b.get("address", addr)
            if b["state"] in ("active_allocated", "active_awaiting_free", "active_pending_free"):
                live[a] = {"size": b["size"], "k": None, "frames": None}
                total += b["size"]
            addr = a + b["size"]
    total0 = total
    events = snap1["device_traces"][dev] if snap1.get("device_traces") else []
    ops = tracer.ops
    op_c0 = [o["c0"] - c_start for o in ops]

    def op_of(k):
        i = bisect.bisect_right(op_c0, k) - 1
        if i >= 0 and ops[i]["c1"] - c_start > k:
            return i
        return None

    # pass 1: find peak alloc index per phase; per-op transient
    phases = list(phase_bounds)  # [(name, k_begin, k_end)]

    def phase_of(k):
        for nm, b, e in phases:
            if b <= k < e:
                return nm
        return None

    best = {}
    k = 0
    t = total
    op_max = {}
    addr_allocs = collections.defaultdict(list)
    n_alloc_events = 0
    for ev in events:
        act = ev["action"]
        if act == "alloc":
            t += bsize(ev["size"])
            ph = phase_of(k)
            if ph is not None and (ph not in best or t > best[ph][0]):
                best[ph] = (t, k)
            oi = op_of(k)
            if oi is not None and t > op_max.get(oi, -1):
                op_max[oi] = t
            addr_allocs[ev["addr"]].append(k)
            k += 1
            n_alloc_events += 1
        elif act == "free_requested":
            t -= bsize(ev["size"])
    for oi, m in op_max.items():
        ops[oi]["transient"] = m - ops[oi]["a0"]

    # saved tensors -> alloc index of their storage
    saved_by_k = collections.defaultdict(list)
    for r in tracer.saved:
        if r["ptr"] is None or r["device"] != "cuda":
            continue
        ks = addr_allocs.get(r["ptr"])
        if not ks:
            continue
        j = bisect.bisect_right(ks, r["count_at_pack"] - c_start - 1) - 1
        if j >= 0:
            saved_by_k[ks[j]].append(r)
    grad_k = {}
    for ptr, (name, cnt) in grad_ptrs.items():
        ks = addr_allocs.get(ptr)
        if ks:
            j = bisect.bisect_right(ks, cnt - c_start - 1) - 1
            if j >= 0:
                grad_k[ks[j]] = name

    peaks_k = {ph: v[1] for ph, v in best.items()}
    want = sorted(set(peaks_k.values()))
    out = {}

    def label(addr, blk):
        kk = blk["k"]
        if kk is None:
            lab = labels_pre.get(addr)
            if lab:
                return lab[0], lab[1], None, None
            return "pre_other", "", None, None
        if kk in grad_k:
            return "grad", "", None, None
        if kk in saved_by_k:
            rs = saved_by_k[kk]
            live_rs = [r for r in rs]
            r = live_rs[0]
            where = pattern(r["mod"])
            return "saved_" + r["kind"], where, "%s.%s" % (r["saver"], r["slot"]), top_frame(blk["frames"])
        oi = op_of(kk)
        if oi is None:
            return "tmp", "", "(outside op)", top_frame(blk["frames"])
        o = ops[oi]
        ph = o["phase"]
        where = pattern(o["mod"])
        what = o["op"] + ("@" + o["node"] if o["node"] else "")
        return ("fwd_" if ph == "fwd" else ph + "_") + "tmp", where, what, top_frame(blk["frames"])

    # pass 2: composition at each wanted index
    k = 0
    t = total0
    live2 = dict(live)
    wi = 0
    for ev in events:
        if wi >= len(want):
            break
        act = ev["action"]
        if act == "alloc":
            live2[ev["addr"]] = {"size": bsize(ev["size"]), "k": k, "frames": ev.get("frames")}
            t += bsize(ev["size"])
            if k == want[wi]:
                comp = collections.Counter()
                detail = collections.defaultdict(lambda: [0, 0])
                sizes = collections.Counter()
                for a, blk in live2.items():
                    cat, where, what, frame = label(a, blk)
                    comp[cat] += blk["size"]
                    key = (cat, where, what, frame)
                    detail[key][0] += 1
                    detail[key][1] += blk["size"]
                    sizes[blk["size"]] += 1
                det = sorted(detail.items(), key=lambda kv: -kv[1][1])
                oi = op_of(k)
                out[k] = {
                    "total": t,
                    "composition": dict(comp.most_common()),
                    "top": [{"cat": c, "where": w, "what": wh, "frame": fr, "n": v[0], "bytes": v[1]}
                            for (c, w, wh, fr), v in det[:40]],
                    "largest_sizes": [[s, n] for s, n in sorted(sizes.items(), key=lambda kv: -kv[0] * kv[1])[:15]],
                    "at_op": None if oi is None else {x: ops[oi].get(x) for x in ("i", "phase", "op", "mod", "node", "out", "a0")},
                    "n_live_blocks": len(live2),
                }
                wi += 1
            k += 1
        elif act == "free_requested":
            live2.pop(ev["addr"], None)
            t -= bsize(ev["size"])
    res = {"total_at_start": total0, "n_alloc_events": n_alloc_events, "phases": {}}
    for ph, (tt, kk) in best.items():
        res["phases"][ph] = dict(out.get(kk, {}), peak=tt, k=kk)
    return res


def summarize_saved(saved, batch_tokens, device="cuda"):
    """Aggregate packed tensors: dedupe storages, group by module pattern / saver / slot."""
    cuda = [r for r in saved if r["device"] == device and r["ptr"] is not None]
    first = {}
    for r in cuda:
        key = r["ptr"]
        # storages freed in the forward (dead branches) can have their address reused: key by
        # (ptr, alive-at-fwd-end) is enough since only alive ones are summed below
        if r["alive_fwd_end"] and key not in first:
            first[key] = r["rid"]
    totals = collections.Counter()
    for ptr, rid in first.items():
        r = saved[rid]
        totals[r["kind"]] += r["sbytes"]
    groups = collections.OrderedDict()
    for r in cuda:
        uniq = r["alive_fwd_end"] and first.get(r["ptr"]) == r["rid"]
        saver = r["saver"] or ("(not reached from loss: checkpoint inputs or dead)" if r["alive_fwd_end"] else "(freed in fwd)")
        key = (pattern(r["mod"]), saver, r["slot"], r["kind"], r["producer"], r["dtype"], tuple(r["shape"]))
        g = groups.get(key)
        if g is None:
            g = groups[key] = {"mod": key[0], "saver": key[1], "slot": key[2], "kind": key[3],
                               "producer": key[4], "dtype": key[5], "shape": list(key[6]),
                               "n": 0, "unique_bytes": 0, "shared": 0, "dead_in_fwd": 0,
                               "tbytes": r["tbytes"], "sbytes": r["sbytes"]}
        g["n"] += 1
        if uniq:
            g["unique_bytes"] += r["sbytes"]
        elif r["alive_fwd_end"]:
            g["shared"] += 1
        else:
            g["dead_in_fwd"] += 1
    # per repeated block (layer) unique activation bytes
    per_layer = collections.Counter()
    per_layer_all = collections.Counter()
    outside = collections.Counter()
    for ptr, rid in first.items():
        r = saved[rid]
        lk = layer_key(r["mod"])
        if lk is None:
            outside[(pattern(r["mod"]) or "<top>", r["kind"])] += r["sbytes"]
            continue
        per_layer_all[lk] += r["sbytes"]
        if r["kind"] == "activation":
            per_layer[lk] += r["sbytes"]
    layer_stats = {}
    if per_layer_all:
        by_pat = collections.defaultdict(list)
        for lk in per_layer_all:
            by_pat[pattern(lk)].append(lk)
        for pat, lks in by_pat.items():
            acts = sorted(per_layer[lk] for lk in lks)
            alls = sorted(per_layer_all[lk] for lk in lks)
            layer_stats[pat] = {
                "n_layers": len(lks),
                "activation_bytes_min": acts[0], "activation_bytes_max": acts[-1],
                "activation_bytes_per_token": acts[len(acts) // 2] / float(batch_tokens),
                "all_kinds_bytes_median": alls[len(alls) // 2],
                "first_layer": lks[0], "first_layer_activation_bytes": per_layer[lks[0]],
            }
    return {
        "n_packed": len(saved), "n_cuda_unique_storages": len(first),
        "unique_bytes_by_kind": dict(totals),
        "other_device_packed": sum(1 for r in saved if r["device"] != device),
        "per_layer": layer_stats,
        "outside_layers": [{"mod": k[0], "kind": k[1], "bytes": v} for k, v in outside.most_common()],
        "groups": [g for g in groups.values() if g["unique_bytes"] or g["shared"] or g["dead_in_fwd"]],
    }


def summarize_ops(ops, phase, top=25):
    sel = [o for o in ops if o["phase"] == phase]
    agg = collections.OrderedDict()
    for o in sel:
        key = (o["op"], o["node"]) if phase != "fwd" else (o["op"], None)
        g = agg.get(key)
        if g is None:
            g = agg[key] = {"op": o["op"], "node": o["node"], "n": 0, "net": 0, "max_transient": 0, "obytes": 0}
        g["n"] += 1
        g["net"] += o["a1"] - o["a0"]
        g["max_transient"] = max(g["max_transient"], o.get("transient", 0))
        g["obytes"] += o["obytes"]
    tops = sorted(sel, key=lambda o: -o.get("transient", 0))[:top]
    return {
        "n_ops": len(sel),
        "by_op": sorted(agg.values(), key=lambda g: -g["max_transient"])[:60],
        "top_transient": [{k: o.get(k) for k in ("i", "op", "mod", "node", "out", "obytes", "transient", "a0", "a1")} for o in tops],
    }


# ----------------------------------------------------------------------------------------------
# one case (runs in the child)
# ----------------------------------------------------------------------------------------------

def run_forked(work, timeout):
    """Runs work() in a forked child; its wait status, or "timeout" after killing it."""
    pid = os.fork()
    if pid == 0:
        try:
            work()
        finally:
            os._exit(0)
    deadline = time.time() + timeout
    while True:
        r, status = os.waitpid(pid, os.WNOHANG)
        if r:
            return status
        if time.time() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            return "timeout"
        time.sleep(0.05)


class MemoryMeter:
    """Allocated and peak-allocated bytes above a baseline taken when it is made."""

    def __init__(self, torch):
        self.torch = torch
        torch.cuda.synchronize()
        self.base_alloc = torch.cuda.memory_allocated()
        self.base_res = torch.cuda.memory_reserved()
        torch.cuda.reset_peak_memory_stats()

    def alloc(self):
        return self.torch.cuda.memory_allocated() - self.base_alloc

    def peak(self):
        return self.torch.cuda.max_memory_allocated() - self.base_alloc


def record_partitions(torch, sink):
    """Wrap AOTAutograd's min-cut partitioner (what inductor calls) so that every compiled graph's
    saved values land in `sink`: the backward graph's inputs that are not tangents, each with the
    op that made it in the joint graph, the innermost module, shape, dtype and bytes."""
    import torch._functorch.partitioners as partitioners
    original = partitioners.min_cut_rematerialization_partition

    def as_int(x):
        try:
            return int(x)
        except Exception:
            return str(x)

    def recording(joint_module, joint_inputs, *a, **kw):
        fw, bw = original(joint_module, joint_inputs, *a, **kw)
        try:
            joint = {n.name: n for n in joint_module.graph.nodes}
            saved = []
            for n in bw.graph.nodes:
                if n.op != "placeholder" or n.name.startswith("tangents"):
                    continue
                v = n.meta.get("val")
                src = joint.get(n.name)
                ent = {"name": n.name,
                       "op": str(src.target) if src is not None and src.op == "call_function"
                       else (src.op if src is not None else "?")}
                if isinstance(v, torch.Tensor):
                    ent.update(shape=[as_int(d) for d in v.shape], dtype=dtype_name(v.dtype),
                               bytes=as_int(v.numel() * v.element_size()))
                else:
                    ent["value"] = str(v)
                if src is not None:
                    stack = src.meta.get("nn_module_stack") or {}
                    if stack:
                        ent["module"] = str(list(stack.values())[-1][0])
                    st = src.meta.get("stack_trace") or ""
                    ent["line"] = st.strip().splitlines()[-1].strip()[:160] if st.strip() else ""
                saved.append(ent)
            ops = lambda g: dict(collections.Counter(str(n.target) for n in g.graph.nodes if n.op == "call_function"))
            sink.append({"saved": saved, "fw_ops": ops(fw), "bw_ops": ops(bw),
                         "n_fw_outputs": len(next(n for n in fw.graph.nodes if n.op == "output").args[0])})
        except Exception:
            sink.append({"error": traceback.format_exc()[-1500:]})
        return fw, bw

    partitioners.min_cut_rematerialization_partition = recording
    import torch._inductor.compile_fx as compile_fx
    if hasattr(compile_fx, "min_cut_rematerialization_partition"):
        compile_fx.min_cut_rematerialization_partition = recording


def make_optimizer(torch, spec, trainable):
    """The optimizer a spec names, as the calibration cases were run (lr 1e-5)."""
    optname = spec.get("opt", "adamw")
    lr = 1e-5
    if optname == "adamw":
        kw = {}
        if spec.get("fused"):
            kw["fused"] = True
        if spec.get("foreach") is False:
            kw["foreach"] = False
        return torch.optim.AdamW(trainable, lr=lr, **kw)
    if optname == "sgd":
        return torch.optim.SGD(trainable, lr=lr)
    if optname == "sgdm":
        return torch.optim.SGD(trainable, lr=lr, momentum=0.9)
    if optname == "adafactor":
        from transformers.optimization import Adafactor
        return Adafactor(trainable, lr=lr, relative_step=False, scale_parameter=False)
    if optname in ("lion", "lion8bit"):
        import bitsandbytes as bnb  # 32-bit Lion (one fp32 state) / Lion8bit, as the estimator names them
        return (bnb.optim.Lion if optname == "lion" else bnb.optim.Lion8bit)(trainable, lr=lr)
    raise ValueError("unknown opt " + optname)


def quant_accounting(torch, model, after_model_alloc, params):
    """What a bitsandbytes 4-bit model holds besides its parameters: every tensor of every
    Params4bit's quant_state (absmax, offset, code, state2.absmax, state2.code), deduplicated by
    storage, raw and rounded to the allocator's 512-byte granularity, plus the live allocator
    blocks (sizes) from torch.cuda.memory._snapshot()."""
    r512 = lambda n: (n + 511) // 512 * 512
    seen = {}
    per_field = collections.Counter()
    per_field_n = collections.Counter()
    per_field_r = collections.Counter()
    n4 = 0
    example = None
    for mname, mod in model.named_modules():
        w = getattr(mod, "weight", None)
        qs = getattr(w, "quant_state", None)
        if qs is None:
            continue
        n4 += 1
        fields = [("absmax", qs.absmax), ("code", qs.code), ("offset", getattr(qs, "offset", None))]
        s2 = getattr(qs, "state2", None)
        if s2 is not None:
            fields += [("state2.absmax", s2.absmax), ("state2.code", s2.code)]
        if example is None:
            example = {"module": mname, "weight": [list(w.shape), str(w.dtype), w.numel() * w.element_size()],
                       "shape": list(qs.shape), "blocksize": qs.blocksize, "quant_type": qs.quant_type,
                       "nested": bool(getattr(qs, "nested", False)),
                       "state2_blocksize": getattr(s2, "blocksize", None) if s2 is not None else None,
                       "fields": {}}
        for fn, t in fields:
            if not isinstance(t, torch.Tensor):
                continue
            if example is not None and example["module"] == mname:
                example["fields"][fn] = [list(t.shape), str(t.dtype), str(t.device), t.numel() * t.element_size()]
            if t.device.type != "cuda":
                continue
            ptr = t.untyped_storage().data_ptr()
            if ptr in seen:
                continue
            nb = t.untyped_storage().nbytes()
            seen[ptr] = nb
            per_field[fn] += nb
            per_field_n[fn] += 1
            per_field_r[fn] += r512(nb)
    pst = {}
    for p in params:
        if p.device.type == "cuda":
            pst[p.untyped_storage().data_ptr()] = p.untyped_storage().nbytes()
    bufst = {}
    for b_ in model.buffers():
        if b_.device.type == "cuda":
            bufst[b_.untyped_storage().data_ptr()] = b_.untyped_storage().nbytes()
    blocks = []
    try:
        for seg in torch.cuda.memory._snapshot()["segments"]:
            a = seg["address"]
            for blk in seg["blocks"]:
                if blk["state"] == "active_allocated":
                    blocks.append((a, blk["size"]))
                a += blk["size"]
    except Exception as e:  # pragma: no cover
        blocks = [("err", str(e))]
    known = set(pst) | set(seen) | set(bufst)
    unknown = [sz for a, sz in blocks if a not in known]
    hist = collections.Counter(unknown)
    dtypes = collections.Counter()
    for p in params:
        dtypes[str(p.dtype)] += p.numel() * p.element_size()
    return {"n_params4bit": n4, "quant_state_bytes": sum(seen.values()),
            "quant_state_bytes_r512": sum(r512(v) for v in seen.values()),
            "quant_state_per_field": dict(per_field), "quant_state_per_field_n": dict(per_field_n),
            "quant_state_per_field_r512": dict(per_field_r),
            "param_storage_bytes_r512": sum(r512(v) for v in pst.values()),
            "buffer_storage_bytes_r512": sum(r512(v) for v in bufst.values()),
            "param_bytes_by_dtype": dict(dtypes),
            "live_blocks": len(blocks), "live_block_bytes": sum(sz for _, sz in blocks),
            "unattributed_blocks": len(unknown), "unattributed_bytes": sum(unknown),
            "unattributed_sizes": sorted(hist.items(), key=lambda kv: -kv[0] * kv[1])[:20],
            "after_model_alloc": after_model_alloc, "example": example}


def run_case(spec, args):
    import torch
    import transformers

    t_wall = time.time()
    dev = 0
    nv0 = nvml_used(dev)
    torch.ones(1, device="cuda")
    torch.cuda.synchronize()
    nv1 = nvml_used(dev)
    env = {"torch": torch.__version__, "transformers": transformers.__version__,
           "gpu": torch.cuda.get_device_name(0),
           "total_mem": torch.cuda.get_device_properties(0).total_memory,
           "ctx_used": nv1 - nv0, "nvml_used_before": nv0, "cuda": torch.version.cuda}
    for mod in ("peft", "bitsandbytes", "accelerate"):
        try:
            env[mod] = __import__(mod).__version__
        except Exception as e:
            env[mod] = "unavailable: %s" % (str(e)[:100],)
    torch.manual_seed(0)
    meter = MemoryMeter(torch)
    base_alloc, base_res, alloc, peak = meter.base_alloc, meter.base_res, meter.alloc, meter.peak

    cfg = load_config(args.configs, spec["model"])
    task = task_of(cfg)
    fam = families_style(spec)
    if task == "seqcls" and not fam:
        cfg.num_labels = 2
    wdt = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32, None: torch.float32}[spec.get("weights")]
    attn = spec.get("attn", "sdpa")
    attn_fallback = None
    qlora_info = None
    quant = spec.get("quant", "nf4" if spec.get("qlora") else None)
    if quant:
        # as measure_h200.py: 4-bit NF4 base (double quant, bf16 compute) loaded from a bf16
        # checkpoint of the random-init model, then peft.prepare_model_for_kbit_training (skipped
        # when `kbit_prepare` is false, e.g. plain 4-bit inference), then LoRA below.
        # quant "int8": LLM.int8 (BitsAndBytesConfig(load_in_8bit=True), its default threshold 6.0).
        from transformers import BitsAndBytesConfig
        import shutil
        tmpd = tempfile.mkdtemp(dir="/tmp")
        with torch.device("cpu"):
            m0 = auto_class(task).from_config(cfg, dtype=torch.bfloat16)
        m0.save_pretrained(tmpd)
        del m0
        pygc.collect()
        if quant == "int8":
            qcfg = BitsAndBytesConfig(load_in_8bit=True)
        else:
            qcfg = BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type=quant, bnb_4bit_use_double_quant=True,
                                      bnb_4bit_compute_dtype=torch.bfloat16)
        # the unquantized parameters load in the spec's weights dtype (bf16 by default)
        model = auto_class(task).from_pretrained(tmpd, quantization_config=qcfg, dtype=wdt,
                                                 attn_implementation=attn, device_map={"": 0})
        shutil.rmtree(tmpd, ignore_errors=True)
        qlora_info = "int8" if quant == "int8" else quant + "+dq"
        if spec.get("kbit_prepare", True):
            import peft
            model = peft.prepare_model_for_kbit_training(model, use_gradient_checkpointing=bool(spec.get("gc")))
            qlora_info += ", prepare_model_for_kbit_training"
            if spec.get("gc") == "nonreentrant":  # as transformers.Trainer turns it on again
                model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
                qlora_info += ", non-reentrant checkpoint"
        torch.cuda.synchronize()
    else:
      try:
        with torch.device("cuda"):
            model = auto_class(task).from_config(cfg, dtype=wdt, attn_implementation=attn)
      except (ValueError, ImportError) as e:  # as measure_h200.py: e.g. no SDPA support -> eager
        attn_fallback = str(e)[:200]
        pygc.collect()
        with torch.device("cuda"):
            model = auto_class(task).from_config(cfg, dtype=wdt, attn_implementation="eager")
    attn_used = getattr(getattr(model, "config", cfg), "_attn_implementation", attn)
    model_training_as_built = model.training
    inference = bool(spec.get("inference"))
    if spec.get("gc") and not quant:
        if spec.get("gc") == "nonreentrant":
            model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        else:
            model.gradient_checkpointing_enable()
    lora_rank = spec.get("lora_rank") or spec.get("lora")
    if lora_rank:
        import peft
        targets = spec.get("lora_targets", ["q_proj", "v_proj"])
        if isinstance(targets, str):
            targets = targets.split(",")
        if spec.get("lora") and not spec.get("lora_rank"):
            # measure_h200.py's `lora`: alpha 16, no task_type, input grads under gc
            if spec.get("gc") and not quant:
                model.enable_input_require_grads()
            lcfg = peft.LoraConfig(r=int(lora_rank), lora_alpha=int(spec.get("lora_alpha", 16)),
                                   target_modules=targets, lora_dropout=float(spec.get("lora_dropout", 0.0)))
        else:
            lcfg = peft.LoraConfig(r=int(lora_rank), lora_alpha=int(spec.get("lora_alpha", 2 * int(lora_rank))),
                                   target_modules=targets, lora_dropout=float(spec.get("lora_dropout", 0.0)),
                                   task_type={"causal": "CAUSAL_LM", "seqcls": "SEQ_CLS", "seq2seq": "SEQ_2_SEQ_LM",
                                              "image": None, "masked-lm": None}[task])
        model = peft.get_peft_model(model, lcfg)
    if inference:
        if spec.get("eval", not fam):
            model.eval()
        else:
            model.train()
    else:
        model.train()
    partitions = []
    if spec.get("compile"):
        # as measure_h200.py: torch.compile(model), default mode (inductor), after train()
        record_partitions(torch, partitions)
        model = torch.compile(model)
    torch.cuda.synchronize()
    after_model_alloc = alloc()
    params = list({id(p): p for p in model.parameters()}.values())
    n_params = sum(p.numel() for p in params)
    param_bytes = sum(p.numel() * p.element_size() for p in params)
    buffer_bytes = sum(b.numel() * b.element_size() for b in model.buffers())
    qacc = quant_accounting(torch, model, after_model_alloc, params) if quant and quant != "int8" else None
    trainable = [p for p in params if p.requires_grad]

    # inputs
    b, s = int(spec["batch"]), int(spec["seq"])
    if task == "image":
        # as measure_h200.py: pixel_values of the config's image size, in the weight dtype
        batch = {"pixel_values": torch.randn(b, getattr(cfg, "num_channels", 3), cfg.image_size, cfg.image_size,
                                             device="cuda", dtype=wdt)}
        if not inference:
            batch["labels"] = torch.randint(0, cfg.num_labels, (b,), device="cuda")
    else:
        V = cfg.vocab_size
        lo, hi = (100, min(V, 30000)) if fam else (0, V)
        input_ids = torch.randint(lo, hi, (b, s), device="cuda")
        batch = {"input_ids": input_ids}
        if not inference:
            if task == "seqcls":
                batch["labels"] = torch.randint(0, 2, (b,), device="cuda")
            elif task in ("causal", "masked-lm"):
                batch["labels"] = input_ids
            else:
                batch["labels"] = torch.randint(lo, hi, (b, int(spec.get("tgt", s))), device="cuda")
    if "use_cache" in spec:
        batch["use_cache"] = bool(spec["use_cache"])
    elif fam and inference:
        batch["use_cache"] = False
    if inference and task == "seq2seq":
        batch["decoder_input_ids"] = torch.randint(0, V, (b, int(spec.get("tgt", s))), device="cuda")
    loop = spec.get("loop", "keep")
    if loop not in ("keep", "drop"):
        raise ValueError("loop %r is not supported here (keep|drop)" % (loop,))

    # optimizer
    opt = None if inference or spec.get("opt", "adamw") == "none" else make_optimizer(torch, spec, trainable)
    amp = spec.get("amp")
    amp_dtype = {"fp16": torch.float16, "bf16": torch.bfloat16}.get(amp)
    scaler = torch.amp.GradScaler("cuda") if amp == "fp16" and not inference else None
    accum = int(spec.get("grad_accum", 1))
    nsteps = int(spec.get("steps", 3))

    def fwd_ctx():
        import contextlib
        cm = contextlib.ExitStack()
        if amp_dtype is not None:
            cm.enter_context(torch.autocast("cuda", dtype=amp_dtype))
        if inference:
            cm.enter_context(torch.no_grad())
        return cm

    steps = []

    def one_step(tr=None):
        rec = {}
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        rec["start_alloc"] = alloc()
        fwd_peaks, bwd_peaks, fwd_after, bwd_after = [], [], [], []
        for micro in range(accum if not inference else 1):
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
            if tr:
                tr["phase_begin"]("fwd" if micro == 0 else "fwd%d" % micro)
            with fwd_ctx():
                if tr:
                    with torch.autograd.graph.saved_tensors_hooks(tr["t"].pack, tr["t"].unpack):
                        out = model(**batch)
                else:
                    out = model(**batch)
                if loop == "drop" and not inference:
                    # measure_h200.py's loop "drop": loss = model(**b).loss; the outputs die here
                    out = {"loss": out.loss if hasattr(out, "loss") else out["loss"]}
            torch.cuda.synchronize()
            fwd_peaks.append(peak())
            fwd_after.append(alloc())
            if tr:
                tr["phase_end"]()
            if inference:
                del out
                break
            loss = out.loss if hasattr(out, "loss") else out["loss"]
            if accum > 1:
                loss = loss / accum
            if tr:
                tr["after_fwd"](loss, out)
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
            if tr:
                tr["phase_begin"]("bwd" if micro == 0 else "bwd%d" % micro)
            if scaler is not None:
                scaler.scale(loss).backward()
            else:
                loss.backward()
            del out, loss
            torch.cuda.synchronize()
            bwd_peaks.append(peak())
            bwd_after.append(alloc())
            if tr:
                tr["phase_end"]()
        rec["fwd_peak"] = max(fwd_peaks)
        rec["after_fwd_alloc"] = fwd_after[-1]
        if accum > 1:
            rec["micro_fwd_peaks"] = fwd_peaks
            rec["micro_bwd_peaks"] = bwd_peaks
        if not inference:
            rec["bwd_peak"] = max(bwd_peaks)
            rec["after_bwd_alloc"] = bwd_after[-1]
            if tr:
                tr["grads"]()
            if opt is not None:
                torch.cuda.synchronize()
                torch.cuda.reset_peak_memory_stats()
                if tr:
                    tr["phase_begin"]("opt")
                if scaler is not None:
                    scaler.step(opt)
                    scaler.update()
                else:
                    opt.step()
                torch.cuda.synchronize()
                rec["opt_peak"] = peak()
                rec["after_opt_alloc"] = alloc()
                if tr:
                    tr["phase_end"]()
                opt.zero_grad(set_to_none=True)
            else:
                for p in trainable:
                    p.grad = None
        torch.cuda.synchronize()
        rec["time_s"] = time.perf_counter() - t0
        rec["end_alloc"] = alloc()
        rec["reserved"] = torch.cuda.memory_reserved() - base_res
        rec["max_reserved"] = torch.cuda.max_memory_reserved() - base_res
        rec["nvml_used"] = nvml_used(dev)
        rec["peak"] = max(v for k, v in rec.items() if k.endswith("_peak"))
        return rec

    for i in range(nsteps):
        steps.append(one_step())

    result = {
        "case": case_name(spec), "spec": spec, "params": n_params, "param_bytes": param_bytes,
        "buffer_bytes": buffer_bytes, "after_model_alloc": after_model_alloc, "steps": steps,
        "peak_alloc": max(st["peak"] for st in steps),
        "peak_reserved": max(st["max_reserved"] for st in steps),
        "peak_nvml_used": max(st["nvml_used"] for st in steps),
        "ctx_used": env["ctx_used"],
        "wall_s": time.time() - t_wall,
        "attn_implementation": attn_used,
        "extra": {
            "task": task, "model_training_as_built": model_training_as_built,
            "model_training": model.training,
            "attn_implementation": attn_used,
            "trainable_params": sum(p.numel() for p in trainable),
            "trainable_bytes": sum(p.numel() * p.element_size() for p in trainable),
            "param_dtypes": dict(collections.Counter(dtype_name(p.dtype) for p in params)),
            "n_param_tensors": len(params), "n_trainable_tensors": len(trainable),
            "largest_param_bytes": max(p.numel() * p.element_size() for p in params),
            "largest_trainable_bytes": max([p.numel() * p.element_size() for p in trainable] or [0]),
            "input_bytes": sum({storage_ptr(v): v.numel() * v.element_size() for v in batch.values() if torch.is_tensor(v)}.values()),
            "base_alloc": base_alloc, "base_reserved": base_res,
        },
    }

    if spec.get("compile"):
        import torch._dynamo.utils as dynamo_utils
        result["compile"] = {"graphs": partitions,
                             "dynamo_counters": {k: dict(v) for k, v in dynamo_utils.counters.items()
                                                 if k in ("stats", "graph_break", "frames", "aot_autograd")}}
    if attn_fallback is not None:
        result["attn_fallback"] = attn_fallback
    if qlora_info is not None:
        result["qlora"] = qlora_info
        result["extra"]["quant"] = qacc
    if args.trace:
        raw = {}
        try:
            result["trace"] = trace_step(torch, model, opt, batch, dev, one_step, base_alloc, b, s, raw, trainable)
        except Exception:
            result["trace_error"] = traceback.format_exc()
        result["_raw"] = raw
    return env, result


def trace_step(torch, model, opt, batch, dev, one_step, base_alloc, b, s, raw, trainable):
    """Run one instrumented step (see the module docstring) and return its summary."""
    tracer = Tracer(torch, model, opt, batch, dev)
    labels_pre = {}
    for ptr, n in tracer.param_ptr.items():
        labels_pre[ptr] = ("param", "")
    for ptr, n in tracer.buffer_ptr.items():
        labels_pre[ptr] = ("buffer", "")
    for ptr, n in tracer.input_ptr.items():
        labels_pre[ptr] = ("input", "")
    for ptr, n in tracer.opt_ptr.items():
        labels_pre[ptr] = ("opt_state", n.split("[")[0])
    mh = torch.cuda.memory._record_memory_history
    mh(enabled="all", context="alloc", stacks="python", max_entries=2_000_000)
    torch.cuda.synchronize()
    snap0 = torch.cuda.memory._snapshot()
    c_start, a_start = tracer.stats()
    phase_bounds = []
    cur = {}
    grad_ptrs = {}
    walk_info = {}
    mode = tracer.make_mode()

    hooks = {"on": False}

    def phase_begin(name):
        c, a = tracer.stats()
        cur["name"], cur["c"] = name, c - c_start
        tracer.phase = name
        # module hooks stay on through the backward (checkpoint recomputes run module forwards)
        if name != "opt" and not hooks["on"]:
            tracer.install_module_hooks()
            hooks["on"] = True
        if name == "opt" and hooks["on"]:
            tracer.remove_module_hooks()
            hooks["on"] = False
        tracer.enabled_ops = True

    def phase_end():
        tracer.enabled_ops = False
        c, a = tracer.stats()
        phase_bounds.append((cur["name"], cur["c"], c - c_start))
        tracer.phase = None

    def after_fwd(loss, out):
        # which packed tensors are still referenced at the end of the forward
        t0 = time.time()
        c0, a0 = tracer.stats()
        n_nodes, node_names = tracer.walk([loss.grad_fn])
        c1, a1 = tracer.stats()
        walk_info["walk_alloc_events"] = c1 - c0  # must be 0: the walk must not allocate
        for r in tracer.saved:
            r["alive_fwd_end"] = r["freed_op"] is None
        walk_info.update({"n_nodes": n_nodes, "walk_s": time.time() - t0,
                          "node_types": dict(node_names.most_common(40))})
        # forward outputs that are not the loss
        outs = {}
        try:
            for k, v in out.items():
                if torch.is_tensor(v):
                    outs[k] = [dtype_name(v.dtype), list(v.shape), v.numel() * v.element_size()]
                elif v is not None:
                    outs[k] = type(v).__name__
        except Exception:
            pass
        walk_info["outputs"] = outs

    def grads():
        c, a = tracer.stats()
        for n, p in model.named_parameters():
            if p.grad is not None:
                grad_ptrs[storage_ptr(p.grad)] = (n, c)

    tr = {"t": tracer, "phase_begin": phase_begin, "phase_end": phase_end, "after_fwd": after_fwd, "grads": grads}
    with mode:
        rec = one_step(tr)
    if hooks["on"]:
        tracer.remove_module_hooks()
    torch.cuda.synchronize()
    t0 = time.time()
    snap1 = torch.cuda.memory._snapshot()
    mh(enabled=None)
    snap_s = time.time() - t0
    c_end, _ = tracer.stats()
    for r in tracer.saved:
        r.setdefault("alive_fwd_end", False)
    try:
        rep = replay(torch, snap0, snap1, tracer, c_start, dev, labels_pre, grad_ptrs, phase_bounds)
        # express absolute allocator totals relative to the pre-model base
        for ph, v in rep["phases"].items():
            v["peak_rel"] = v["peak"] - base_alloc
            v["total_rel"] = v.get("total", v["peak"]) - base_alloc
            if ph + "_peak" in rec and ph in ("fwd", "bwd", "opt"):
                # allocator counter minus reconstruction: unsplit-block slack not visible in the trace
                v["slack_vs_counter"] = rec[ph + "_peak"] - v["peak_rel"]
    except Exception:
        rep = {"error": traceback.format_exc(), "phases": {}, "n_alloc_events": -1}
    del snap0, snap1
    tokens = b * s
    saved_sum = summarize_saved(tracer.saved, tokens)
    # saved tensors still alive at the backward peak
    bwd = rep["phases"].get("bwd")
    if bwd and bwd.get("at_op"):
        i_peak = bwd["at_op"]["i"]
        alive = [r for r in tracer.saved if r["alive_fwd_end"] and r["device"] == "cuda"
                 and (r["freed_op"] is None or r["freed_op"] > i_peak)]
        seen = set()
        tot = 0
        for r in alive:
            if r["ptr"] not in seen:
                seen.add(r["ptr"])
                tot += r["sbytes"]
        saved_sum["alive_at_bwd_peak_bytes"] = tot
    sdpa_ops = sorted({o["op"] for o in tracer.ops if "attention" in o["op"] or "scaled_dot" in o["op"]})
    opt_ops = [{k: o.get(k) for k in ("i", "op", "out", "nout", "obytes", "transient", "a0", "a1")}
               for o in tracer.ops if o["phase"] == "opt"]
    if len(opt_ops) > 80:  # for-loop optimizers: aggregate
        opt_ops_out = {"aggregated": True, "by_op": summarize_ops(tracer.ops, "opt")["by_op"]}
    else:
        opt_ops_out = {"aggregated": False, "ops": opt_ops}
    grad_dtypes = collections.Counter()
    for p in trainable:
        grad_dtypes[dtype_name(p.dtype)] += p.numel() * p.element_size()
    opt_state_bytes = collections.Counter()
    if opt is not None:
        for p, st in opt.state.items():
            for k, v in st.items():
                if torch.is_tensor(v):
                    opt_state_bytes["%s:%s:%s" % (k, dtype_name(v.dtype), v.device.type)] += v.numel() * v.element_size()
    trace = {
        "traced_step": rec,
        "replay": rep,
        "alloc_events_vs_counter": [rep["n_alloc_events"], c_end - c_start],
        "snapshot_s": snap_s,
        "graph": walk_info,
        "saved": saved_sum,
        "sdpa_ops": sdpa_ops,
        "fwd_ops": summarize_ops(tracer.ops, "fwd"),
        "bwd_ops": summarize_ops(tracer.ops, "bwd"),
        "opt_ops": opt_ops_out,
        "trainable_bytes_by_dtype": dict(grad_dtypes),
        "opt_state_bytes": dict(opt_state_bytes),
        "n_ops": len(tracer.ops),
    }
    raw["ops"] = tracer.ops
    raw["saved"] = tracer.saved
    return trace


# ----------------------------------------------------------------------------------------------
# parent
# ----------------------------------------------------------------------------------------------

def max_batch_case(spec, args):
    """As measure_h200.py's max_batch (the families file's `budget_gib` cases): the largest batch
    that runs two steps (run_case with batch=b, steps=2) under
    torch.cuda.set_per_process_memory_fraction(budget_gib GiB / total); exponential growth from 1
    (1, 2, 4, ... while <= `hi`, default 256), then bisection. Only torch.OutOfMemoryError counts
    as a failure; other errors propagate."""
    import torch
    total = torch.cuda.get_device_properties(0).total_memory
    torch.cuda.set_per_process_memory_fraction(float(spec["budget_gib"]) * 2**30 / total)
    trials = []
    env = {}

    def ok(b):
        pygc.collect()
        torch.cuda.empty_cache()
        t0 = time.time()
        passed = True
        try:
            e, r = run_case(dict(spec, batch=b, steps=2), args)
            env.update(e)
            trials.append({"batch": b, "ok": True, "peak_alloc": r["peak_alloc"],
                           "peak_reserved": r["peak_reserved"], "s": round(time.time() - t0, 2)})
            del r
        except torch.OutOfMemoryError:
            passed = False
        if not passed:
            trials.append({"batch": b, "ok": False, "s": round(time.time() - t0, 2)})
        pygc.collect()
        torch.cuda.empty_cache()
        return passed

    if "batch" in spec:  # one trial of the given batch under the cap: does it run?
        try:
            fits = ok(int(spec["batch"]))
        finally:
            torch.cuda.set_per_process_memory_fraction(1.0)
        env = env or {"torch": torch.__version__, "gpu": torch.cuda.get_device_name(0), "total_mem": total}
        return env, {"case": spec.get("name") or "fit_%s" % spec["model"], "spec": spec, "fits": fits,
                     "trials": trials}
    try:
        lo, b, hi = 0, 1, int(spec.get("hi", 256))
        while b <= hi and ok(b):
            lo = b
            b *= 2
        hi = min(b, hi + 1)
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if ok(mid):
                lo = mid
            else:
                hi = mid
    finally:
        torch.cuda.set_per_process_memory_fraction(1.0)
    if not env:
        env = {"torch": torch.__version__, "gpu": torch.cuda.get_device_name(0), "total_mem": total}
    return env, {"case": spec.get("name") or "maxb_%s" % spec["model"], "spec": spec, "max_batch": lo,
                 "trials": trials}


def child_main(spec, args, path):
    try:
        if "budget_gib" in spec:
            env, res = max_batch_case(spec, args)
        else:
            env, res = run_case(spec, args)
        payload = {"env": env, "result": res}
    except Exception:
        payload = {"error": traceback.format_exc()}
    with open(path, "w") as f:
        json.dump(payload, f, default=str)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cases", required=True, action="append",
                    help="JSONL of specs or calibration records, or a JSON list of specs; repeatable")
    ap.add_argument("--configs", required=True)
    ap.add_argument("--trace", action="store_true")
    ap.add_argument("--out", default="-", help="JSONL output (calibration schema); '-' = stdout")
    ap.add_argument("--trace-dir", default=None, help="write raw per-case op/saved logs here (jsonl.gz)")
    ap.add_argument("--only", default=None, help="regex on case names")
    ap.add_argument("--max-seconds", type=float, default=1e9, help="start no new case after this")
    ap.add_argument("--case-timeout", type=float, default=300)
    ap.add_argument("--isolation", choices=["fork", "spawn", "none"], default="fork",
                    help="fork: one forked child per case (default); spawn: a fresh interpreter per case")
    ap.add_argument("--empty-cache-between", action="store_true",
                    help="with --isolation none: torch.cuda.empty_cache() between cases")
    ap.add_argument("--style", choices=["bench", "families"], default="bench",
                    help="default `style` for specs without one: 'families' = the conventions of "
                         "shared/calibration/measure_h200.py (token ids in [100, min(V,30000)), "
                         "inference in train() mode with use_cache=False, `lora` alpha 16)")
    ap.add_argument("--_child-spec", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--_child-path", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args._child_spec:
        child_main(json.loads(args._child_spec), args, args._child_path)
        return

    specs = [s for path in args.cases for s in load_specs(path)]
    if args.style != "bench":
        for s in specs:
            s.setdefault("style", args.style)
    if args.only:
        specs = [s for s in specs if re.search(args.only, case_name(s))]
    import torch  # noqa: F401  (parent: no CUDA calls)
    import transformers  # noqa: F401
    preimport(args.configs, specs)
    if args.isolation == "fork" and torch.cuda.is_initialized():
        print("[measure] CUDA got initialized in the parent: falling back to --isolation spawn", file=sys.stderr)
        args.isolation = "spawn"
    out = sys.stdout if args.out == "-" else open(args.out, "a")
    t_begin = time.time()
    env_written = False
    tmpdir = tempfile.mkdtemp(prefix="measure_")
    for i, spec in enumerate(specs):
        name = case_name(spec)
        if time.time() - t_begin > args.max_seconds:
            print("[measure] time budget reached; skipping %s" % name, file=sys.stderr, flush=True)
            continue
        t0 = time.time()
        path = os.path.join(tmpdir, "case%d.json" % i)
        if args.isolation == "fork":
            status = run_forked(lambda: child_main(spec, args, path), args.case_timeout)
        elif args.isolation == "spawn":
            import subprocess
            cmd = [sys.executable, os.path.abspath(__file__), "--cases", args.cases[0], "--configs", args.configs,
                   "--_child-spec", json.dumps(spec), "--_child-path", path] + (["--trace"] if args.trace else [])
            try:
                status = subprocess.run(cmd, timeout=args.case_timeout).returncode
            except subprocess.TimeoutExpired:
                status = "timeout"
        else:
            child_main(spec, args, path)
            pygc.collect()
            if args.empty_cache_between:
                torch.cuda.empty_cache()
            status = 0
        try:
            payload = json.load(open(path))
        except Exception:
            payload = {"error": "child produced no result (status %r)" % (status,)}
        if "error" in payload:
            print("[measure] %s FAILED: %s" % (name, payload["error"]), file=sys.stderr, flush=True)
            out.write(json.dumps({"case": name, "spec": spec, "error": payload["error"]}) + "\n")
            out.flush()
            continue
        if not env_written:
            out.write(json.dumps({"env": payload["env"]}) + "\n")
            env_written = True
        res = payload["result"]
        raw = res.pop("_raw", None)
        if raw and args.trace_dir:
            import gzip
            os.makedirs(args.trace_dir, exist_ok=True)
            with gzip.open(os.path.join(args.trace_dir, name + ".raw.json.gz"), "wt") as f:
                json.dump(raw, f)
        out.write(json.dumps(res) + "\n")
        out.flush()
        if "max_batch" in res:
            print("[measure] %-45s max_batch=%d  %.1fs" % (name, res["max_batch"], time.time() - t0),
                  file=sys.stderr, flush=True)
            continue
        if "fits" in res:
            print("[measure] %-45s fits=%s  %.1fs" % (name, res["fits"], time.time() - t0),
                  file=sys.stderr, flush=True)
            continue
        tr = res.get("trace", {}).get("traced_step", {})
        print("[measure] %-45s peak_alloc=%d  traced_peak=%s  %.1fs%s" % (
            name, res["peak_alloc"], tr.get("peak"), time.time() - t0,
            "  TRACE ERROR" if "trace_error" in res else ""), file=sys.stderr, flush=True)
        if "trace_error" in res:
            print(res["trace_error"], file=sys.stderr, flush=True)


if __name__ == "__main__":
    main()
