"""The families table of docs/accuracy.md: anatomy estimate --config for every
dense case of tests/data/families-h200.jsonl against its measured peak.

  python3 bench/torch_reference/families_table.py [build/examples/anatomy]
"""
import json, subprocess, sys
rows=[]
for l in open('tests/data/families-h200.jsonl'):
    d=json.loads(l)
    if 'case' not in d or 'peak_alloc' not in d: continue
    s=d['spec']
    a=[(sys.argv[1] if len(sys.argv) > 1 else 'build/examples/anatomy'),'estimate','--config','tests/data/calibration-configs/%s.json'%s['model'],'--batch',str(s['batch']),'--json']
    if s['model']!='vit-s': a+=['--seq',str(s['seq'])]
    if s.get('qlora'): a+=['--quantize','nf4']
    else: a+=['--weights',s.get('weights','fp32')]  # the bench's from_config dtype, not the config's
    if s.get('amp'): a+=['--autocast',s['amp']]
    if s.get('attn'): a+=['--attention',s['attn']]
    if s.get('gc'): a+=['--grad-checkpointing']
    if s.get('opt')=='lion': a+=['--optimizer','lion']
    if s.get('loop'): a+=['--loop', {'drop':'loss-only','trainer':'hf-trainer'}[s['loop']]]
    if s.get('inference'): a+=['--inference']+(['--kv-cache'] if s.get('use_cache') else [])
    if s.get('lora'): a+=['--lora-rank',str(s['lora']),'--lora-targets',','.join(s.get('lora_targets',['q_proj','v_proj']))]
    j=json.loads(subprocess.run(a,capture_output=True,text=True).stdout)
    p=j['peak_bytes']; m=d['peak_alloc']
    rows.append((d['case'], d.get('attn_implementation'), m, p, 100*(p-m)/m, j['reserved_bytes'], d['peak_reserved']))
print('| case | attention | measured MiB | predicted MiB | error | reserved: predicted / measured MiB |')
print('|---|---|---:|---:|---:|---:|')
for c,at,m,p,e,rp,rm in rows: print(f'| {c} | {at} | {m/2**20:,.0f} | {p/2**20:,.0f} | {e:+.2f} % | {rp/2**20:,.0f} / {rm/2**20:,.0f} |')
errs=sorted(abs(r[4]) for r in rows); n=len(errs)
med = errs[n//2] if n%2 else (errs[n//2-1]+errs[n//2])/2
rerr=sorted(abs(100*(r[5]-r[6])/r[6]) for r in rows)
print(f'\n{n} cases: median |error| {med:.3f} %, max {errs[-1]:.2f} %; reserved median {rerr[n//2]:.2f} %, max {rerr[-1]:.2f} %')
