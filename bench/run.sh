#!/usr/bin/env bash
# Builds the benchmarks in Release, runs them and checks the performance targets
# (docs/performance.md):
#
#   bench/run.sh [BUILD_DIR]          default: build-bench (relative to the repo root)
#
#   one anatomy::estimate              <= 2 us     (Google Benchmark, median CPU time, worst case)
#   one allocator replay of llama-3-8b <= 100 us   (Google Benchmark, median CPU time, worst case)
#   one anatomy::max_batch solve       <= 100 us   (Google Benchmark, median CPU time, worst case)
#   one CLI call (anatomy estimate)    <= 10 ms    (bench/cli_latency.sh, median)
#   max-batch / estimate processes     <= 2x       (bench/process_ratios.sh, median wall time)
#   64 x 8 sweep / estimate processes  <= 10x      (bench/process_ratios.sh, median wall time)
#   three-budget TU / std-only TU      <= 2.5x     (bench/compile_time.sh, g++ -O0, median CPU time)
#
# Exit status: 0 if every target is met, 1 if one is missed, 2 if something
# could not be built or run. Environment: REPS (benchmark repetitions, default 5),
# COMPILE_RUNS (default 5), CLI_RUNS (default 200), PROCESS_RUNS (default 30), CMAKE_ARGS (extra configure args),
# SNAPSHOT=1 (build and measure a copy of the tree taken at the start, under
# BUILD_DIR/snapshot, so that edits made by others during the run do not mix in),
# ANATOMY_INCLUDE (implies SNAPSHOT=1: the copy takes its include/ from there).
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/.." && pwd)
build=${1:-build-bench}
[[ $build = /* ]] || build="$root/$build"
reps=${REPS:-5}
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
read -r -a cmake_extra <<<"${CMAKE_ARGS:-}"

declare -a summary
status=0
record() {  # record NAME FIGURE TARGET VERDICT
    summary+=("$(printf '  %-34s %-28s %-10s %s' "$1" "$2" "$3" "$4")")
    case $4 in
        PASS) ;;
        FAIL) ((status < 1)) && status=1 ;;
        *) status=2 ;;
    esac
}

changed=$(git -C "$root" status --porcelain -- include 2>/dev/null | awk '{ print $2 }' | tr '\n' ' ')
echo "== source: $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo '?')" \
    "${changed:++ uncommitted changes in include/: $changed}"
src=$root
mkdir -p "$build"
if [[ -n ${SNAPSHOT:-} || -n ${ANATOMY_INCLUDE:-} ]]; then
    src="$build/snapshot"
    rm -rf "$src" && mkdir -p "$src"
    cp -r "$root/CMakeLists.txt" "$root/cmake" "$root/bench" "$root/examples" "$src/"
    cp -r "${ANATOMY_INCLUDE:-$root/include}" "$src/include"
    export ANATOMY_INCLUDE="$src/include"  # for compile_time.sh
    echo "== measuring a snapshot: $src"
fi
# A build dir configured from another source dir must be configured afresh.
if [[ -f $build/CMakeCache.txt ]] && ! grep -qxF "CMAKE_HOME_DIRECTORY:INTERNAL=$src" "$build/CMakeCache.txt"; then
    rm -rf "$build/CMakeCache.txt" "$build/CMakeFiles"
fi
echo "== headers' content hash: $(cd "$src/include" && find . -type f | LC_ALL=C sort | xargs sha256sum | sha256sum | cut -c1-12)" \
    "(cd include && find . -type f | LC_ALL=C sort | xargs sha256sum | sha256sum)"
echo "== configure + build ($build, Release)"
# Tests are left out: the bench build must not depend on the test framework.
# Examples stay on: they build the CLI that cli_latency.sh times; if they cannot
# be configured (CLI11 or nlohmann_json missing), the bench is built without them.
configure() {
    cmake -S "$src" -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release -DANATOMY_BUILD_BENCH=ON \
        -DANATOMY_BUILD_TESTS=OFF -DANATOMY_BUILD_EXAMPLES="$1" "${cmake_extra[@]}" >"$build/configure.log" 2>&1
}
if ! configure ON; then
    echo "run.sh: configure with the examples failed (see $build/configure.log); retrying without the CLI" >&2
    cp "$build/configure.log" "$build/configure-examples.log"
    if ! configure OFF; then
        cat "$build/configure.log" >&2
        echo "run.sh: configure failed" >&2
        exit 2
    fi
fi
if ! cmake --build "$build" --target anatomy_bench_runtime; then
    echo "run.sh: the runtime benchmark does not build" >&2
    exit 2
fi
cli="$build/examples/anatomy"
# The CLI is the target anatomy_cli (output name `anatomy`; `anatomy` itself is the library).
if ! cmake --build "$build" --target anatomy_cli >"$build/cli-build.log" 2>&1; then
    echo "run.sh: the CLI (target anatomy_cli) does not build; the CLI call is not measured" \
        "(see $build/cli-build.log)" >&2
    rm -f "$cli"  # never time a stale binary
fi

echo
echo "== run time (Google Benchmark, $reps repetitions, medians)"
json="$build/bench/runtime.json"
if "$build/bench/anatomy_bench_runtime" --benchmark_repetitions="$reps" --benchmark_report_aggregates_only=true \
    --benchmark_out="$json" --benchmark_out_format=json; then
    # The worst (by median CPU time) benchmark whose name starts with $1: "cpu_ns real_ns name".
    # CPU time is checked: on a shared machine real time also counts the time
    # the benchmark waits for a core; on an idle one the two agree.
    # With REPS=1 Google Benchmark writes no aggregates: the single runs stand for the medians.
    rows='def rows: if any(.benchmarks[]; .aggregate_name == "median")
        then .benchmarks[] | select(.aggregate_name == "median") else .benchmarks[] | select(.run_type == "iteration") end;'
    worst() {
        jq -r --arg p "$1" "$rows"' [rows | select(.run_name | startswith($p))
            | ({"ns": 1, "us": 1e3, "ms": 1e6, "s": 1e9}[.time_unit]) as $u
            | {n: .run_name, c: (.cpu_time * $u), r: (.real_time * $u)}] | max_by(.c) | "\(.c) \(.r) \(.n)"' "$json"
    }
    verdict() { awk -v t="$1" -v m="$2" 'BEGIN { print (t <= m ? "PASS" : "FAIL") }'; }
    figure() { awk -v c="$1" -v r="$2" -v d="$3" 'BEGIN { printf "%.*f us (real %.*f)", d, c / 1e3, d, r / 1e3 }'; }
    read -r est_cpu est_real est_name < <(worst estimate_case/)
    read -r rep_cpu rep_real rep_name < <(worst replay_case/llama_3_8b)
    read -r mb_cpu mb_real mb_name < <(worst max_batch_case/)
    record "one estimate (worst preset)" "$(figure "$est_cpu" "$est_real" 2)" "<= 2 us" "$(verdict "$est_cpu" 2000)"
    record "one replay of llama-3-8b (worst)" "$(figure "$rep_cpu" "$rep_real" 0)" "<= 100 us" "$(verdict "$rep_cpu" 100000)"
    record "one max_batch solve (worst)" "$(figure "$mb_cpu" "$mb_real" 0)" "<= 100 us" "$(verdict "$mb_cpu" 100000)"
    echo "  worst estimate: $est_name; worst replay: $rep_name; worst max_batch: $mb_name (checked on median CPU time)"
    echo "  per case (median CPU time):"
    jq -r "$rows"' rows
        | ({"ns": 1, "us": 1e3, "ms": 1e6, "s": 1e9}[.time_unit]) as $u
        | "    \(.run_name | sub("_case"; ""))  \(.cpu_time * $u / 1e3 * 100 | round / 100) us"
          + (if .max_batch then "  (answer \(.max_batch))" else "" end)' "$json"
else
    record "one estimate" "-" "<= 2 us" "NOT RUN"
    record "one replay of llama-3-8b" "-" "<= 100 us" "NOT RUN"
    record "one max_batch solve" "-" "<= 100 us" "NOT RUN"
fi

echo
echo "== CLI call"
if [[ -x $cli ]]; then
    out=$("$src/bench/cli_latency.sh" "$cli" "${CLI_RUNS:-200}")
    rc=$?
    echo "$out"
    ms=$(sed -n 's/.*median \([0-9.]*\) ms,.*/\1/p' <<<"$out" | head -n1)
    case $rc in
        0) record "one CLI call (bert-large estimate)" "$ms ms" "<= 10 ms" PASS ;;
        1) record "one CLI call (bert-large estimate)" "$ms ms" "<= 10 ms" FAIL ;;
        *) record "one CLI call (bert-large estimate)" "-" "<= 10 ms" "NOT RUN (the call failed)" ;;
    esac
else
    echo "  no CLI at $cli"
    record "one CLI call (bert-large estimate)" "-" "<= 10 ms" "NOT RUN (no CLI binary)"
fi

echo
echo "== whole processes side by side"
if [[ -x $cli ]]; then
    out=$("$src/bench/process_ratios.sh" "$cli" "${PROCESS_RUNS:-30}")
    rc=$?
    echo "$out"
    mb=$(sed -n 's/.*max-batch.* \([0-9.]*\)x estimate.*/\1/p' <<<"$out")
    sw=$(sed -n 's/.*sweep 64 x 8.* \([0-9.]*\)x estimate.*/\1/p' <<<"$out")
    if ((rc == 2)); then
        record "max-batch / estimate process" "-" "<= 2x" "NOT RUN (a call failed)"
        record "64 x 8 sweep / estimate process" "-" "<= 10x" "NOT RUN (a call failed)"
    else
        record "max-batch / estimate process" "${mb}x" "<= 2x" "$(awk -v x="$mb" 'BEGIN { print (x <= 2 ? "PASS" : "FAIL") }')"
        record "64 x 8 sweep / estimate process" "${sw}x" "<= 10x" "$(awk -v x="$sw" 'BEGIN { print (x <= 10 ? "PASS" : "FAIL") }')"
    fi
else
    record "max-batch / estimate process" "-" "<= 2x" "NOT RUN (no CLI binary)"
    record "64 x 8 sweep / estimate process" "-" "<= 10x" "NOT RUN (no CLI binary)"
fi

echo
echo "== compile time"
out=$("$src/bench/compile_time.sh" "${COMPILE_RUNS:-5}")
rc=$?
echo "$out"
ratio=$(sed -n 's/.*= \([0-9.]*\)x (.*/\1/p' <<<"$out" | tail -n1)
case $rc in
    0) record "three-budget TU / std-only TU" "${ratio}x" "<= 2.5x" PASS ;;
    1) record "three-budget TU / std-only TU" "${ratio}x" "<= 2.5x" FAIL ;;
    *) record "three-budget TU / std-only TU" "-" "<= 2.5x" "NOT RUN" ;;
esac

echo
echo "== summary ($(nproc) cores, $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n1)," \
    "load average $(cut -d' ' -f1-3 /proc/loadavg))"
printf '  %-34s %-28s %-10s %s\n' target figure limit verdict
printf '%s\n' "${summary[@]}"
exit $status
