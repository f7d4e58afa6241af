#!/usr/bin/env bash
# Latency of one whole CLI call (process start to exit), target <= 10 ms:
#
#   bench/cli_latency.sh PATH/TO/anatomy [RUNS]
#
# times `anatomy estimate --model bert-large --task seq-cls --batch 4 --seq 512`,
# RUNS times (default 200) after 20 warm-up runs, with hyperfine if it is
# installed (no intermediate shell: -N), else with a timed shell loop
# (bash's EPOCHREALTIME where it exists, so the timer forks nothing).
# The median is checked;
# exit 1 above the target, 2 if the CLI is missing or the call fails.
#
# Environment: MAX_MS (default 10); NO_HYPERFINE=1 forces the shell loop.
set -euo pipefail

cli=${1:?usage: bench/cli_latency.sh PATH/TO/anatomy [RUNS]}
runs=${2:-200}
max_ms=${MAX_MS:-10}
args=(estimate --model bert-large --task seq-cls --batch 4 --seq 512)

if [[ ! -x $cli ]]; then
    echo "cli_latency.sh: no CLI binary at $cli (build the examples: cmake --build <dir> --target anatomy)" >&2
    exit 2
fi
if ! out=$("$cli" "${args[@]}" 2>&1); then
    echo "cli_latency.sh: '$cli ${args[*]}' failed:" >&2
    echo "$out" >&2
    exit 2
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "CLI call: $cli ${args[*]}"

if [[ -z ${NO_HYPERFINE:-} ]] && command -v hyperfine >/dev/null && command -v jq >/dev/null; then
    tool="hyperfine $(hyperfine --version | cut -d' ' -f2), -N"
    hyperfine -N --style none --warmup 20 --runs "$runs" --export-json "$tmp/h.json" \
        "$cli ${args[*]}" >/dev/null
    read -r median mean min max stddev cpu < <(jq -r '.results[0] | [.median, .mean, .min, .max, .stddev, (.user + .system)]
        | map(. * 1000) | map(tostring) | join(" ")' "$tmp/h.json")
else
    # bash 5's EPOCHREALTIME costs no fork; `date +%s%N` adds two per run.
    if [[ -n ${EPOCHREALTIME:-} ]]; then tool="bash EPOCHREALTIME loop"; else tool="date +%s%N loop"; fi
    for ((i = 0; i < 20; i++)); do "$cli" "${args[@]}" >/dev/null; done
    for ((i = 0; i < runs; i++)); do
        t0=${EPOCHREALTIME:-}; [[ -z $t0 ]] && t0=$(date +%s%N)
        "$cli" "${args[@]}" >/dev/null
        t1=${EPOCHREALTIME:-}; [[ -z $t1 ]] && t1=$(date +%s%N)
        echo "$t0 $t1" >>"$tmp/ns"
    done
    # EPOCHREALTIME is seconds.microseconds; date +%s%N is nanoseconds.
    read -r median mean min max stddev < <(awk '{ d = ($1 ~ /[.,]/) ? ($2 - $1) * 1e3 : ($2 - $1) / 1e6; print d }' \
        "$tmp/ns" | sort -g | awk '{ v[NR] = $1; s += v[NR]; q += v[NR] ^ 2 }
        END { m = s / NR; med = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2;
              print med, m, v[1], v[NR], sqrt(q / NR - m * m) }')
fi

awk -v a="$median" -v b="$mean" -v c="$min" -v d="$max" -v e="$stddev" -v n="$runs" -v t="$tool" -v u="${cpu:-}" \
    'BEGIN { printf "  %d runs (%s): median %.2f ms, mean %.2f +- %.2f ms, min %.2f ms, max %.2f ms", n, t, a, b, e, c, d
             if (u != "") printf "; user+sys %.2f ms (mean)", u
             printf "\n" }'
if awk -v m="$median" -v x="$max_ms" 'BEGIN { exit !(m > x) }'; then
    printf '  FAIL: median %.2f ms > %s ms\n' "$median" "$max_ms"
    exit 1
fi
printf '  PASS: median %.2f ms <= %s ms\n' "$median" "$max_ms"
