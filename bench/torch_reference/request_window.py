#!/usr/bin/env python3
"""A window of a kept allocator trace's large requests, for a test to find in the walk's.

Reads segment_trace.py's gzipped trace and prints, as one JSON object, the
allocations and frees of at least 1 MiB from the `start`-th such event to
the `end`-th, each as its block size (rounded up to 512 bytes), negative for
a free.

  python3 request_window.py results/segments_X.jsonl.gz START END > tests/data/X.json
"""
import gzip
import json
import sys

path, start, end = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
events = []
for line in gzip.open(path, "rt"):
    e = json.loads(line)
    if not isinstance(e, list) or e[0] not in ("alloc", "free_completed") or e[2] < 1 << 20:
        continue
    size = (e[2] + 511) // 512 * 512
    events.append(size if e[0] == "alloc" else -size)
print(json.dumps({"trace": path.rsplit("/", 1)[-1], "first": start, "events": events[start:end]}))
