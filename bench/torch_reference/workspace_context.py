#!/usr/bin/env python3
"""Where a segment trace's cuBLAS workspaces land, and what was allocated around them.

A workspace is a block of --size bytes (32 MiB: PyTorch 2.11's on sm90) that is
never freed. For each, prints its event index, the segment it lies in (when
that segment opened, its size, the block's offset), and the allocations and
frees just before and after it, in bytes (+ allocated, - freed, S a segment
opened), so that the order of a backward's gradients can be read off.

  python3 workspace_context.py results/segments_gpt2_fp32_b2_s1024.jsonl.gz [--around 4]
"""
import argparse
import gzip
import json

ap = argparse.ArgumentParser()
ap.add_argument("trace", help="segment_trace.py's output, plain or .gz")
ap.add_argument("--size", type=int, default=32 << 20)
ap.add_argument("--around", type=int, default=4)
a = ap.parse_args()

opener = gzip.open if a.trace.endswith(".gz") else open
with opener(a.trace, "rt") as f:
    events = [json.loads(line) for line in f]
events = [e for e in events if isinstance(e, list)]
live = {}
for i, (action, addr, size) in enumerate(events):
    if action == "alloc":
        live[addr] = (i, size)
    elif action == "free_completed":
        live.pop(addr, None)
segments = [(addr, size, i) for i, (action, addr, size) in enumerate(events) if action == "segment_alloc"]
for addr, (i, size) in sorted(live.items(), key=lambda kv: kv[1][0]):
    if size != a.size:
        continue
    where = next(((s_addr, s_size, s_i) for s_addr, s_size, s_i in segments if s_addr <= addr < s_addr + s_size), None)
    print(f"workspace at event {i}: segment opened at event {where[2]}, {where[1]} B, offset {addr - where[0]} B")
    marks = {"alloc": "+", "free_completed": "-", "segment_alloc": "S", "segment_free": "s-"}
    for j in range(max(0, i - a.around), min(len(events), i + a.around + 1)):
        action, _, size = events[j]
        print(f"  {'>' if j == i else ' '} {j}: {marks.get(action, action)}{size}")
