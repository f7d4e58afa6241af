#!/usr/bin/env python3
"""Parameter counts of Hugging Face models, as transformers itself builds them.

For every config.json given (files, or directories searched recursively for
*.json), the model class named by architectures[0] is built on the meta device
the way transformers builds a model for training (cls._from_config(cfg) under
`with torch.device("meta")`), and sum(p.numel() for p in model.parameters())
is recorded -- tied weights are counted once, since parameters() yields a
shared tensor once.  AutoModelForCausalLM is the fallback where the class is
missing from transformers.

Extra entries, keyed "<file>#<Class>", are recorded for other heads:
  * encoder types (bert, roberta, distilbert, modernbert): *ForMaskedLM and
    *ForSequenceClassification with num_labels = 2;
  * decoder-only types: *ForSequenceClassification with num_labels = 2;
each skipped where it is the class of the main entry.

The result (default tests/data/param-counts-transformers<ver>.json) is
  {"transformers": ..., "torch": ...,
   "counts": {"<path>": {"class": C, "params": N, "tensors": K}, ...}}
where <path> is relative to the repository root, or "shared/..." for files
under the sibling ../shared checkout.  Nothing is downloaded and no weights are
allocated, so even 70B configs take well under a second each.
"""
from __future__ import annotations

import argparse
import copy
import json
import logging
import sys
import warnings
from pathlib import Path

import torch
import transformers
from transformers.models.auto.configuration_auto import CONFIG_MAPPING
from transformers.models.auto.modeling_auto import (
    MODEL_FOR_CAUSAL_LM_MAPPING_NAMES,
    MODEL_FOR_MASKED_LM_MAPPING_NAMES,
    MODEL_FOR_SEQUENCE_CLASSIFICATION_MAPPING_NAMES,
)

REPO = Path(__file__).resolve().parents[2]
SHARED = (REPO.parent / "shared").resolve()
DEFAULT_INPUTS = [
    REPO / "tests/data/configs",
    REPO / "tests/cli/data/hf_configs",
    REPO / "tests/cli/data/unseen",
    SHARED / "calibration/configs",
]
ENCODER_TYPES = {"bert", "roberta", "distilbert", "modernbert"}


class _Capture(logging.Handler):
    def __init__(self):
        super().__init__(logging.WARNING)
        self.records: list[str] = []

    def emit(self, record):
        self.records.append(record.getMessage())


def key_of(path: Path) -> str:
    p = path.resolve()
    for root, prefix in ((REPO, ""), (SHARED, "shared/")):
        try:
            return prefix + p.relative_to(root).as_posix()
        except ValueError:
            pass
    return p.as_posix()


def collect(inputs: list[Path]) -> list[Path]:
    files: list[Path] = []
    for inp in inputs:
        if inp.is_dir():
            files += sorted(inp.rglob("*.json"))
        elif inp.is_file():
            files.append(inp)
        else:
            print(f"warning: {inp} does not exist, skipped", file=sys.stderr)
    return files


def load_config(path: Path):
    d = json.loads(path.read_text())
    model_type = d.get("model_type")
    if model_type is None:
        raise ValueError("config has no model_type")
    return CONFIG_MAPPING[model_type].from_dict(d)


def build(cls, cfg):
    with torch.device("meta"):
        if hasattr(cls, "_from_config"):
            return cls._from_config(cfg)
        return cls(cfg)


def measure(model) -> dict:
    params = list(model.parameters())  # shared (tied) tensors appear once
    return {"class": type(model).__name__, "params": sum(p.numel() for p in params), "tensors": len(params)}


def count_main(cfg):
    archs = getattr(cfg, "architectures", None) or []
    cls = getattr(transformers, archs[0], None) if archs else None
    if cls is None:
        with torch.device("meta"):
            return measure(transformers.AutoModelForCausalLM.from_config(cfg))
    return measure(build(cls, cfg))


def extra_classes(cfg) -> list[str]:
    mt = cfg.model_type
    names = []
    if mt in ENCODER_TYPES:
        names += [MODEL_FOR_MASKED_LM_MAPPING_NAMES.get(mt), MODEL_FOR_SEQUENCE_CLASSIFICATION_MAPPING_NAMES.get(mt)]
    elif mt in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES and not getattr(cfg, "is_encoder_decoder", False):
        names.append(MODEL_FOR_SEQUENCE_CLASSIFICATION_MAPPING_NAMES.get(mt))
    return [n for n in names if n]


def count_extra(cfg, name: str):
    cls = getattr(transformers, name)
    c = copy.deepcopy(cfg)
    if "SequenceClassification" in name:
        c.num_labels = 2
    c.architectures = [name]
    return measure(build(cls, c))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("inputs", nargs="*", type=Path, help="config files or directories (default: the repo's sets)")
    ap.add_argument("-o", "--out", type=Path,
                    default=REPO / f"tests/data/param-counts-transformers{transformers.__version__}.json")
    ap.add_argument("-q", "--quiet", action="store_true", help="do not print one line per model")
    args = ap.parse_args()

    capture = _Capture()
    tlog = logging.getLogger("transformers")
    tlog.addHandler(capture)
    counts: dict[str, dict] = {}
    problems: list[str] = []
    for path in collect(args.inputs or DEFAULT_INPUTS):
        key = key_of(path)
        capture.records.clear()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                cfg = load_config(path)
                counts[key] = count_main(cfg)
                for name in extra_classes(cfg):
                    if name != counts[key]["class"]:
                        counts[f"{key}#{name}"] = count_extra(cfg, name)
            except Exception as e:  # record and go on: one bad config should not hide the rest
                problems.append(f"{key}: ERROR {type(e).__name__}: {e}")
                continue
        for msg in capture.records + [str(w.message) for w in caught]:
            problems.append(f"{key}: warning: {msg.strip()}")
        if not args.quiet:
            for k in [key] + [k for k in counts if k.startswith(key + "#")]:
                v = counts[k]
                print(f"{v['params']:>15,}  {v['tensors']:>5}  {v['class']:<36} {k}")

    out = {"transformers": transformers.__version__, "torch": torch.__version__, "counts": counts}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out, indent=2) + "\n")
    print(f"wrote {len(counts)} counts to {key_of(args.out)}", file=sys.stderr)
    for p in problems:
        print(p, file=sys.stderr)
    return 1 if any(": ERROR " in p for p in problems) else 0


if __name__ == "__main__":
    sys.exit(main())
