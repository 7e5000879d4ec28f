#!/usr/bin/env bash
# One H200 call (repo root; .whl/ carries ncu-report + plotly): the GPU tests on this tree, then
# an int8 torch._int_mm GEMM under ncu --set full (IMMA test data for the tensor-pipe recipes).
set -uo pipefail
: "${OUT:?}"
T0=$(date +%s)
say() { echo "=== [$(( $(date +%s) - T0 )) s] $*"; }
[ "${IMMA_ONLY:-0}" = 1 ] || make setup GPU=1 WHEELS=.whl > "$OUT/setup.log" 2>&1 || { tail -20 "$OUT/setup.log"; exit 1; }
cat > /tmp/int_mm.py <<'PY'
import torch
g = torch.Generator(device="cuda").manual_seed(0)
a = torch.randint(-8, 8, (8192, 8192), dtype=torch.int8, device="cuda", generator=g)
b = torch.randint(-8, 8, (8192, 8192), dtype=torch.int8, device="cuda", generator=g).t().contiguous().t()
torch.cuda.synchronize()
ref = (a[:64].double() @ b.double()).long()
for _ in range(3):
    c = torch._int_mm(a, b)
torch.cuda.synchronize()
print("int_mm", c.dtype, tuple(c.shape), "rows 0-63 exact:", bool((c[:64].long() == ref.cpu().to(c.device)).all()))
PY
say "int_mm under ncu"
timeout 150 ncu --clock-control none --set full -k regex:'^Kernel2$|gemm|imma' -s 2 -c 1 -f \
    -o "$OUT/h200_imma_int8_full" python3 /tmp/int_mm.py > "$OUT/int_mm.log" 2>&1
say "int_mm exit $?"; tail -n 4 "$OUT/int_mm.log"
{ nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader; ncu --version | tail -1; nvcc --version | tail -1
  python3 -c 'import torch; print("torch", torch.__version__)'; } > "$OUT/versions.txt" 2>&1
[ "${IMMA_ONLY:-0}" = 1 ] && exit 0
say "GPU tests"
timeout $(( ${BUDGET_S:-540} - ($(date +%s) - T0) )) .venv/bin/python -m pytest -q -p no:cacheprovider -m gpu tests/ \
    > "$OUT/gpu_tests.log" 2>&1
say "GPU tests exit $?: $(tail -n 1 "$OUT/gpu_tests.log")"
