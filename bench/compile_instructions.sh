#!/usr/bin/env bash
# Load-independent companion of compile_time.sh: counts the instructions the
# compiler proper (cc1plus) executes for each TU, under valgrind's callgrind.
# On a shared machine wall and cpu times move by 30% from run to run; the
# instruction count does not, so the ratio is a steadier reading of the target
# (three_budgets <= 2.5 x std_only). Slow: ~40x a normal compile (minutes).
#
#   bench/compile_instructions.sh
#
# Environment: CXX (default g++), ANATOMY_INCLUDE, BOOST_INCLUDE (as in compile_time.sh).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/.." && pwd)
cxx=${CXX:-g++}
flags=(-std=c++20 -O0 -I"${ANATOMY_INCLUDE:-$root/include}")
[[ -n "${BOOST_INCLUDE:-}" ]] && flags+=(-isystem "$BOOST_INCLUDE")
command -v valgrind >/dev/null || { echo "compile_instructions.sh: needs valgrind" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
printf '#include <anatomy/anatomy.hpp>\n' >"$tmp/anatomy_only.cpp"

# Instructions of the compiler's largest child (cc1plus), in millions.
count() {
    valgrind --tool=callgrind --trace-children=yes --callgrind-out-file="$tmp/cg.%p" \
        "$cxx" "${flags[@]}" -c "$1" -o "$tmp/out.o" 2>"$tmp/log"
    sed -n 's/.*Collected : \([0-9]*\).*/\1/p' "$tmp/log" | sort -n | tail -n1 | awk '{ printf "%.0f", $1 / 1e6 }'
}

echo "compiler instructions (callgrind, cc1plus), $($cxx --version | head -n1), ${flags[*]} -c"
declare -A mi
for tu in "$here/compile/empty.cpp" "$here/compile/std_only.cpp" "$tmp/anatomy_only.cpp" \
    "$here/compile/three_budgets.cpp"; do
    name=$(basename "$tu" .cpp)
    mi[$name]=$(count "$tu")
    printf '  %-18s %8s M instructions\n' "$name.cpp" "${mi[$name]}"
done
awk -v t="${mi[three_budgets]}" -v s="${mi[std_only]}" -v a="${mi[anatomy_only]}" 'BEGIN {
    printf "  ratio three_budgets/std_only: %.2fx (anatomy.hpp alone: %.2fx; the three constexpr estimates: %.2fx)\n",
        t / s, a / s, (t - a) / s }'
