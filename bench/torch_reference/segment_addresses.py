#!/usr/bin/env python3
"""Where the CUDA driver put each segment of kept allocator traces, relative to
the segments alive then: above them all, below them all, or between the
lowest and the highest of them (in a range none of them holds). Also the first segment's size and how far
above its start the later segments reach. The allocator model assumes a new
segment lies below the older ones (caching_allocator.hpp); this shows where
that fails.

  python3 segment_addresses.py results/segments_*.jsonl.gz
  python3 segment_addresses.py --segments 8 results/segments_X.jsonl.gz

--segments N lists instead the first N segments of each trace opened above
20 MiB, as size@start in MiB from the first one's start.
"""
import argparse
import gzip
import json

ap = argparse.ArgumentParser()
ap.add_argument("--segments", type=int, help="list the first N segments of 20 MiB or more instead")
ap.add_argument("traces", nargs="+")
a = ap.parse_args()

if a.segments is None:
    print(f"{'trace':60s} {'first MiB':>9s} {'reach MiB':>9s} {'above':>6s} {'gap':>5s} {'below':>6s}")
for path in a.traces:
    name = path.rsplit("/", 1)[-1].removeprefix("segments_").removesuffix(".jsonl.gz")
    if a.segments is not None:
        opened = []
        for line in gzip.open(path, "rt"):
            e = json.loads(line)
            if isinstance(e, list) and e[0] == "segment_alloc" and e[2] >= 20 << 20:
                opened.append((e[1], e[2]))
        start = opened[0][0]
        print(name, " ".join(f"{size / 2**20:g}@{(address - start) / 2**20:g}" for address, size in opened[:a.segments]))
        continue
    live = {}  # address -> size
    first = first_size = None
    reach = 0
    counts = {"above": 0, "gap": 0, "below": 0}
    for line in gzip.open(path, "rt"):
        e = json.loads(line)
        if not isinstance(e, list):
            continue
        if e[0] == "segment_alloc":
            address, size = e[1], e[2]
            if first is None:
                first, first_size = address, size
            elif live:
                low = min(live)
                high = max(a + s for a, s in live.items())
                counts["below" if address + size <= low else "above" if address >= high else "gap"] += 1
            if address > first:
                reach = max(reach, address + size - first)
            live[address] = size
        elif e[0] == "segment_free":
            live.pop(e[1], None)
    print(f"{name[:60]:60s} {first_size / 2**20:9.0f} {reach / 2**20:9.0f} "
          f"{counts['above']:6d} {counts['gap']:5d} {counts['below']:6d}")
