#!/usr/bin/env bash
# Whether the tree's headers give the same answers as another copy of them:
# bench/probe/answers.cpp (every preset's estimates, its allocator replays,
# capped and uncapped, and its max_batch solves) built against both, its
# outputs compared.
# For changes meant only to be faster.
#
#   bench/same_answers.sh OTHER_INCLUDE_DIR     e.g. from: git archive REV include | tar -x -C DIR
#
# Exit 0 when every line is the same, 1 when one differs (the diff is printed).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
other=${1:?usage: bench/same_answers.sh OTHER_INCLUDE_DIR}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
g++ -std=c++20 -O2 -I"$other" "$root/bench/probe/answers.cpp" -o "$work/other"
g++ -std=c++20 -O2 -I"$root/include" "$root/bench/probe/answers.cpp" -o "$work/this"
"$work/other" >"$work/other.txt"
"$work/this" >"$work/this.txt"
lines=$(wc -l <"$work/this.txt")
if diff "$work/other.txt" "$work/this.txt"; then
    echo "same answers: $lines lines ($(grep -c '^estimate' "$work/this.txt") estimates, $(grep -c '^replay' "$work/this.txt") replays, $(grep -c '^max_batch' "$work/this.txt") max_batch solves; $(grep -c ': [a-z]' "$work/this.txt") of them errors)"
else
    exit 1
fi
