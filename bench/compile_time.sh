#!/usr/bin/env bash
# Compile-time cost of the library at g++ -O0 (full -c compile to an object).
#
#   bench/compile_time.sh [N]        N runs per file (default 5); median reported
#
# Times three translation units, interleaved round-robin so that load on the
# machine hits each about equally:
#   bench/compile/empty.cpp          the compiler's start-up cost
#   bench/compile/std_only.cpp       <vector>, <string>, <array>
#   bench/compile/three_budgets.cpp  <anatomy/anatomy.hpp> + three static_assert'ed budgets
# and checks the target: three_budgets <= 2.5 x std_only (exit 1 if not).
#
# Environment:
#   CXX            compiler (default g++)
#   CXXFLAGS       extra flags (default none; the measured flags are -std=c++20 -O0)
#   BOOST_INCLUDE  Boost's include dir, if not a system one (added with -isystem)
#   METRIC         cpu | wall: which median the target is checked on (default cpu:
#                  user+sys of the compiler, which a loaded machine disturbs less;
#                  on an idle machine the two agree)
#   MAX_RATIO      the target (default 2.5)
#   ANATOMY_INCLUDE  the include dir measured (default: this tree's include/)
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/.." && pwd)
n=${1:-5}
cxx=${CXX:-g++}
metric=${METRIC:-cpu}
max_ratio=${MAX_RATIO:-2.5}
include_flags=(-I"${ANATOMY_INCLUDE:-$root/include}")
[[ -n "${BOOST_INCLUDE:-}" ]] && include_flags+=(-isystem "$BOOST_INCLUDE")
read -r -a extra_flags <<<"${CXXFLAGS:-}"
flags=(-std=c++20 -O0 "${include_flags[@]}" "${extra_flags[@]}")

files=(empty std_only three_budgets)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# One compile; appends "wall_s cpu_s" to $tmp/<name>.times.
compile_once() {
    local name=$1 t
    TIMEFORMAT='%3R %3U %3S'
    if ! t=$({ time "$cxx" "${flags[@]}" -c "$here/compile/$name.cpp" -o "$tmp/$name.o" 2>"$tmp/$name.err"; } 2>&1); then
        echo "compile_time.sh: $name.cpp does not compile:" >&2
        cat "$tmp/$name.err" >&2
        exit 2
    fi
    awk '{ printf "%.3f %.3f\n", $1, $2 + $3 }' <<<"$t" >>"$tmp/$name.times"
}

# Median of column $2 of file $1.
median() { cut -d' ' -f"$2" "$1" | sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else printf "%.3f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

for name in "${files[@]}"; do compile_once "$name"; : >"$tmp/$name.times"; done  # warm the page cache
for ((i = 0; i < n; i++)); do
    for name in "${files[@]}"; do compile_once "$name"; done
done

echo "compile time, $($cxx --version | head -n1), flags: ${flags[*]} -c, median of $n"
printf '  %-18s %9s %9s\n' file wall_s cpu_s
declare -A wall cpu
for name in "${files[@]}"; do
    wall[$name]=$(median "$tmp/$name.times" 1)
    cpu[$name]=$(median "$tmp/$name.times" 2)
    printf '  %-18s %9.3f %9.3f\n' "$name.cpp" "${wall[$name]}" "${cpu[$name]}"
done
ratio_wall=$(awk -v a="${wall[three_budgets]}" -v b="${wall[std_only]}" 'BEGIN { printf "%.2f", a / b }')
ratio_cpu=$(awk -v a="${cpu[three_budgets]}" -v b="${cpu[std_only]}" 'BEGIN { printf "%.2f", a / b }')
# Above the empty TU's start-up cost, for reading: what the headers themselves add.
net=$(awk -v a="${wall[three_budgets]}" -v b="${wall[std_only]}" -v e="${wall[empty]}" \
    'BEGIN { if (b - e > 0) printf "%.2f", (a - e) / (b - e); else print "n/a" }')
echo "  ratio three_budgets/std_only: wall ${ratio_wall}x, cpu ${ratio_cpu}x (net of empty TU, wall: ${net}x)"

ratio=$ratio_cpu
[[ $metric == wall ]] && ratio=$ratio_wall
if awk -v r="$ratio" -v m="$max_ratio" 'BEGIN { exit !(r > m) }'; then
    echo "  FAIL: three_budgets/std_only = ${ratio}x ($metric) > ${max_ratio}x"
    exit 1
fi
echo "  PASS: three_budgets/std_only = ${ratio}x ($metric) <= ${max_ratio}x"
