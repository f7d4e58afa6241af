#!/usr/bin/env bash
# Whole processes side by side (issue 13): `anatomy max-batch` at most 2x,
# and a 64 x 8 `anatomy sweep` at most 10x, one `anatomy estimate` of the
# same model, recipe and card. The sweep's table replays only the cells it
# prints; the same sweep with --json, which replays every cell, is timed too
# and reported without a target:
#
#   bench/process_ratios.sh PATH/TO/anatomy [RUNS]
#
# Each command runs RUNS times (default 30; the sweep a fifth as often, at
# least 3) after 3 warm-up runs; the medians of wall time are compared.
# Exit 1 when a ratio is over its target, 2 when a command fails.
set -euo pipefail

cli=${1:?usage: bench/process_ratios.sh PATH/TO/anatomy [RUNS]}
runs=${2:-30}
model=(--model llama-3-8b --weights bf16 --gpu h200)
estimate=(estimate "${model[@]}" --batch 1 --seq 4096)
max_batch=(max-batch "${model[@]}" --seq 4096)
sweep=(sweep "${model[@]}" --batch 1:64 --seq 512:65536:x2)

# median_ms RUNS COMMAND...: the median wall time of the command, in ms.
median_ms() {
    local n=$1
    shift
    "$@" >/dev/null || { echo "process_ratios.sh: '$*' failed" >&2; exit 2; }
    for ((i = 0; i < 3; i++)); do "$@" >/dev/null; done
    for ((i = 0; i < n; i++)); do
        local t0=$EPOCHREALTIME
        "$@" >/dev/null
        echo "$t0 $EPOCHREALTIME"
    done | awk '{ print ($2 - $1) * 1e3 }' | sort -g |
        awk '{ v[NR] = $1 } END { print NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

e=$(median_ms "$runs" "$cli" "${estimate[@]}")
m=$(median_ms "$runs" "$cli" "${max_batch[@]}")
s=$(median_ms "$(( runs / 5 > 3 ? runs / 5 : 3 ))" "$cli" "${sweep[@]}")
j=$(median_ms "$(( runs / 5 > 3 ? runs / 5 : 3 ))" "$cli" "${sweep[@]}" --json)
status=0
report() {  # report NAME MS TARGET_RATIO
    local verdict
    verdict=$(awk -v x="$2" -v e="$e" -v t="$3" 'BEGIN { print (x / e <= t ? "PASS" : "FAIL") }')
    [[ $verdict = PASS ]] || status=1
    awk -v n="$1" -v x="$2" -v e="$e" -v t="$3" -v v="$verdict" \
        'BEGIN { printf "  %-42s %9.2f ms  %6.2fx estimate  (<= %sx) %s\n", n, x, x / e, t, v }'
}
echo "  anatomy ${estimate[*]}: median $e ms"
report "max-batch (${max_batch[*]:1:6})" "$m" 2
report "sweep 64 x 8 (${sweep[*]:7})" "$s" 10
awk -v x="$j" -v e="$e" 'BEGIN { printf "  %-42s %9.2f ms  %6.2fx estimate  (every cell replayed; no target)\n", "the same sweep with --json", x, x / e }'
exit $status
