#!/usr/bin/env python3
"""A kept allocator trace beside the replay's calls, allocation by allocation.

TRACE is segment_trace.py's gzipped output; CALLS is what a CLI built with
bench/probe/print_allocator_calls.patch printed (one replay or more; the
last whose model build begins with `M model` is read, or the `--replay`-th).
For the allocations of more than 1 MiB (the large pool) it prints how many
each made, the first whose size differs, and the first placed elsewhere:
in another segment (segments matched by their order of opening among the
large pool's) or at another offset in it.

  python3 replay_placements.py results/segments_X.jsonl.gz calls.txt [--replay N] [--start I]
"""
import argparse
import gzip
import json
from collections import Counter

SMALL = 1 << 20  # requests up to 1 MiB go to the small pool

ap = argparse.ArgumentParser()
ap.add_argument("trace")
ap.add_argument("calls")
ap.add_argument("--replay", type=int, help="which replay of CALLS, from 1 (default: the last)")
ap.add_argument("--start", type=int, default=0, help="compare from this allocation on (default 0)")
a = ap.parse_args()


def traced(path):
    """(size, segment rank, offset) of each large allocation, in order."""
    segments, rank, out = {}, {}, []
    for line in gzip.open(path, "rt"):
        e = json.loads(line)
        if not isinstance(e, list):
            continue
        action, address, size = e[0], e[1], e[2]
        if action == "segment_alloc":
            segments[address] = size
            if size > 2 * SMALL:  # the small pool's segments are 2 MiB
                rank[address] = len(rank)
        elif action == "segment_free":
            segments.pop(address)
        elif action == "alloc" and size > SMALL:
            start = next(s for s, n in segments.items() if s <= address < s + n)
            out.append((size, rank[start], address - start))
    return out


def replayed(path, which):
    replays, out, rank = [], None, {}
    for line in open(path):
        f = line.split()
        if f[:2] == ["M", "model"]:
            out, rank = [], {}
            replays.append(out)
        elif out is None or not f:
            continue
        elif f[0] == "S" and int(f[1]) > 2 * SMALL:
            rank[f[2]] = len(rank)
        elif f[0] == "A" and int(f[1]) > SMALL:
            out.append((int(f[1]), rank[f[2]], int(f[3].removeprefix("off"))))
    if not replays:
        raise SystemExit(f"replay_placements.py: {path} holds no replay (no `M model` line)")
    return replays[-1 if which is None else which - 1]


t, r = traced(a.trace), replayed(a.calls, a.replay)
print(f"large allocations: trace {len(t)}, replay {len(r)}")
pairs = list(zip(t, r))
sized = next((i for i in range(a.start, len(pairs)) if pairs[i][0][0] != pairs[i][1][0]), None)
placed = next((i for i in range(a.start, len(pairs)) if pairs[i][0][1:] != pairs[i][1][1:]), None)
for what, i in (("size", sized), ("placement", placed)):
    if i is None:
        print(f"first {what} that differs: none up to allocation {len(pairs) - 1}")
    else:
        print(f"first {what} that differs: allocation {i}, trace {t[i]}, replay {r[i]} (size, segment, offset)")
# Every size that differs, by (trace, replay) pair: how far the walk's requests are the GPU's.
differing = Counter((tr[0], rp[0]) for tr, rp in pairs[a.start:] if tr[0] != rp[0])
print(f"sizes that differ: {sum(differing.values())} of {len(pairs) - a.start}")
for (size_t, size_r), n in differing.most_common(5):
    print(f"  trace {size_t}, replay {size_r}: {n} times")
