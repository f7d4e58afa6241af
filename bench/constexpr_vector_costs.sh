#!/usr/bin/env bash
# What a std::vector operation costs in g++'s constexpr operation count: the
# operations of a loop of 1,100 less one of 100, over 1,000
# (docs/performance.md, detail/growing_vector.hpp). Minutes: each count is a
# bisection of bench/constexpr_ops.sh.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
ops() {  # ITERATIONS STATEMENT
    cat > "$work/v.cpp" <<CPP
#include <cstddef>
#include <vector>
constexpr bool run() {
    std::vector<std::size_t> v;
    v.reserve(8);
    v.push_back(1);
    v.push_back(2);
    for (int i = 0; i < $1; ++i) { $2 }
    return !v.empty();
}
static_assert(run());
CPP
    "$root/bench/constexpr_ops.sh" "$work/v.cpp"
}
per() { echo "$2: $((($(ops 1100 "$1") - $(ops 100 "$1")) / 1000)) operations"; }
per "v[0] = v[1] + 1;" "a subscript (two, an add and the loop)"
per "v.push_back(5); v.pop_back();" "push_back with pop_back"
per "v.insert(v.begin(), 5); v.erase(v.begin());" "an insert at the front with its erase"
