#!/usr/bin/env bash
# Builds the libFuzzer targets with clang and runs each on its committed corpus
# (fuzz/corpus/<target>/; fuzz_hf_config also on every config under
# tests/data/) for FUZZ_SECONDS (default 30). New inputs go to a
# scratch directory, crashes to build-fuzz/artifacts/; any crash, leak or
# sanitizer report fails the run. A timeout (one input over 20 s) counts too.
#   scripts/fuzz.sh                    30 s per target, as CI runs it
#   FUZZ_SECONDS=600 scripts/fuzz.sh   the runs docs/fuzzing.md records
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${FUZZ_SECONDS:-30}
cmake -S . -B build-fuzz -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      -DANATOMY_BUILD_FUZZERS=ON -DANATOMY_BUILD_TESTS=OFF -DANATOMY_BUILD_EXAMPLES=OFF -DANATOMY_INSTALL=OFF >/dev/null
cmake --build build-fuzz -j "$(nproc)"
mkdir -p build-fuzz/artifacts
# The real configs the tests use are seeds too, read where they live.
declare -A seeds=([fuzz_hf_config]="tests/data/calibration-configs tests/data/configs")
for target in fuzz_parse_bytes fuzz_hf_config fuzz_cli; do
    scratch=$(mktemp -d)
    echo "== $target, ${seconds} s"
    # Run from the repository root: fuzz_cli's seeds name config files by relative path.
    ./build-fuzz/fuzz/$target -max_total_time="$seconds" -timeout=20 -rss_limit_mb=4096 -print_final_stats=1 \
        -artifact_prefix=build-fuzz/artifacts/$target- "$scratch" fuzz/corpus/$target ${seeds[$target]:-} 2>&1 |
        grep -E "INITED|DONE|ERROR|SUMMARY|stat::number_of_executed_units|Test unit written" || true
    rm -rf "$scratch"
    if ls build-fuzz/artifacts/$target-* >/dev/null 2>&1; then
        echo "fuzz.sh: $target found an input that fails; see build-fuzz/artifacts/" >&2
        exit 1
    fi
done
