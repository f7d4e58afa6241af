#!/usr/bin/env bash
# Runs every line of runs.txt through llm.c's trainer (built by build.sh) for two
# steps on random tokens, keeping each run's log: its own "allocating ..." lines
# and the byte-exact cudaMalloc sizes that cuda_malloc_log.cpp prints.
#   bench/llmc/run.sh BUILD_DIR LOG_DIR [RUNS_FILE (default: runs.txt beside this script)]
set -uo pipefail
build=$(realpath "$1"); logs=$(realpath -m "$2"); here=$(dirname "$(realpath "$0")")
runs=$(realpath "${3:-$here/runs.txt}")
mkdir -p "$logs"; work=$(mktemp -d)
python3 "$here/make_shard.py" "$work/tokens.bin"
grep -v '^#' "$runs" | while read -r name binary descriptor B T recompute master; do
    [ -n "$name" ] || continue
    (cd "$work" && timeout 300 "$build/$binary" -e "$descriptor" -b "$B" -t "$T" -r "$recompute" \
        -w "$master" -i tokens.bin -j tokens.bin -x 2 -v 1000 -m 1 -s 0 -h 0) \
        > "$logs/$name.log" 2>&1
    echo "$name exit $?" | tee -a "$logs/status.txt"
done
