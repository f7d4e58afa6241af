#!/usr/bin/env bash
# The operations one constant evaluation takes, as g++ counts them for
# -fconstexpr-ops-limit (clang: steps, for -fconstexpr-steps): the smallest
# limit under which FILE still compiles, found by bisection (within 1 %).
# FILE's largest constant evaluation sets it.
#
#   bench/constexpr_ops.sh FILE [COMPILER FLAGS...]    e.g. -DBATCH=4
#
# Environment: CXX (default g++; a clang++ counts steps), ANATOMY_INCLUDE (default the tree's include/).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cxx=${CXX:-g++}
limit=-fconstexpr-ops-limit
[[ $("$cxx" --version) == *clang* ]] && limit=-fconstexpr-steps
file=$1
shift
flags=("$@")
compiles() { "$cxx" -std=c++20 -fsyntax-only -I"${ANATOMY_INCLUDE:-$root/include}" "${flags[@]}" "$limit=$1" "$file" 2>/dev/null; }
lo=1 hi=$((1 << 30))
compiles "$hi" || { echo "constexpr_ops.sh: $file does not compile even at $limit=$hi" >&2; exit 2; }
while ((hi - lo > lo / 100 + 1)); do
    mid=$(((lo + hi) / 2))
    if compiles "$mid"; then hi=$mid; else lo=$mid; fi
done
echo "$hi"
