#!/usr/bin/env python3
"""Runs shared/calibration/measure_h200.py's cases and adds to each record how the run called
torch.utils.checkpoint.checkpoint: `checkpoint_calls`, the number of calls by their use_reentrant
argument ("absent" where none was passed). It tells which checkpoint a recipe took (the Trainer's
gradient_checkpointing=True, peft's prepare_model_for_kbit_training) without reading the sources.

Usage (on the GPU machine, with bitsandbytes on PYTHONPATH for QLoRA cases):
  python3 trainer_checkpoint_calls.py MEASURE_H200_DIR CASES.json CONFIG_DIR OUT.jsonl [measure_h200.py's flags]
tests/data/trainer-h200.jsonl is `cases/trainer.json` run this way.
"""
import collections
import sys

import torch.utils.checkpoint

calls = collections.Counter()
unwrapped = torch.utils.checkpoint.checkpoint


def counted_checkpoint(*args, **kwargs):
    calls[repr(kwargs.get("use_reentrant", "absent"))] += 1
    return unwrapped(*args, **kwargs)


# Before transformers is imported, so that whatever name it binds is the counted one.
torch.utils.checkpoint.checkpoint = counted_checkpoint
sys.path.insert(0, sys.argv.pop(1))
import measure_h200  # noqa: E402

run_case = measure_h200.run_case


def run_case_counting(case, cdir):
    calls.clear()
    rec = run_case(case, cdir)
    rec["checkpoint_calls"] = dict(calls)
    print(case["name"], "checkpoint calls", dict(calls), flush=True)
    return rec


measure_h200.run_case = run_case_counting
measure_h200.main()
