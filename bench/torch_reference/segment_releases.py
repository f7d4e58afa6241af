#!/usr/bin/env python3
"""What a segment_trace.py output says about segments: how many were opened,
and each release of cached ones (a run of consecutive segment_free events,
as one cudaMalloc under the cap frees them) with its bytes. With
--opened-over-mib N, every segment of N MiB or more opened (+) or
released (-), in order, in MiB.

  python3 segment_releases.py TRACE.jsonl[.gz] [--opened-over-mib N]
"""
import argparse, gzip, json

ap = argparse.ArgumentParser()
ap.add_argument("trace")
ap.add_argument("--opened-over-mib", type=float)
a = ap.parse_args()
path = a.trace
with (gzip.open(path, "rt") if path.endswith(".gz") else open(path)) as f:
    events = [json.loads(line) for line in f]
summary, events = events[-1], events[:-1]
opened = [e[2] for e in events if e[0] == "segment_alloc"]
releases, freed, previous = [], 0, False
for action, _, size, *_frames in events:
    if action == "segment_free":
        if not previous:
            releases.append(0)
        releases[-1] += size
        freed += 1
    previous = action == "segment_free"
print(f"{len(opened)} segments opened, {sum(opened) / 1e9:.2f} GB; max_memory_reserved {summary['max_reserved'] / 1e9:.2f} GB")
print(f"{freed} segments freed in {len(releases)} releases: " + ", ".join(f"{r / 1e9:.2f} GB" for r in releases))
if a.opened_over_mib is not None:
    print(" ".join(f"{'+' if action == 'segment_alloc' else '-'}{size / 2**20:g}" for action, _, size, *_frames in events
                   if action in ("segment_alloc", "segment_free") and size >= a.opened_over_mib * 2**20))
