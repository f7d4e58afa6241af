#!/usr/bin/env python3
"""Which torch.utils.checkpoint implementation each way of turning gradient
checkpointing on picks (docs/accuracy.md, "the reentrant checkpoint";
recipe.hpp, checkpoint_impl). Prints the installed versions and:

  * transformers' PreTrainedModel.gradient_checkpointing_enable (its default
    gradient_checkpointing_kwargs);
  * torch.utils.checkpoint.checkpoint's handling of use_reentrant=None;
  * peft's prepare_model_for_kbit_training (what it passes);
  * where transformers.Trainer turns checkpointing on itself.

Needs torch, transformers and peft (the device machine has them):

  python3 bench/torch_reference/checkpoint_sources.py
"""
import inspect

import peft
import torch
import torch.utils.checkpoint
import transformers
from peft.utils import other as peft_other
from transformers import modeling_utils


def around(text, needle, before, after):
    i = text.find(needle)
    return text[max(0, i - before): i + after] if i >= 0 else f"({needle!r} not found)"


print("torch", torch.__version__, "transformers", transformers.__version__, "peft", peft.__version__)
print("=== transformers gradient_checkpointing_enable")
print(around(inspect.getsource(modeling_utils.PreTrainedModel.gradient_checkpointing_enable),
             "if gradient_checkpointing_kwargs is None", 0, 200))
print("=== torch.utils.checkpoint.checkpoint, use_reentrant=None")
print(around(inspect.getsource(torch.utils.checkpoint.checkpoint), "if use_reentrant is None", 0, 700))
print("=== peft prepare_model_for_kbit_training")
print(around(inspect.getsource(peft_other.prepare_model_for_kbit_training),
             "gradient_checkpointing_kwargs is None", 0, 120))
print(around(inspect.getsource(peft_other.prepare_model_for_kbit_training),
             "model.gradient_checkpointing_enable(", 300, 100))
print("=== transformers.Trainer")
print(around(inspect.getsource(transformers.trainer), "if args.gradient_checkpointing:", 0, 700))
