#!/usr/bin/env bash
# Profiling aid for compile time: times a TU that includes one header alone,
# for each public anatomy header, the Boost.Hana headers reflection.hpp uses,
# and the std baseline; plus the three static_assert'ed budgets themselves.
#
#   bench/compile_headers.sh [N]     N runs per TU (default 3); medians of wall
#                                    and cpu (user+sys) seconds
#
# Environment: CXX (default g++), BOOST_INCLUDE, ANATOMY_INCLUDE (as in compile_time.sh).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/.." && pwd)
n=${1:-3}
cxx=${CXX:-g++}
flags=(-std=c++20 -O0 -I"${ANATOMY_INCLUDE:-$root/include}")
[[ -n "${BOOST_INCLUDE:-}" ]] && flags+=(-isystem "$BOOST_INCLUDE")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# time_tu LABEL SOURCE_TEXT: prints the median wall time of N compiles.
time_tu() {
    local label=$1 src="$tmp/tu.cpp" t
    printf '%s\n' "$2" >"$src"
    "$cxx" "${flags[@]}" -c "$src" -o "$tmp/tu.o"  # warm-up, and fail loudly
    : >"$tmp/times"
    TIMEFORMAT='%3R %3U %3S'
    for ((i = 0; i < n; i++)); do
        t=$({ time "$cxx" "${flags[@]}" -c "$src" -o "$tmp/tu.o"; } 2>&1)
        awk '{ printf "%.3f %.3f\n", $1, $2 + $3 }' <<<"$t" >>"$tmp/times"
    done
    printf '  %-48s %7.3f %7.3f\n' "$label" "$(median 1)" "$(median 2)"
}
median() { cut -d' ' -f"$1" "$tmp/times" | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

echo "one header per TU, $($cxx --version | head -n1), -std=c++20 -O0 -c, median of $n"
printf '  %-48s %7s %7s\n' TU wall_s cpu_s
time_tu "(empty)" ""
time_tu "<array> <string> <vector>" $'#include <array>\n#include <string>\n#include <vector>'
time_tu "<stdexcept> <string>  (error.hpp's std part)" $'#include <stdexcept>\n#include <string>'
time_tu "<string_view> <array> <optional> <compare>" \
    $'#include <string_view>\n#include <array>\n#include <optional>\n#include <compare>\n#include <concepts>'
for h in "$root"/include/anatomy/*.hpp "$root"/include/anatomy/detail/*.hpp; do
    rel=${h#"$root/include/"}
    [[ $rel == anatomy/format.hpp ]] && continue  # {fmt}: not part of anatomy.hpp
    time_tu "$rel" "#include <$rel>"
done
for p in define_struct accessors for_each first second string; do
    time_tu "boost/hana/$p.hpp" "#include <boost/hana/$p.hpp>"
done
time_tu "all six Boost.Hana headers of reflection.hpp" \
    $'#include <boost/hana/accessors.hpp>\n#include <boost/hana/define_struct.hpp>\n#include <boost/hana/first.hpp>\n#include <boost/hana/for_each.hpp>\n#include <boost/hana/second.hpp>\n#include <boost/hana/string.hpp>'
time_tu "three_budgets.cpp (anatomy.hpp + 3 budgets)" "$(cat "$here/compile/three_budgets.cpp")"
