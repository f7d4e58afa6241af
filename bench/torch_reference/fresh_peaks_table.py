#!/usr/bin/env python3
"""The search tables of docs/validation.md: for each search of a fresh-fit
file, max-batch's answer, the largest batch that ran, the card's peak
allocated less the two cuBLAS workspaces (64 MiB, which the estimate's peak
leaves out), and the estimate's and the replay's peaks at that batch. A
search with `gpu` takes the whole card (--gpu), one without it the cap
`budget_gib` (--budget); the table then has a budget column.

  python3 fresh_peaks_table.py build/examples/anatomy tests/data/fresh-fit-training-h100.jsonl tests/data/configs
  python3 fresh_peaks_table.py build/examples/anatomy tests/data/fresh-fit-recipes-h100.jsonl tests/data/configs
"""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare import cli_args  # noqa: E402 (beside this script)

WORKSPACES = 2 * 32 * 2**20
anatomy, data, configs = sys.argv[1:4]


def run(spec, batch, command="estimate"):
    args = cli_args(dict(spec, batch=batch), configs)
    args += ["--gpu", spec["gpu"]] if "gpu" in spec else ["--budget", "%gGiB" % spec["budget_gib"]]
    if command == "max-batch":  # max-batch takes estimate's flags less the batch
        at = args.index("--batch")
        args = ["max-batch"] + args[1:at] + args[at + 2:]
    return json.loads(subprocess.run([anatomy] + args, capture_output=True, text=True, check=True).stdout)


searches = [s for s in map(json.loads, open(data)) if "trials" in s]
capped = any("gpu" not in s["spec"] for s in searches)
print("| model and recipe | tokens |%s `max-batch` | ran | the card's peak | the estimate's peak | the replay's peak |"
      % (" budget |" if capped else ""))
print("|---|---:|%s---:|---:|---:|---:|---:|" % ("---:|" if capped else ""))
for search in searches:
    spec = search["spec"]
    ran = max((t for t in search["trials"] if t["ok"]), key=lambda t: t["batch"])
    est = run(spec, ran["batch"])
    answer = run(spec, ran["batch"], "max-batch")["max_batch"]
    measured = ran["peak_alloc"] - WORKSPACES
    recipe = ["autocast " + spec["amp"] if spec.get("amp") else spec.get("weights", "fp32")]
    recipe += [spec["opt"]] if spec.get("opt") else []
    recipe += ["eager attention"] if spec.get("attn") == "eager" else []
    recipe += ["%d micro-steps" % spec["grad_accum"]] if spec.get("grad_accum", 1) > 1 else []
    recipe += ["loss only"] if spec.get("loop") == "drop" else []
    recipe += ["checkpointed"] if spec.get("gc") else []
    recipe += ["compiled"] if spec.get("compile") else []
    name = spec["model"] + (" " + ", ".join(recipe) if capped else " checkpointed" if spec.get("gc") else "")
    if spec.get("lora"):
        name += ", LoRA r%d on %s" % (spec["lora"], ", ".join(spec["lora_targets"]))
    tokens = "{:,}".format(spec["seq"]) + (" → {:,}".format(spec["tgt"]) if spec.get("tgt") else "")
    budget = " %g GiB |" % spec["budget_gib"] if capped else ""
    cell = lambda b: "{:,} ({:+.3f} %)".format(b, (b - measured) / measured * 100).replace("-", "\u2212")
    print("| %s | %s |%s %d | %d | {:,} | %s | %s |".format(measured)
          % (name, tokens, budget, answer, ran["batch"], cell(est["peak_bytes"]), cell(est["replayed_peak_bytes"])))
