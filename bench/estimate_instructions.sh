#!/usr/bin/env bash
# Instructions of 500 estimates from an estimator (llama-3-8b bf16, 1 x 4096),
# of 3 allocator replays, of 500 plain estimates, of 3 replays with
# gradient checkpointing at 4 x 4096, and of one replay with 16 micro-steps
# of accumulation, counted by callgrind:
# figures the machine's load does not move (docs/performance.md).
#   bench/estimate_instructions.sh [INCLUDE_DIR]   default: the tree's include/
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
include=${1:-$root/include}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
g++ -std=c++20 -O3 -DNDEBUG -I"$include" "$root/bench/probe/estimates.cpp" -o "$work/estimates"
count() { valgrind --tool=callgrind --callgrind-out-file="$work/cg" "$work/estimates" "$@" 2>&1 | sed -n 's/.*Collected : //p'; }
estimates=$(count)
with_replays=$(count replays)
plain=$(count plain)
checkpointed=$(($(count checkpointed) - $(count checkpointed-none)))
accumulating=$(($(count accumulating) - $(count accumulating-none)))
echo "500 estimates: $estimates instructions"
echo "3 replays: $((with_replays - estimates)) instructions"
echo "500 plain estimates: $plain instructions"
echo "3 checkpointed replays: $checkpointed instructions"
echo "1 replay with 16 micro-steps: $accumulating instructions"
