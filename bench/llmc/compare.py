"""Compares `anatomy estimate --framework llm.c` with llm.c's own logs
(bench/llmc/run.sh) and prints a markdown table: every cudaMalloc, the
printed MiB lines, the device usage and llm.c's maximum-batch estimate.
    python3 bench/llmc/compare.py ANATOMY_BINARY LOG_DIR
LOG_DIR holds runs.txt and one NAME.log per run (tests/data/llmc-h200)."""
import json
import re
import subprocess
import sys

anatomy, logs = sys.argv[1], sys.argv[2]


def runs():
    for line in open(f"{logs}/runs.txt"):
        if line.strip() and not line.startswith("#"):
            name, binary, descriptor, b, t, r, w = line.split()
            yield name, binary.endswith("_cudnn"), descriptor, int(b), int(t), int(r), int(w)


def number(text, pattern):
    m = re.search(pattern, text, re.M)
    return int(m.group(1)) if m else None


print("| run | buffers (cudaMalloc) | bytes, llm.c | bytes, anatomy | activations MiB printed / predicted "
      "| device usage MiB printed / predicted | est. max batch printed / predicted | anatomy max batch |")
print("|---|---|---|---|---|---|---|---|")
exact = 0
total = 0
for name, cudnn, descriptor, b, t, r, w in runs():
    text = open(f"{logs}/{name}.log").read()
    mallocs = [int(x) for x in re.findall(r"^anatomy-cudaMalloc (\d+)$", text, re.M)]
    args = [anatomy, "estimate", "--framework", "llm.c", "--model", descriptor, "--batch", str(b), "--seq", str(t),
            "--recompute", str(r), "--gpu", "h200", "--json"] + (["--cudnn"] if cudnn else []) + \
           ([] if w else ["--no-master-weights"])
    j = json.loads(subprocess.run(args, check=True, capture_output=True, text=True).stdout)
    predicted = list(j["ledger"].values())
    if cudnn:  # llm.c also allocates the forward's 256-byte cuDNN workspace before the backward's
        predicted.insert(len(predicted) - 1, 256)
    same = predicted == mallocs
    total += 1
    exact += same
    acts = number(text, r"^allocating (\d+) MiB for activations")
    acts_predicted = int(re.search(r"(\d+)", j["printed"]["activations"]).group(1))
    usage = number(text, r"^device memory usage: (\d+) MiB")
    est = number(text, r"estimated maximum batch size: (\d+)")
    g = j["gpu"]
    print(f"| {name} | {len(mallocs)} / {len(predicted)} {'equal' if same else 'DIFFER'} | {sum(mallocs):,} "
          f"| {sum(predicted):,} | {acts} / {acts_predicted} | {usage} / {g['printed_device_memory_usage_mib']} "
          f"| {est} / {g['printed_estimated_max_batch']} | {g['max_batch']} |")
print(f"\n{exact} of {total} runs: every cudaMalloc equal, byte for byte.")
