#!/usr/bin/env python3
"""What a segment_trace.py output says about segments: how many were opened,
and each release of cached ones (a run of consecutive segment_free events,
as one cudaMalloc under the cap frees them) with its bytes.

  python3 segment_releases.py TRACE.jsonl[.gz]
"""
import gzip, json, sys

path = sys.argv[1]
with (gzip.open(path, "rt") if path.endswith(".gz") else open(path)) as f:
    events = [json.loads(line) for line in f]
summary, events = events[-1], events[:-1]
opened = [e[2] for e in events if e[0] == "segment_alloc"]
releases, freed, previous = [], 0, False
for action, _, size in events:
    if action == "segment_free":
        if not previous:
            releases.append(0)
        releases[-1] += size
        freed += 1
    previous = action == "segment_free"
print(f"{len(opened)} segments opened, {sum(opened) / 1e9:.2f} GB; max_memory_reserved {summary['max_reserved'] / 1e9:.2f} GB")
print(f"{freed} segments freed in {len(releases)} releases: " + ", ".join(f"{r / 1e9:.2f} GB" for r in releases))
