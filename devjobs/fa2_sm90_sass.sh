#!/usr/bin/env bash
# Extract the sm_90 FA2 forward kernel PyTorch runs on the H200 (fp16, d128, non-causal,
# Flash_fwd_kernel_traits<128,128,64,4>, flags 0,0,0,0,1,1,0,0) with raw encodings, so the
# issue model (analysis/gap) can predict % of FA2 on the H200 too.
# Produces $OUT/fa2_sm90.sass (a few hundred KB). Commit it as reports/sass/fa2/fa2_sm90.sass.
set -euo pipefail
PY=${PY:-/opt/torch/.venv/bin/python3}
LIB=$($PY -c 'import torch, os; print(os.path.join(os.path.dirname(torch.__file__), "lib", "libtorch_cuda.so"))')
CUOBJDUMP=${CUOBJDUMP:-/usr/local/cuda/bin/cuobjdump}
WORK=$(mktemp -d); cd "$WORK"
# all sm_90 cubins in one pass (one -xelf per cubin re-reads the 450 MB library each time)
"$CUOBJDUMP" -arch sm_90 -xelf all "$LIB" >/dev/null 2>&1 || true
NAME='_ZN13pytorch_flash16flash_fwd_kernelI23Flash_fwd_kernel_traitsILi128ELi128ELi64ELi4ELb0ELb0EN7cutlass6half_tE19Flash_kernel_traitsILi128ELi128ELi64ELi4ES3_EELb0ELb0ELb0ELb0ELb1ELb1ELb0ELb0EEEvNS_16Flash_fwd_paramsE'
for f in $(grep -l -a "$NAME" ./*.cubin 2>/dev/null); do
  if "$CUOBJDUMP" -sass -fun "$NAME" "$f" > fa2.sass 2>/dev/null && grep -q HMMA fa2.sass; then
    { echo "# FlashAttention-2 forward, fp16 d128 non-causal, sm_90, from $("$PY" -c 'import torch; print(torch.__version__)') libtorch_cuda.so cubin $(basename "$f")"
      echo "# ptxas resources (cuobjdump -res-usage): $("$CUOBJDUMP" -res-usage "$f" 2>&1 | grep -A1 "$NAME" | tail -1 | xargs)"
      sed -e 's/[[:space:]]\+/ /g; s/^ //; s/ $//' fa2.sass | grep -v '^$'; } > "$OUT/fa2_sm90.sass"
    echo "found in $f"; exit 0
  fi
done
echo "sm_90 FA2 kernel not found" >&2; exit 1
