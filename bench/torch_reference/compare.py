#!/usr/bin/env python3
"""Compare the `anatomy` CLI's predictions with measured steps.

For every measured case (calibration-schema JSON lines written by measure.py,
or the project's copies under tests/data/), this builds the same model from
its config.json, asks `anatomy estimate --config ... --json` for the
prediction, and tabulates predicted vs measured peak_alloc next to the
simple formulas other tools use:

  * "B/param": 16 B/param (fp32 + AdamW), 18 (mixed precision), 8 (bf16
    weights + AdamW), 2 or 4 for inference -- the parameter-only count of
    `accelerate estimate-memory` and of the HF/EleutherAI rules;
  * "B/param + Korthikanti": the same plus activations per layer of
    s*b*h*(34 + 5*a*s/h) bytes (Korthikanti et al. 2022, 16-bit activations;
    doubled for fp32 training, 2*s*b*h per layer under checkpointing).

Writes a Markdown table (--table) and an SVG scatter plot (--svg). "anatomy" is
`peak_bytes`, the allocator replay's peak where it is modelled; --walk adds a
column with the analytic walk's (`tensor_peak_bytes`, the library's estimate).

  python3 compare.py --anatomy build/examples/anatomy --configs ../shared/calibration/configs \
      --cases tests/data/calibration-h200.jsonl [--cases tests/data/extra-h200.jsonl] \
      --table out.md --svg out.svg
"""
import argparse
import json
import math
import os
import statistics
import subprocess
import sys

MiB = 1 << 20


def cli_args(spec, configs):
    args = ["estimate", "--config", os.path.join(configs, spec["model"] + ".json"),
            "--batch", str(spec["batch"]), "--json"]
    if not spec["model"].startswith("vit"):  # an image model's sequence is derived
        args += ["--seq", str(spec["seq"])]
    if spec.get("tgt"):
        args += ["--target-seq", str(spec["tgt"])]
    quant = "nf4" if spec.get("qlora") else spec.get("quant")  # the families file says qlora, measure.py quant
    if quant:
        args += ["--quantize", quant]
        # prepare_model_for_kbit_training casts the rest to fp32; inference skips it
        args += ["--weights", "fp32" if spec.get("kbit_prepare", True) else spec.get("weights", "fp32")]
    else:  # the bench builds from_config(dtype=fp32) unless `weights` says otherwise, whatever the config's dtype
        args += ["--weights", spec.get("weights", "fp32")]
    if spec.get("amp"):
        args += ["--autocast", spec["amp"]]
    opt = {"sgdm": "sgd-momentum", "sgd": "sgd", "adafactor": "adafactor", "lion": "lion",
           "adamw8bit": "adam8bit"}.get(spec.get("opt", ""))
    loop = {"drop": "loss-only", "trainer": "hf-trainer"}.get(spec.get("loop", ""))
    if loop:
        args += ["--loop", loop]
    if spec.get("fused"):
        opt = "adamw-fused"
    if spec.get("foreach") is False:
        opt = "adamw-forloop"
    if spec.get("inference"):
        args += ["--inference"] + (["--kv-cache"] if spec.get("use_cache") else [])
    elif opt:
        args += ["--optimizer", opt]
    if spec.get("attn"):
        args += ["--attention", spec["attn"]]
    if spec.get("gc"):
        args += ["--grad-checkpointing"]
    if spec.get("compile"):
        args += ["--compile"]
    if spec.get("grad_accum", 1) > 1:
        args += ["--grad-accum", str(spec["grad_accum"])]
    if spec.get("lora_rank") or spec.get("lora"):  # the families file says lora (alpha 16)
        args += ["--lora-rank", str(spec.get("lora_rank") or spec["lora"]),
                 "--lora-targets", ",".join(spec.get("lora_targets", ["q_proj", "v_proj"]))]
        if spec.get("lora_dropout"):
            args += ["--lora-dropout", str(spec["lora_dropout"])]
    return args


def simple_formulas(spec, prediction):
    """Parameter-only bytes, and the same plus Korthikanti's activations."""
    p = prediction["params"]
    s = prediction["spec"]
    if spec.get("inference"):
        per_param = 2 if spec.get("weights") == "bf16" else 4
    elif spec.get("amp"):
        per_param = 18
    elif spec.get("weights") == "bf16":
        per_param = 8
    else:
        per_param = 16
    state = per_param * p
    if spec.get("inference"):
        return state, state
    b, seq, h, a = spec["batch"], spec["seq"], s["hidden"], s["heads"]
    layers = s["layers"] + s.get("decoder_layers", 0)
    if spec.get("gc"):
        per_layer = 2 * seq * b * h
    else:
        per_layer = seq * b * h * (34 + 5 * a * seq / h)
        if not spec.get("amp") and spec.get("weights") != "bf16":
            per_layer *= 2  # fp32 activations
    return state, state + layers * per_layer


def svg_plot(points, path):
    """points: (measured, predicted, label) in bytes -> a log-log scatter."""
    w, h, pad = 560, 560, 60
    lo = min(min(m, p) for m, p, _ in points) / 1.3
    hi = max(max(m, p) for m, p, _ in points) * 1.3

    def xy(m, p):
        fx = (math.log(m) - math.log(lo)) / (math.log(hi) - math.log(lo))
        fy = (math.log(p) - math.log(lo)) / (math.log(hi) - math.log(lo))
        return pad + fx * (w - 2 * pad), h - pad - fy * (h - 2 * pad)

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif" font-size="11">',
           f'<rect width="{w}" height="{h}" fill="white"/>']
    x0, y0 = xy(lo, lo)
    x1, y1 = xy(hi, hi)
    out.append(f'<line x1="{x0:.1f}" y1="{y0:.1f}" x2="{x1:.1f}" y2="{y1:.1f}" stroke="#888" stroke-dasharray="4"/>')
    for gib in (1, 2, 4, 8, 16, 32, 64):
        v = gib * (1 << 30)
        if lo < v < hi:
            x, _ = xy(v, lo)
            _, y = xy(lo, v)
            out.append(f'<text x="{x:.1f}" y="{h - pad + 16}" text-anchor="middle">{gib}</text>')
            out.append(f'<text x="{pad - 8}" y="{y + 4:.1f}" text-anchor="end">{gib}</text>')
    out.append(f'<text x="{w / 2}" y="{h - 18}" text-anchor="middle">measured peak_alloc (GiB, log)</text>')
    out.append(f'<text x="16" y="{h / 2}" text-anchor="middle" transform="rotate(-90 16 {h / 2})">'
               'predicted (GiB, log)</text>')
    colours = {"anatomy": "#1f77b4", "B/param + Korthikanti": "#d62728", "B/param": "#ff7f0e"}
    for m, p, label in points:
        x, y = xy(m, p)
        out.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3.5" fill="{colours[label]}" fill-opacity="0.75"/>')
    for i, (label, colour) in enumerate(colours.items()):
        out.append(f'<circle cx="{pad + 10}" cy="{pad + 14 * i}" r="4" fill="{colour}"/>')
        out.append(f'<text x="{pad + 20}" y="{pad + 14 * i + 4}">{label}</text>')
    out.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


# Largest-batch searches measure a batch, not a peak.
def needs_later_work(spec):
    return "budget_gib" in spec


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--anatomy", required=True, help="path of the anatomy CLI")
    ap.add_argument("--configs", required=True, help="directory of <model>.json HF configs")
    ap.add_argument("--cases", required=True, action="append", help="JSON lines in the calibration schema")
    ap.add_argument("--table", default="-")
    ap.add_argument("--svg", default=None)
    ap.add_argument("--walk", action="store_true", help="add the analytic walk's error (tensor_peak_bytes)")
    args = ap.parse_args()

    rows, points = [], []
    errors = {"anatomy": [], "walk": [], "B/param": [], "B/param + Korthikanti": [], "reserved": []}
    for path in args.cases:
        for line in open(path):
            case = json.loads(line)
            if "case" not in case:
                continue
            spec = case["spec"]
            if spec.get("use_cache") is False and not spec.get("inference"):
                continue  # training with use_cache=False: not a recipe flag
            if needs_later_work(spec):
                continue
            run = subprocess.run([args.anatomy] + cli_args(spec, args.configs), capture_output=True, text=True)
            if run.returncode != 0:
                sys.exit(f"compare.py: {case['case']}: {run.stderr.strip()}")
            pred = json.loads(run.stdout)
            measured = case["peak_alloc"]
            state, korthikanti = simple_formulas(spec, pred)
            err = (pred["peak_bytes"] - measured) / measured
            e_state = (state - measured) / measured
            e_k = (korthikanti - measured) / measured
            errors["anatomy"].append(abs(err))
            walk = ""
            if args.walk:
                e_walk = (pred["tensor_peak_bytes"] - measured) / measured
                errors["walk"].append(abs(e_walk))
                walk = f"{100 * e_walk:+.2f}% | "
            errors["B/param"].append(abs(e_state))
            errors["B/param + Korthikanti"].append(abs(e_k))
            res = ""
            if "peak_reserved" in case:
                e_r = (pred["reserved_bytes"] - case["peak_reserved"]) / case["peak_reserved"]
                errors["reserved"].append(abs(e_r))
                res = f"{case['peak_reserved'] / MiB:.0f} | {pred['reserved_bytes'] / MiB:.0f} | {100 * e_r:+.1f}%"
            else:
                res = "– | – | –"
            rows.append(f"| {case['case']} | {measured / MiB:.0f} | {pred['peak_bytes'] / MiB:.0f} | {100 * err:+.2f}% "
                        f"| {walk}{100 * e_state:+.0f}% | {100 * e_k:+.0f}% | {res} |")
            points += [(measured, pred["peak_bytes"], "anatomy"), (measured, max(state, 1), "B/param"),
                       (measured, korthikanti, "B/param + Korthikanti")]

    walk_column = "walk error | " if args.walk else ""
    lines = ["| case | measured peak (MiB) | anatomy (MiB) | anatomy error | " + walk_column + "B/param error | "
             "B/param + Korthikanti error | measured reserved (MiB) | replayed reserved (MiB) | reserved error |",
             "|---|---:|---:|---:|" + ("---:|" if args.walk else "") + "---:|---:|---:|---:|---:|"] + rows
    lines.append("")
    for name, values in errors.items():
        if values:
            lines.append(f"- {name}: median |error| {100 * statistics.median(values):.2f}%, "
                         f"max {100 * max(values):.2f}% over {len(values)} cases")
    text = "\n".join(lines) + "\n"
    if args.table == "-":
        sys.stdout.write(text)
    else:
        with open(args.table, "w") as f:
            f.write(text)
    if args.svg:
        svg_plot(points, args.svg)


if __name__ == "__main__":
    main()
