#!/usr/bin/env bash
# SASS, with raw encodings, of the kernels the series (sonnyli/flash_attention_from_scratch)
# measured: each listing in its kernel_sass/ rebuilt from its own source at the configuration
# in its mangled name (devjobs/series/configs.tsv), for sm_80 and sm_86. CPU only.
#
#   devjobs/series_sass.sh CHECKOUT COMMIT [OUTDIR]
#
# CHECKOUT is a work tree of the companion repository, or its bare git directory (then the
# tree at COMMIT is extracted with git archive into a temporary folder); a work tree whose
# HEAD is not COMMIT is refused. OUTDIR (default $OUT, else ./series_sass_out) receives
#   <listing>_sm_XX.sass   cuobjdump -sass, whitespace squeezed (the format of
#                          reports/sass/fa2/fa2_sm80.sass), '#' provenance lines on top
#   <listing>_sm_XX.ptxas  ptxas -v output
#   provenance.json        one record per file (config, tools, flags, resources, sha256)
# Nothing of the series' source is written to OUTDIR.
#
# Toolchain. The series built with CUDA 12.8 (nvcc through torch's BuildExtension, its
# setup.py flags below, sm_80 only). PyPI's CUDA 12.8 compiler wheel
# (nvidia-cuda-nvcc-cu12==12.8.93) holds ptxas and libnvvm but not the nvcc driver, cudafe++
# or cicc, and no cuobjdump/nvdisasm 12.x wheel exists. So:
#   front end (C++ -> PTX): nvcc 13.0 of the cuda-toolkit 13.0.2 wheels ($NVCC), with the
#     series' flags; the PTX's ".version 9.0" is lowered to 8.7 (ptxas 12.8's newest ISA;
#     the file uses nothing newer, or ptxas would reject it);
#   back end (PTX -> SASS, register allocation and scheduling): ptxas 12.8.93 ($PTXAS);
#   disassembly: cuobjdump 13.2.51 ($CUOBJDUMP), the version flashprof pins; the encodings
#     are the cubin's bytes, whatever prints them.
# Set PTXAS to the 13.0 ptxas to see what the back end alone changes (CHECK.md does).
set -euo pipefail

CHECKOUT=${1:?usage: devjobs/series_sass.sh CHECKOUT COMMIT [OUTDIR]}
COMMIT=${2:?usage: devjobs/series_sass.sh CHECKOUT COMMIT [OUTDIR]}
OUTDIR=${3:-${OUT:-./series_sass_out}}
HERE=$(cd "$(dirname "$0")" && pwd)
VENV=${CUDA128_VENV:-/work/venv128}
SP=$(ls -d "$VENV"/lib/python3*/site-packages 2>/dev/null | head -1)
NVCC=${NVCC:-$SP/nvidia/cu13/bin/nvcc}
PTXAS=${PTXAS:-$SP/nvidia/cuda_nvcc/bin/ptxas}
CUOBJDUMP=${CUOBJDUMP:-$SP/nvidia/cu13/bin/cuobjdump}
ARCHS=${ARCHS:-"sm_80 sm_86"}
# sm_86 is built for the listings the RTX 3090 ran and the unmeasured kernel-7/8 variants,
# not for the *_A100 ones (ALL_ARCHS=1 builds those too)
ONLY=${ONLY:-}          # optional regex on the listing name, e.g. ONLY='^(7_64_64_swizzling|9_A100)$'
PTX_ISA=${PTX_ISA:-8.7}
for t in "$NVCC" "$PTXAS" "$CUOBJDUMP"; do
  [[ -x $t ]] || { echo "missing tool $t (set NVCC/PTXAS/CUOBJDUMP or CUDA128_VENV)" >&2; exit 2; }
done

WORK=$(mktemp -d); trap 'rm -rf "$WORK"' EXIT
if [[ -d $CHECKOUT/objects && -f $CHECKOUT/HEAD ]]; then           # bare git directory
  FULL=$(git --git-dir="$CHECKOUT" rev-parse --verify "$COMMIT^{commit}")
  mkdir "$WORK/src"; git --git-dir="$CHECKOUT" archive "$FULL" | tar -x -C "$WORK/src"
  SRC=$WORK/src
elif git -C "$CHECKOUT" rev-parse HEAD >/dev/null 2>&1; then      # work tree
  FULL=$(git -C "$CHECKOUT" rev-parse HEAD)
  [[ $FULL == "$(git -C "$CHECKOUT" rev-parse --verify "$COMMIT^{commit}")" ]] ||
    { echo "$CHECKOUT is at $FULL, not $COMMIT" >&2; exit 2; }
  [[ -z $(git -C "$CHECKOUT" status --porcelain) ]] || { echo "$CHECKOUT has local changes" >&2; exit 2; }
  SRC=$CHECKOUT
else
  echo "$CHECKOUT is neither a git work tree nor a git directory: cannot pin $COMMIT" >&2; exit 2
fi
mkdir -p "$OUTDIR"

# The series' setup.py flags that shape code (the rest there are warnings, --keep, colour);
# -gencode is replaced by one -arch per build.
FLAGS=(-std=c++20 --use_fast_math --generate-line-info --expt-relaxed-constexpr -O3
       -U__CUDA_NO_HALF_OPERATORS__ -U__CUDA_NO_HALF_CONVERSIONS__
       -U__CUDA_NO_HALF2_OPERATORS__ -U__CUDA_NO_BFLOAT16_CONVERSIONS__)
PTXAS_FLAGS=(-O3 --generate-line-info -v)
V_NVCC=$("$NVCC" --version | tail -1); V_PTXAS=$("$PTXAS" --version | tail -1)
V_OBJ=$("$CUOBJDUMP" --version | tail -1)
REC=$WORK/records.tsv; : > "$REC"

while IFS=$'\t' read -r listing kernel measured srcdir cfg; do
  [[ $listing == \#* || -z $listing ]] && continue
  [[ -n $ONLY && ! $listing =~ $ONLY ]] && continue
  inc=$SRC/$srcdir/include
  [[ -f $inc/forward_kernel.cuh ]] || { echo "$inc/forward_kernel.cuh missing" >&2; exit 1; }
  echo "#define SERIES_CFG $cfg" > "$WORK/cfg.h"
  for arch in $ARCHS; do
    # GA100 is sm_80: an sm_86 build of a configuration only the A100 ran is of no use
    [[ $arch == sm_86 && $measured == A100 && -z ${ALL_ARCHS:-} ]] && continue
    cc=${arch#sm_}; base=$WORK/${listing}_$arch
    # the series ran sm_80 code on both GPUs: an sm_86 build was never measured
    mon=$measured; [[ $arch == sm_80 ]] || mon=-
    "$NVCC" "${FLAGS[@]}" -arch=compute_$cc -ptx -I"$HERE/series/torch_stub" -I"$inc" \
      -include "$WORK/cfg.h" "$HERE/series/instantiate.cu" -o "$base.ptx" 2> "$base.nvcc.log" ||
      { cat "$base.nvcc.log" >&2; exit 1; }   # success: only the series' unused-variable warnings
    isa=$(sed -n 's/^\.version //p' "$base.ptx")
    sed -i "s/^\.version .*/.version $PTX_ISA/" "$base.ptx"
    "$PTXAS" -arch="$arch" "${PTXAS_FLAGS[@]}" "$base.ptx" -o "$base.cubin" > "$base.ptxas" 2>&1 ||
      { cat "$base.ptxas" >&2; exit 1; }
    name=$(sed -n 's/^\.visible \.entry \([A-Za-z0-9_]*\)(.*/\1/p' "$base.ptx" | head -1)
    res=$("$CUOBJDUMP" -res-usage "$base.cubin" 2>&1 | grep -A1 "Function $name" | tail -1 | xargs)
    out=$OUTDIR/${listing}_$arch.sass
    { echo "# series kernel $kernel (listing kernel_sass/$listing.asm), $arch, fp16 d128: sonnyli/flash_attention_from_scratch@$FULL $srcdir"
      echo "# config (FlashForwardKernelConfig): $cfg; measured on: $measured"
      echo "# built by devjobs/series_sass.sh: $V_NVCC front end -> PTX (ISA $isa lowered to $PTX_ISA) -> ptxas $V_PTXAS; cuobjdump $V_OBJ"
      echo "# nvcc flags: ${FLAGS[*]} -arch=compute_$cc -ptx; ptxas flags: -arch=$arch ${PTXAS_FLAGS[*]}"
      echo "# ptxas resources (cuobjdump -res-usage): $res"
      IFS=', ' read -r _ d_head b_r b_c warps _ <<< "$cfg"
      echo "# registers: $(sed -n 's/.*REG:\([0-9]*\).*/\1/p' <<< "$res")"
      echo "# smem_bytes: $(( (b_r + 2 * b_c) * d_head * 2 ))"
      echo "# warps: $warps"
      echo "# B_r: $b_r"
      echo "# B_c: $b_c"
      echo "# measured_on: $mon"
      "$CUOBJDUMP" -sass "$base.cubin" | sed -e 's/[[:space:]]\+/ /g; s/^ //; s/ $//' | grep -v '^$'
    } > "$out"
    grep -q HMMA "$out" || { echo "$out: no HMMA" >&2; exit 1; }
    cp "$base.ptxas" "$OUTDIR/${listing}_$arch.ptxas"
    printf '%s\n' "$listing" "$kernel" "$mon" "$measured" "$srcdir" "$cfg" "$arch" "$name" "$isa" "$res" \
      "$(sha256sum "$out" | cut -d' ' -f1)" \
      | paste -sd$'\t' >> "$REC"
    echo "built $listing $arch: $res"
  done
done < "$HERE/series/configs.tsv"

python3 - "$REC" "$OUTDIR/provenance.json" "$FULL" "$V_NVCC" "$V_PTXAS" "$V_OBJ" "$PTX_ISA" \
  "${FLAGS[*]}" "${PTXAS_FLAGS[*]}" <<'PY'
import json, re, sys
rec, dst, commit, v_nvcc, v_ptxas, v_obj, isa, flags, pflags = sys.argv[1:]
files = {}
for line in open(rec):
    (listing, kernel, measured, cfg_measured, srcdir, cfg, arch, name, isa0, res, sha) = \
        line.rstrip("\n").split("\t")
    r = dict(re.findall(r"(\w+(?:\[\d\])?):(\d+)", res))
    log = open(f"{dst.rsplit('/', 1)[0]}/{listing}_{arch}.ptxas").read()
    spill = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", log)
    bars = re.search(r"used (\d+) barriers", log)
    d_head, b_r, b_c = (int(v) for v in cfg.split(", ")[1:4])
    files[f"{listing}_{arch}.sass"] = {
        "kernel": int(kernel), "listing": f"kernel_sass/{listing}.asm",
        "measured_on": [] if measured == "-" else measured.split(","),
        "config_measured_on": [] if cfg_measured == "-" else cfg_measured.split(","),
        "src_dir": srcdir, "config": cfg, "arch": arch, "function": name,
        "registers": int(r.get("REG", -1)), "stack_bytes": int(r.get("STACK", -1)),
        "local_bytes": int(r.get("LOCAL", -1)), "static_shared_bytes": int(r.get("SHARED", -1)),
        "spill_store_bytes": int(spill.group(2)), "spill_load_bytes": int(spill.group(3)),
        "barriers": int(bars.group(1)) if bars else 0,
        # the kernels take all shared memory dynamically: the series' smem_bytes(),
        # (B_r + 2 B_c) * d_head * 2 bytes, passed at launch
        "dynamic_smem_bytes": (b_r + 2 * b_c) * d_head * 2, "B_r": b_r, "B_c": b_c,
        "warps": int(cfg.split(", ")[4]),
        "resources": res, "ptx_isa_emitted": isa0, "sha256": sha}
json.dump({
    "repository": "sonnyli/flash_attention_from_scratch", "commit": commit,
    "toolchain": {"front_end": v_nvcc, "ptxas": v_ptxas, "cuobjdump": v_obj,
                  "ptx_isa_given_to_ptxas": isa},
    "nvcc_flags": flags, "ptxas_flags": pflags,
    "sha256": "of the .sass file; the cubin itself is not byte-stable across runs (its line "
              "table names the temporary source folder), its disassembly is",
    "note": "the series built sm_80 only (setup.py: -gencode arch=compute_80,code=sm_80); "
            "its RTX 3090 runs executed that sm_80 cubin. The sm_86 files are what the same "
            "source gives for GA102, not a measured binary.",
    "files": files}, open(dst, "w"), indent=1, sort_keys=True)
PY
echo "wrote $(ls "$OUTDIR"/*.sass | wc -l) SASS files and provenance.json to $OUTDIR"
