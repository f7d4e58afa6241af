#!/usr/bin/env python3
"""Per-kernel summary of traced cases (measure.py --trace --trace-dir): what autograd saved per
layer (grouped by module and node, with shape, dtype, bytes), what is saved outside the layers,
the attention masks materialized, the attention kernel used, copies made in attention
(repeat_kv, rope, cache), and the phase figures. Writes markdown.

Usage: summarize_families.py TRACED.jsonl RAW_DIR CONFIG_DIR [--families FAMILIES.jsonl] > summary.md
RAW_DIR holds the *.raw.json.gz files of --trace-dir (results/families/raw.tar.gz unpacked).
"""
import collections
import gzip
import json
import os
import re
import sys

LAYER_RE = re.compile(r"^(.*?\.(?:layers|layer|h|blocks|block)\.(\d+))(?:\.|$)")
MiB = float(1 << 20)


def layer_of(mod):
    m = LAYER_RE.match(mod or "")
    if not m:
        return None, None
    return m.group(1), int(m.group(2))


def fmt_b(n):
    if n is None:
        return "-"
    if abs(n) >= 1 << 20:
        return "%.2f MiB" % (n / MiB)
    if abs(n) >= 1024:
        return "%.1f KiB" % (n / 1024.0)
    return "%d B" % n


def shape_s(sh):
    return "[" + ",".join(str(x) for x in sh) + "]"


def parse_out(o):
    """'bfloat16[4, 2048, 1536]' -> ('bfloat16', [4, 2048, 1536])."""
    if not o or "[" not in o:
        return None, None
    dt, rest = o.split("[", 1)
    rest = rest.rstrip("]").strip()
    try:
        sh = [int(x) for x in rest.split(",")] if rest else []
    except ValueError:
        sh = None
    return dt, sh


def load_cfg(cdir, model):
    try:
        return json.load(open(os.path.join(cdir, model + ".json")))
    except Exception:
        return {}


def layer_types(cfg, n):
    """'sliding' / 'full' per layer index, or None when the model has no sliding layers."""
    mt = cfg.get("model_type")
    lt = cfg.get("layer_types")
    if lt:
        return ["sliding" if "sliding" in x else "full" for x in lt]
    if mt == "gemma2":
        return ["sliding" if (i + 1) % 2 else "full" for i in range(n)]
    if mt in ("gemma3_text", "gemma3"):
        p = cfg.get("sliding_window_pattern", 6)
        return ["sliding" if (i + 1) % p else "full" for i in range(n)]
    if mt == "modernbert":
        g = cfg.get("global_attn_every_n_layers", 3)
        return ["full" if i % g == 0 else "sliding" for i in range(n)]
    return None


def unique_first(saved):
    """ptr -> the first record (alive at the end of the forward) that packed that storage."""
    first = {}
    for r in saved:
        if r.get("device") != "cuda" or r.get("ptr") is None or not r.get("alive_fwd_end"):
            continue
        first.setdefault(r["ptr"], r["rid"])
    return first


def table_rows(recs, first, prefix):
    """Rows (module rel. to prefix, node.slot, shape, dtype, tensor bytes, storage bytes, note)."""
    rows = []
    for r in recs:
        mod = r["mod"]
        rel = mod[len(prefix) + 1:] if prefix and mod.startswith(prefix + ".") else (mod if mod != prefix else "(block)")
        uniq = first.get(r["ptr"]) == r["rid"]
        note = r["kind"]
        if not uniq:
            owner = None
            fr = first.get(r["ptr"])
            note += ", same storage as " + ("earlier row" if fr is not None else "?")
        rows.append((rel or "(top)", "%s.%s" % (r.get("saver") or "?", r.get("slot") or "?"), shape_s(r["shape"]),
                     r["dtype"], r["tbytes"], r["sbytes"] if uniq else 0, note, r.get("producer")))
    return rows


def main():
    traced, rawdir, cdir = sys.argv[1], sys.argv[2], sys.argv[3]
    fam = {}
    if "--families" in sys.argv:
        for l in open(sys.argv[sys.argv.index("--families") + 1]):
            d = json.loads(l)
            if "case" in d:
                fam[d["case"]] = d
    inproc = {}
    if "--inproc" in sys.argv:
        for l in open(sys.argv[sys.argv.index("--inproc") + 1]):
            d = json.loads(l)
            if "case" in d:
                inproc[d["case"]] = d
    recs = [json.loads(l) for l in open(traced)]
    recs = [r for r in recs if "case" in r]
    P = print
    P("# Traces of the families cases (measure.py --trace, H200, torch 2.11, transformers 5.17)\n")
    P("Produced by `bench/torch_reference/summarize_families.py` from `results/families/traced.jsonl` and "
      "`raw.tar.gz`. Bytes are storage bytes of unique storages (a tensor saved by several nodes, or a view "
      "of a storage already counted, is listed with 0 in the `storage` column). Figures of the steady step "
      "(last untraced step) of the fork-isolated traced run; they include the cuBLAS workspaces "
      "(+62..75 MiB vs the families file, see the agreement table).\n")
    # agreement table
    P("## Agreement with the families file (`peak_alloc`)\n")
    P("| case | families file | in-process rerun | diff | fresh-process traced run | diff | attn used | fallback |")
    P("|---|---:|---:|---:|---:|---:|---|---|")
    for r in recs:
        f = fam.get(r["case"], {}).get("peak_alloc")
        ip = inproc.get(r["case"], {}).get("peak_alloc")
        P("| %s | %s | %s | %s | %d | %s | %s | %s |" % (
            r["case"], f if f is not None else "-", ip if ip is not None else "-",
            (ip - f) if (ip is not None and f is not None) else "-", r["peak_alloc"],
            fmt_b(r["peak_alloc"] - f) if f is not None else "-", r.get("attn_implementation"),
            "yes: " + r["attn_fallback"][:70] if r.get("attn_fallback") else "no"))
    P("")
    for r in recs:
        case = r["case"]
        spec = r["spec"]
        cfg = load_cfg(cdir, spec["model"])
        path = os.path.join(rawdir, case + ".raw.json.gz")
        raw = json.load(gzip.open(path, "rt")) if os.path.exists(path) else None
        tr = r.get("trace", {})
        st = r["steps"][-1]
        P("\n---\n\n## %s\n" % case)
        P("spec `%s`; model_type `%s`; attn_implementation **%s**%s; params %d (%s); task %s.\n" % (
            json.dumps({k: v for k, v in spec.items() if k not in ("name", "style")}), cfg.get("model_type"),
            r.get("attn_implementation"), " (asked sdpa, fell back: `%s`)" % r["attn_fallback"][:120] if r.get("attn_fallback") else "",
            r["params"], fmt_b(r["param_bytes"]), r.get("extra", {}).get("task")))
        P("Steady step: start_alloc %s, **fwd_peak %s, after_fwd_alloc %s, bwd_peak %s**, after_bwd_alloc %s, opt_peak %s; "
          "peak_alloc %s. Traced step: fwd_peak %s, bwd_peak %s.\n" % (
              fmt_b(st.get("start_alloc")), fmt_b(st.get("fwd_peak")), fmt_b(st.get("after_fwd_alloc")),
              fmt_b(st.get("bwd_peak")), fmt_b(st.get("after_bwd_alloc")), fmt_b(st.get("opt_peak")),
              fmt_b(r["peak_alloc"]), fmt_b(tr.get("traced_step", {}).get("fwd_peak")),
              fmt_b(tr.get("traced_step", {}).get("bwd_peak"))))
        if not raw:
            P("(no raw trace)\n")
            continue
        saved = raw["saved"]
        ops = raw["ops"]
        first = unique_first(saved)
        b, s = int(spec["batch"]), int(spec["seq"])
        # ---- SDPA / attention kernels
        nodes = tr.get("graph", {}).get("node_types", {})
        attn_nodes = {k: v for k, v in nodes.items() if "Attention" in k or "Softmax" in k or "Bmm" in k or "Baddbmm" in k}
        P("Attention: sdpa ops %s; attention-related autograd nodes %s.\n" % (
            tr.get("sdpa_ops"), json.dumps(attn_nodes)))
        outs = tr.get("graph", {}).get("outputs")
        if outs:
            P("Forward outputs (held by the output object until `del out`): `%s`.\n" % json.dumps(outs))
        # ---- per layer
        by_layer = collections.defaultdict(list)
        outside = []
        for rr in saved:
            if rr.get("device") != "cuda" or not rr.get("alive_fwd_end"):
                continue
            lk, li = layer_of(rr["mod"])
            if lk is None:
                outside.append(rr)
            else:
                by_layer[(lk, li)].append(rr)
        if by_layer:
            keys = sorted(by_layer, key=lambda k: (k[0].rsplit(".", 1)[0], k[1]))
            tot = {}
            for k in keys:
                t_all = sum(x["sbytes"] for x in by_layer[k] if first.get(x["ptr"]) == x["rid"])
                t_act = sum(x["sbytes"] for x in by_layer[k] if first.get(x["ptr"]) == x["rid"] and x["kind"] == "activation")
                tot[k] = (t_all, t_act)
            n = len(keys)
            lts = layer_types(cfg, n)
            P("Saved per layer (unique storages, all kinds / activations only; params are the weights autograd "
              "holds, not extra memory):\n")
            P("| layer | type | all kinds | activations | act. bytes/token |")
            P("|---|---|---:|---:|---:|")
            for k in keys:
                lt = lts[k[1]] if lts and k[1] < len(lts) else ""
                P("| %s | %s | %s | %s | %.1f |" % (k[0], lt, fmt_b(tot[k][0]), fmt_b(tot[k][1]), tot[k][1] / float(b * s)))
            P("")
            # representative layers: layer 1 (layer 0 also owns tensors shared by all layers, e.g. rope
            # cos/sin), and one of each other layer type
            want = []
            if lts:
                for typ in ("sliding", "full"):
                    cands = [k for k in keys if k[1] < len(lts) and lts[k[1]] == typ]
                    c1 = [k for k in cands if k[1] >= 1] or cands
                    if c1:
                        want.append((c1[0], typ))
            else:
                ks = [k for k in keys if k[1] == 1] or keys[:1]
                want.append((ks[0], ""))
                if cfg.get("model_type") in ("qwen3_moe", "mixtral", "deepseek_v2"):
                    # deepseek-v2: the first layers can be dense
                    kinds = {}
                    for k in keys:
                        mods = {x["mod"][len(k[0]) + 1:].split(".")[1] if x["mod"].startswith(k[0] + ".mlp.") and
                                len(x["mod"][len(k[0]) + 1:].split(".")) > 1 else "" for x in by_layer[k]}
                        sig = "moe" if ({"experts", "gate", "shared_experts"} & mods) else "dense"
                        kinds.setdefault(sig, k)
                    sig0 = [sg for sg, kk in kinds.items() if kk == want[0][0]]
                    k0sig = None
                    for sg in kinds:
                        pass
                    # the signature of the representative layer
                    mods0 = {x["mod"][len(want[0][0][0]) + 1:].split(".")[1] for x in by_layer[want[0][0]]
                             if x["mod"].startswith(want[0][0][0] + ".mlp.") and len(x["mod"][len(want[0][0][0]) + 1:].split(".")) > 1}
                    s0 = "moe" if ({"experts", "gate", "shared_experts"} & mods0) else "dense"
                    want[0] = (want[0][0], s0)
                    for sig, k in kinds.items():
                        if sig != s0:
                            want.append((k, sig))
            for k, typ in want:
                P("### %s%s: %s saved (%s activations)\n" % (k[0], " (%s)" % typ if typ else "", fmt_b(tot[k][0]), fmt_b(tot[k][1])))
                P("| module | node.slot | shape | dtype | tensor bytes | storage (unique) | kind / note | producer |")
                P("|---|---|---|---|---:|---:|---|---|")
                rows = table_rows(by_layer[k], first, k[0])
                for row in rows:
                    P("| %s | %s | %s | %s | %s | %s | %s | %s |" % (row[0], row[1], row[2], row[3], fmt_b(row[4]),
                                                                fmt_b(row[5]) if row[5] else "0", row[6], row[7]))
                # per-module totals
                mt = collections.Counter()
                for rr in by_layer[k]:
                    if first.get(rr["ptr"]) == rr["rid"] and rr["kind"] == "activation":
                        rel = rr["mod"][len(k[0]) + 1:] if rr["mod"].startswith(k[0] + ".") else "(block)"
                        mt[rel] += rr["sbytes"]
                P("\nActivation bytes by module: " + "; ".join("%s %s" % (m, fmt_b(v)) for m, v in mt.most_common()) + "\n")
                # allocating forward ops of this layer's attention (copies: repeat_kv, rope cat, cache, contiguous)
                attn_ops = [o for o in ops if o["phase"] == "fwd" and o["mod"].startswith(k[0] + ".")
                            and re.match(r"\.(self_attn|attn|attention|self_attention)(\.|$)", o["mod"][len(k[0]):])
                            and "norm" not in o["mod"][len(k[0]):] and (o["a1"] - o["a0"]) > 0]
                if attn_ops:
                    cnt = collections.OrderedDict()
                    for o in attn_ops:
                        key = (o["mod"][len(k[0]) + 1:], o["op"], o["out"])
                        cnt.setdefault(key, [0, 0])
                        cnt[key][0] += 1
                        cnt[key][1] += o["a1"] - o["a0"]
                    P("Allocating forward ops inside this layer's attention (op -> output; net bytes):\n")
                    P("| module | op | output | n | net bytes |")
                    P("|---|---|---|---:|---:|")
                    for (m, op, out), (nn, byt) in cnt.items():
                        P("| %s | %s | %s | %d | %s |" % (m, op, out, nn, fmt_b(byt)))
                    P("")
        # ---- outside the layers
        if outside:
            P("### Saved outside the layers\n")
            P("| module | node.slot | shape | dtype | tensor bytes | storage (unique) | kind / note | producer |")
            P("|---|---|---|---|---:|---:|---|---|")
            for row in table_rows(outside, first, ""):
                P("| %s | %s | %s | %s | %s | %s | %s | %s |" % (row[0], row[1], row[2], row[3], fmt_b(row[4]),
                                                            fmt_b(row[5]) if row[5] else "0", row[6], row[7]))
            tot_out = sum(x["sbytes"] for x in outside if first.get(x["ptr"]) == x["rid"] and x["kind"] == "activation")
            P("\nOutside-layer activations: %s.\n" % fmt_b(tot_out))
        # ---- masks: forward ops outside the layers whose output ends in (s, s) or (s, kv_len)
        masks = collections.OrderedDict()
        for o in ops:
            if o["phase"] != "fwd":
                continue
            lk, _ = layer_of(o["mod"])
            dt, sh = parse_out(o["out"])
            if not sh or len(sh) < 2:
                continue
            if len(sh) == 4 and sh[1] == 1 and sh[-2] == s and sh[-1] >= s and (lk is None) and (o["a1"] - o["a0"]) > 0 and \
                    (dt in ("bool", "float32", "bfloat16", "float16")) and sh[-1] < 10 * s:
                key = (o["mod"], o["op"], o["out"])
                masks.setdefault(key, [0, 0])
                masks[key][0] += 1
                masks[key][1] += o["a1"] - o["a0"]
        if masks:
            P("### Attention-mask tensors materialized outside the layers (forward ops with an (s, s) output)\n")
            P("| module | op | output | n | net bytes |")
            P("|---|---|---|---:|---:|")
            for (m, op, out), (nn, byt) in masks.items():
                P("| %s | %s | %s | %d | %s |" % (m or "(top)", op, out, nn, fmt_b(byt)))
            P("")
        # masks saved in layers (shape ends (s, s))
        sm = collections.defaultdict(set)
        for (lk, li), lst in by_layer.items():
            for rr in lst:
                sh = rr["shape"]
                if len(sh) == 4 and sh[1] == 1 and sh[-2] == s and sh[-1] == s and rr["kind"] != "param" \
                        and rr["dtype"] in ("bool", "float32", "bfloat16", "float16"):
                    sm[(rr["saver"], rr["slot"], shape_s(sh), rr["dtype"])].add((li, rr["ptr"]))
        if sm:
            P("Mask-shaped tensors saved in the layers: " + "; ".join(
                "%s.%s %s %s in %d layers, %d distinct storages" % (k[0], k[1], k[2], k[3], len(v), len({p for _, p in v}))
                for k, v in sm.items()) + "\n")
        # ---- replay at the peaks
        rep = tr.get("replay", {}).get("phases", {})
        for ph in ("fwd", "bwd"):
            v = rep.get(ph)
            if not v:
                continue
            comp = v.get("composition", {})
            P("%s peak (traced step, rebuilt %s, slack %s) at op `%s` in `%s`: %s\n" % (
                ph, fmt_b(v.get("peak_rel")), fmt_b(v.get("slack_vs_counter")),
                (v.get("at_op") or {}).get("op"), (v.get("at_op") or {}).get("mod") or (v.get("at_op") or {}).get("node"),
                ", ".join("%s %s" % (c, fmt_b(x)) for c, x in comp.items())))
            top = [t for t in v.get("top", []) if not t["cat"].startswith("saved") and t["cat"] not in ("param", "grad", "opt_state")][:6]
            if top:
                P("  largest non-saved live blocks: " + "; ".join(
                    "%s %s %s x%d %s" % (t["cat"], t["where"] or "", t["what"] or "", t["n"], fmt_b(t["bytes"])) for t in top) + "\n")


if __name__ == "__main__":
    main()
