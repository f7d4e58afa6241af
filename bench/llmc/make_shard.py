"""Writes a random token shard in llm.c's format (256 int32 header: magic
20240520, version 1, token count; then uint16 tokens below GPT-2's 50257).
    python3 make_shard.py OUT.bin [TOKENS]"""
import sys

import numpy as np

path = sys.argv[1]
tokens = int(sys.argv[2]) if len(sys.argv) > 2 else 1 << 21
header = np.zeros(256, dtype=np.int32)
header[:3] = (20240520, 1, tokens)
body = np.random.default_rng(0).integers(0, 50257, size=tokens, dtype=np.uint16)
with open(path, "wb") as f:
    f.write(header.tobytes())
    f.write(body.tobytes())
