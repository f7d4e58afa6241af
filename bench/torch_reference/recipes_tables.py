"""The torch.compile, LLM.int8 and DeepSpeed tables of docs/accuracy.md: anatomy estimate --config
for every case of tests/data/compile-h200.jsonl and tests/data/int8-h200.jsonl (measured peaks less
the cuBLAS workspaces, 65 MiB in training and 33 MiB in inference, each case a process of its own)
and tests/data/deepspeed-h200.jsonl, against the measured peaks.

  python3 bench/torch_reference/recipes_tables.py [build/examples/anatomy]
"""
import json, subprocess, sys

anatomy = sys.argv[1] if len(sys.argv) > 1 else "build/examples/anatomy"
WORKSPACE = 65 * 2**20
INFERENCE_WORKSPACE = 33 * 2**20


def estimate(spec, extra):
    cmd = [anatomy, "estimate", "--config", "tests/data/calibration-configs/%s.json" % spec["model"],
           "--batch", str(spec["batch"]), "--seq", str(spec["seq"]), "--json"] + extra
    return json.loads(subprocess.run(cmd, capture_output=True, text=True, check=True).stdout)


def summary(errors):
    errors = sorted(abs(e) for e in errors)
    n = len(errors)
    median = errors[n // 2] if n % 2 else (errors[n // 2 - 1] + errors[n // 2]) / 2
    return "%d cases: median |error| %.2f %%, max %.2f %%" % (n, median, errors[-1])


def cases(path):
    for line in open(path):
        d = json.loads(line)
        if "case" in d:
            yield d


print("| case | measured MiB | anatomy MiB | error | eager estimate MiB |\n|---|---:|---:|---:|---:|")
errors = []
for d in cases("tests/data/compile-h200.jsonl"):
    s = d["spec"]
    flags, words = [], [s["model"], s.get("weights") or ("amp-" + s["amp"] if s.get("amp") else "fp32"),
                         "b%d s%d" % (s["batch"], s["seq"])]
    # The bench builds from_config(dtype=fp32) unless `weights` says otherwise, whatever the config's dtype.
    flags += ["--weights", s.get("weights", "fp32")]
    if s.get("amp"): flags += ["--autocast", s["amp"]]
    if s.get("attn"): flags += ["--attention", s["attn"]]; words.append("eager attention")
    if s.get("gc"): flags += ["--grad-checkpointing"]; words.append("checkpointing")
    if s.get("loop") == "drop": flags += ["--loop", "loss-only"]; words.append("loss-only")
    eager = estimate(s, flags)["peak_bytes"]
    predicted = estimate(s, flags + ["--compile"])["peak_bytes"]
    measured = d["peak_alloc"] - WORKSPACE
    errors.append(100 * (predicted - measured) / measured)
    print("| %s | %s | %s | %+.2f %% | %s |" % (" ".join(words), format(measured >> 20, ","),
                                              format(predicted >> 20, ","), errors[-1], format(eager >> 20, ",")))
print("\n" + summary(errors) + "\n")

print("| case | measured MiB | anatomy MiB | error |\n|---|---:|---:|---:|")
errors = []
for d in cases("tests/data/int8-h200.jsonl"):
    s = d["spec"]
    words = [s["model"], "b%d s%d" % (s["batch"], s["seq"])]
    flags = ["--quantize", "int8"]
    if s.get("inference"):
        # no prepare_model_for_kbit_training: the rest stays in the loaded dtype
        flags += ["--weights", s["weights"], "--inference"] + (["--kv-cache"] if s.get("use_cache") else [])
        words[1:1] = [s["weights"], "inference", "with the cache" if s.get("use_cache") else "no cache"]
    else:
        targets = s.get("lora_targets", ["q_proj", "v_proj"])
        flags += ["--lora-rank", str(s["lora"]), "--lora-targets", ",".join(targets)]
        words[1:1] = ["LoRA r%d %s" % (s["lora"], "all 7" if len(targets) == 7 else ",".join(t[0] for t in targets))]
        if s.get("gc"): flags += ["--grad-checkpointing"]; words.append("checkpointing")
    predicted = estimate(s, flags)["peak_bytes"]
    measured = d["peak_alloc"] - (INFERENCE_WORKSPACE if s.get("inference") else WORKSPACE)
    errors.append(100 * (predicted - measured) / measured)
    print("| %s | %s | %s | %+.2f %% |" % (" ".join(words), format(measured >> 20, ","), format(predicted >> 20, ","),
                                          errors[-1]))
print("\n" + summary(errors) + "\n")

print("| case | measured MiB | anatomy MiB | error | backward measured / anatomy MiB |\n|---|---:|---:|---:|---:|")
errors = []
for d in cases("tests/data/deepspeed-h200.jsonl"):
    s = d["spec"]
    offload = {"offopt": ["--offload", "optimizer"], "offall": ["--offload", "params"]}.get(s.get("offload"), [])
    e = estimate(s, ["--weights", "bf16", "--master-weights", "fp32", "--parallel", "zero%d" % s["stage"],
                     "--world-size", "1"] + offload)
    measured = d["peak_alloc"]
    errors.append(100 * (e["peak_bytes"] - measured) / measured)
    print("| %s b%d s%d ZeRO-%d%s | %s | %s | %+.2f %% | %s / %s |" % (
        s["model"], s["batch"], s["seq"], s["stage"], " offload " + offload[1] if offload else "",
        format(measured >> 20, ","), format(e["peak_bytes"] >> 20, ","), errors[-1],
        format(d["steps"][-1]["bwd_peak"] >> 20, ","), format(e["phases"]["backward"] >> 20, ",")))
print("\n" + summary(errors))
