#!/bin/bash
# The torch.compile, LLM.int8 and DeepSpeed-offload measurements behind
# tests/data/{compile,int8}-h200.jsonl (int8 from results/int8-h200.jsonl and int8-check-h200.jsonl,
# traces dropped) and the ZeRO-2 offload trace, on one H200.
# ONLY_COMPILE="a b" limits the compile cases to those names; SKIP_INT8_DS=1 skips
# the int8 and DeepSpeed runs. Every compile case runs in its own process (inductor compiles on the CPU, so
# they overlap); each process's peaks are its own allocator's. Needs
# bitsandbytes and DeepSpeed on PYTHONPATH: the wheels `pip install --target`ed into
# .whl/site and carried to the device (README.md, "Wheels the device lacks").
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out=${OUT:-/tmp/out}
work=/tmp/measure_work
mkdir -p "$work/compile" "$out"
export PYTHONPATH=$root/.whl/site${PYTHONPATH:+:$PYTHONPATH}
configs=$root/tests/data/calibration-configs
cd "$here"
python3 - <<'PY' > "$work/names"
import json
for c in json.load(open("cases/compile.json")): print(c["name"])
PY
while read -r name; do
    [ -n "${ONLY_COMPILE:-}" ] && ! grep -qx "$name" <<<"${ONLY_COMPILE// /$'\n'}" && continue
    timeout 540 python3 measure.py --cases cases/compile.json --configs "$configs" \
        --only "^$name\$" --isolation none --out "$work/compile/$name.jsonl" 2> "$work/compile/$name.log" &
done < "$work/names"
# Where compiled steps peak: the allocator's events in the third step.
for t in "llama3.2-1b --weights bf16 --batch 4 --seq 2048" "llama3.2-1b --weights bf16 --batch 4 --seq 2048 --loop drop" \
         "gpt2 --amp bf16 --batch 8 --seq 1024"; do
    set -- $t
    tag=$(echo "$t" | tr -d ' -' | tr -c 'a-z0-9.\n' '_')
    timeout 540 python3 compile_trace.py --configs "$configs" --model $t --out "$work/compile/trace_$tag.json" \
        > "$work/compile/trace_$tag.log" 2>&1 &
done
[ -n "${SKIP_INT8_DS:-}" ] || {
timeout 540 python3 measure.py --cases cases/int8.json --configs "$configs" --trace \
    --out "$work/int8.jsonl" 2> "$work/int8.log" &
# The five cases that checked the LLM.int8 rules after they were written.
timeout 540 python3 measure.py --cases cases/int8-check.json --configs "$configs" --trace \
    --out "$work/int8-check.jsonl" 2> "$work/int8-check.log" &
# Largest batches of LLM.int8 LoRA under a cap (the gc case exceeds measure.py's case timeout).
timeout 540 python3 measure.py --cases cases/int8-maxbatch.json --configs "$configs" \
    --out "$work/int8-maxbatch.jsonl" 2> "$work/int8-maxbatch.log" &
timeout 540 python3 deepspeed_measure.py --configs "$configs" --cases tinyllama-1.1b:2:offopt,gpt2:2:offopt \
    --snapshot --out "$work/ds_offload_trace.jsonl" 2> "$work/ds.log" &
}
wait
cat "$work"/compile/*.jsonl > "$out/compile-h200.jsonl"
[ -n "${SKIP_INT8_DS:-}" ] || cp "$work/int8.jsonl" "$out/int8-h200.jsonl"
[ -n "${SKIP_INT8_DS:-}" ] || cp "$work/int8-check.jsonl" "$out/int8-check-h200.jsonl"
[ -n "${SKIP_INT8_DS:-}" ] || cp "$work/int8-maxbatch.jsonl" "$out/int8-maxbatch-h200.jsonl"
[ -n "${SKIP_INT8_DS:-}" ] || cp "$work/ds_offload_trace.jsonl" "$out/"
tar -czf "$out/logs.tar.gz" -C "$work" .
nvidia-smi --query-gpu=name,memory.total --format=csv > "$out/gpu.txt"
