#!/usr/bin/env python3
"""The whole-card search table of docs/validation.md: for each search of a
fresh-fit file, max-batch's answer, the largest batch that ran, the card's
peak allocated less the two cuBLAS workspaces (64 MiB, which the estimate's
peak leaves out), and the estimate's and the replay's peaks at that batch.

  python3 fresh_peaks_table.py build/examples/anatomy tests/data/fresh-fit-training-h100.jsonl tests/data/configs
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
    args = cli_args(dict(spec, batch=batch), configs) + ["--gpu", spec["gpu"]]
    if command == "max-batch":  # max-batch takes estimate's flags less the batch
        at = args.index("--batch")
        args = ["max-batch"] + args[1:at] + args[at + 2:]
    return json.loads(subprocess.run([anatomy] + args, capture_output=True, text=True, check=True).stdout)


print("| model and recipe | tokens | `max-batch` | ran | the card's peak | the estimate's peak | the replay's peak |")
print("|---|---:|---:|---:|---:|---:|---:|")
for line in open(data):
    search = json.loads(line)
    if "trials" not in search:
        continue
    spec = search["spec"]
    ran = max((t for t in search["trials"] if t["ok"]), key=lambda t: t["batch"])
    est = run(spec, ran["batch"])
    answer = run(spec, ran["batch"], "max-batch")["max_batch"]
    measured = ran["peak_alloc"] - WORKSPACES
    name = spec["model"] + (" checkpointed" if spec.get("gc") else "")
    if spec.get("lora"):
        name += ", LoRA r%d on %s" % (spec["lora"], ", ".join(spec["lora_targets"]))
    cell = lambda b: "{:,} ({:+.3f} %)".format(b, (b - measured) / measured * 100).replace("-", "\u2212")
    print("| %s | {:,} | %d | %d | {:,} | %s | %s |".format(spec["seq"], measured)
          % (name, answer, ran["batch"], cell(est["peak_bytes"]), cell(est["replayed_peak_bytes"])))
