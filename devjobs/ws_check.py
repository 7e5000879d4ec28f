"""One warp-specialised kernel-7 config on the H200: the correctness gate on several shapes
in fp16 and bf16, then a quick timing at S=4096 against FA2 and cuDNN (same process).
Run each config in its own process under `timeout` (a deadlocked barrier hangs the GPU)."""
import json
import statistics
import sys
from pathlib import Path

import torch

from flashprof.kernels.config import KernelConfig
from flashprof.profiling.bench import l2_flush_buffer, time_fn
from flashprof.profiling.correctness import check
from flashprof.profiling.reference import sdpa
from flashprof.profiling.shared_lib import SharedLibKernel, build_shared_lib
from flashprof.profiling.workload import Shape, make_inputs, seed_shape

cfg = KernelConfig.from_dict(json.loads(sys.argv[1]))
lib = build_shared_lib(cfg, "sm_90", Path(sys.argv[2]))
fn = SharedLibKernel(lib, cfg)
rec = {"slug": cfg.slug, "gate": {}}
for dtype in ("fp16", "bf16"):
    for shape in (Shape(1, 512, 2), Shape(2, 1024, 3), Shape(3, 2048, 2), Shape(1, 4096, 4), Shape(2, 1024, 40)):
        if shape.seq % cfg.seq_multiple():
            continue
        v = check(fn, shape, dtype)
        rec["gate"][f"{dtype} {shape.batch}x{shape.seq}x{shape.heads}"] = [v.ok, round(v.max_err, 5), v.unwritten]
        print(cfg.slug, dtype, shape, v.ok, v.max_err, v.unwritten, flush=True)
flush = l2_flush_buffer()
rec["tflops"] = {}
for dtype in ("fp16", "bf16"):
    for s in (1024, 4096, 16384):
        shape = seed_shape(s)
        q, k, v = make_inputs(shape, dtype, seed=s)
        out = torch.empty_like(q)
        for name, f, kw in (("k", fn, {"out": out}), ("ref", sdpa("ref"), {}), ("cudnn", sdpa("cudnn"), {})):
            ms = statistics.median(time_fn(f, (q, k, v), kw, 10, 2, flush))
            rec["tflops"][f"{dtype} {s} {name}"] = round(shape.flops / (ms * 1e-3) / 1e12, 1)
        print(cfg.slug, dtype, s, {n: rec["tflops"][f"{dtype} {s} {n}"] for n in ("k", "ref", "cudnn")}, flush=True)
print("RECORD", json.dumps(rec), flush=True)
