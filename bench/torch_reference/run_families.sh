#!/bin/bash
# device run: (1) untraced in-process run (empty_cache between cases, file order), which should
# reproduce the families file's peak_alloc; (2) traced, fork-isolated run of the same cases plus
# the sdpa variants of bloom-s / gptj-s.
D=bench/torch_reference/configs-families  # shared/calibration/configs/*.json + families.jsonl copied here (ignored), extra_sdpa.jsonl from results/families/
M=bench/torch_reference/measure.py
SKIP='^(?!.*(trainer|qlora|lion|maxb))'
python3 -c 'import torch,transformers,peft;print(torch.__version__,transformers.__version__,peft.__version__,torch.cuda.get_device_name(0))'
T1=$(date +%s)
timeout ${INPROC_S:-140} python3 $M --cases $D/families.jsonl --configs $D --style families --only "$SKIP" \
  --isolation none --empty-cache-between --out $OUT/inproc.jsonl
echo "inproc run took $(( $(date +%s) - T1 ))s"
T0=$(date +%s)
timeout ${TRACE_T:-420} python3 $M --cases $D/families.jsonl --cases $D/extra_sdpa.jsonl --configs $D --style families \
  --only "$SKIP" --trace --trace-dir /tmp/raw --out $OUT/traced.jsonl --case-timeout 150 --max-seconds ${TRACE_S:-300}
echo "traced run took $(( $(date +%s) - T0 ))s"
tar czf $OUT/raw.tar.gz -C /tmp raw 2>/dev/null
ls -la $OUT
