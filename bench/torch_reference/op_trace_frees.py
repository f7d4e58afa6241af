#!/usr/bin/env python3
"""What a module frees between two ops, from a families op trace (the raw
files in results/families/raw.tar.gz: one op's allocated bytes before, a0,
and after, a1). Prints each drop between op i's a1 and op i+1's a0 over the
ops of modules starting with PREFIX, with the modules on either side: where
a Python frame returns, the bytes its names held.

  python3 op_trace_frees.py results/families/raw.tar.gz deepseek-v2-s_bf16_infer_b4_s4096_cache model.layers.1.mlp
"""
import argparse
import gzip
import json
import tarfile

ap = argparse.ArgumentParser()
ap.add_argument("archive")
ap.add_argument("case")
ap.add_argument("prefix", help="module path prefix, e.g. model.layers.1.mlp")
ap.add_argument("--min-bytes", type=int, default=1 << 20, help="smallest drop printed (default 1 MiB)")
a = ap.parse_args()

with tarfile.open(a.archive) as tar:
    member = tar.extractfile(f"raw/{a.case}.raw.json.gz")
    if member is None:
        raise SystemExit(f"op_trace_frees.py: {a.archive} holds no raw/{a.case}.raw.json.gz")
    ops = json.loads(gzip.decompress(member.read()))["ops"]
inside = [i for i, o in enumerate(ops) if (o["mod"] or "").startswith(a.prefix)]
if not inside:
    raise SystemExit(f"op_trace_frees.py: no op of a module starting with {a.prefix}")
for i in range(inside[0], min(inside[-1] + 2, len(ops) - 1)):
    freed = ops[i]["a1"] - ops[i + 1]["a0"]
    if freed >= a.min_bytes:
        print(f"op {i} ({ops[i]['op']}, {ops[i]['mod']}) -> op {i + 1} ({ops[i + 1]['op']}, {ops[i + 1]['mod']}): "
              f"{freed:,} B freed")
