#!/usr/bin/env bash
# SASS, with raw encodings, of the FlashAttention-2 forward kernel the series measured as its
# reference: fp16, head dim 128, non-causal, from the author's fork of Dao-AILab/flash-attention
# (github sonnyli/flash-attention), with the CUTLASS its submodule pins. CPU only.
#
#   devjobs/series_fa2_sass.sh FA_GIT_DIR FA_COMMIT CUTLASS_GIT_DIR [OUTDIR]
#
# Both repositories are given as git directories (a bare mirror or a .git folder); the trees
# are extracted with git archive, FA_COMMIT's csrc/flash_attn for flash-attention and, for
# CUTLASS, include/ at the commit FA_COMMIT's csrc/cutlass submodule entry names. OUTDIR
# (default $OUT, else ./series_fa2_out) receives, in the format of reports/sass/fa2/*.sass:
#   fa2_official_sm80.sass       Flash_fwd_kernel_traits<128,128,64,4>, sm_80: what ran on the A100
#   fa2_official_sm80_bn32.sass  <128,128,32,4>, sm_80: what ran on the RTX 3090 (the fork's
#                                tools/install_v2.sh builds FLASH_ATTN_CUDA_ARCHS="80" only, and
#                                run_mha_fwd_hdim128 picks 128x32 on any sm_8x device but sm_80)
#   fa2_official_sm86.sass       <128,128,32,4>, sm_86: the same tile built for GA102 (not measured)
#   fa2_provenance.json
# Toolchain and its reasons: as devjobs/series_sass.sh (nvcc 13.0 front end, PTX ISA lowered
# to 8.7, ptxas 12.8.93, cuobjdump 13.2.51). Flags: the fork's setup.py for the flash_attn_2
# extension (the -gencode replaced by one -arch per build).
set -euo pipefail

FA=${1:?usage: devjobs/series_fa2_sass.sh FA_GIT_DIR FA_COMMIT CUTLASS_GIT_DIR [OUTDIR]}
FA_COMMIT=${2:?usage}
CUTLASS=${3:?usage}
OUTDIR=${4:-${OUT:-./series_fa2_out}}
HERE=$(cd "$(dirname "$0")" && pwd)
VENV=${CUDA128_VENV:-/work/venv128}
SP=$(ls -d "$VENV"/lib/python3*/site-packages 2>/dev/null | head -1)
NVCC=${NVCC:-$SP/nvidia/cu13/bin/nvcc}
PTXAS=${PTXAS:-$SP/nvidia/cuda_nvcc/bin/ptxas}
CUOBJDUMP=${CUOBJDUMP:-$SP/nvidia/cu13/bin/cuobjdump}
PTX_ISA=${PTX_ISA:-8.7}
for t in "$NVCC" "$PTXAS" "$CUOBJDUMP"; do
  [[ -x $t ]] || { echo "missing tool $t (set NVCC/PTXAS/CUOBJDUMP or CUDA128_VENV)" >&2; exit 2; }
done

WORK=$(mktemp -d); trap 'rm -rf "$WORK"' EXIT
FA_FULL=$(git --git-dir="$FA" rev-parse --verify "$FA_COMMIT^{commit}")
CUT_FULL=$(git --git-dir="$FA" ls-tree "$FA_FULL" csrc/cutlass | awk '$2 == "commit" {print $3}')
[[ -n $CUT_FULL ]] || { echo "$FA_FULL has no csrc/cutlass submodule entry" >&2; exit 2; }
git --git-dir="$CUTLASS" cat-file -e "$CUT_FULL^{commit}" ||
  { echo "CUTLASS commit $CUT_FULL (pinned by flash-attention) is not in $CUTLASS" >&2; exit 2; }
mkdir -p "$WORK/fa" "$WORK/cutlass" "$OUTDIR"
git --git-dir="$FA" archive "$FA_FULL" csrc/flash_attn | tar -x -C "$WORK/fa"
# archive the include/ tree itself: a mirror may lack blobs elsewhere in CUTLASS (media/)
git --git-dir="$CUTLASS" archive --prefix=include/ "$CUT_FULL:include" | tar -x -C "$WORK/cutlass"
S=$WORK/fa/csrc/flash_attn

FLAGS=(-O3 -std=c++17 -U__CUDA_NO_HALF_OPERATORS__ -U__CUDA_NO_HALF_CONVERSIONS__
       -U__CUDA_NO_HALF2_OPERATORS__ -U__CUDA_NO_BFLOAT16_CONVERSIONS__
       --expt-relaxed-constexpr --expt-extended-lambda --use_fast_math -lineinfo
       -DFLASHATTENTION_DISABLE_BACKWARD -DFLASHATTENTION_DISABLE_DROPOUT
       -DFLASHATTENTION_DISABLE_ALIBI -DFLASHATTENTION_DISABLE_SOFTCAP
       -DFLASHATTENTION_DISABLE_UNEVEN_K -DFLASHATTENTION_DISABLE_LOCAL)
PTXAS_FLAGS=(-O3 --generate-line-info -v)
V_NVCC=$("$NVCC" --version | tail -1); V_PTXAS=$("$PTXAS" --version | tail -1)
V_OBJ=$("$CUOBJDUMP" --version | tail -1)
REC=$WORK/records.tsv; : > "$REC"

build() {  # build FILE ARCH BLOCK_N MEASURED_ON
  local file=$1 arch=$2 bn=$3 measured=$4 cc=${2#sm_} base=$WORK/$1
  "$NVCC" "${FLAGS[@]}" -DFA2_BLOCK_N="$bn" -arch=compute_$cc -ptx \
    -I"$HERE/series/fa2/torch_stub" -I"$S" -I"$S/src" -I"$WORK/cutlass/include" \
    "$HERE/series/fa2/instantiate_fa2.cu" -o "$base.ptx" 2> "$base.nvcc.log" ||
    { cat "$base.nvcc.log" >&2; exit 1; }
  local isa; isa=$(sed -n 's/^\.version //p' "$base.ptx")
  sed -i "s/^\.version .*/.version $PTX_ISA/" "$base.ptx"
  "$PTXAS" -arch="$arch" "${PTXAS_FLAGS[@]}" "$base.ptx" -o "$base.cubin" > "$base.ptxas" 2>&1 ||
    { cat "$base.ptxas" >&2; exit 1; }
  local name res
  name=$(sed -n 's/^\.visible \.entry \([A-Za-z0-9_]*\)(.*/\1/p' "$base.ptx" | head -1)
  res=$("$CUOBJDUMP" -res-usage "$base.cubin" 2>&1 | grep -A1 "Function $name" | tail -1 | xargs)
  { echo "# FlashAttention-2 forward as the series measured it: fp16, d128, non-causal, Flash_fwd_kernel_traits<128,128,$bn,4,false,false,half_t>, flags 0,0,0,0,1,1,0,0, $arch; measured on: $measured"
    echo "# Source: sonnyli/flash-attention@$FA_FULL (fork of Dao-AILab/flash-attention: LSE write and split-KV removed), CUTLASS NVIDIA/cutlass@$CUT_FULL (its csrc/cutlass submodule)"
    echo "# built by devjobs/series_fa2_sass.sh (instantiation devjobs/series/fa2/instantiate_fa2.cu): $V_NVCC front end -> PTX (ISA $isa lowered to $PTX_ISA) -> ptxas $V_PTXAS; cuobjdump $V_OBJ; whitespace squeezed"
    echo "# nvcc flags: ${FLAGS[*]} -DFA2_BLOCK_N=$bn -arch=compute_$cc -ptx; ptxas flags: -arch=$arch ${PTXAS_FLAGS[*]}"
    echo "# ptxas resources (cuobjdump -res-usage): $res"
    echo "# registers: $(sed -n 's/.*REG:\([0-9]*\).*/\1/p' <<< "$res")"
    echo "# smem_bytes: $(( (128 + 2 * bn) * 128 * 2 ))"
    echo "# warps: 4"
    echo "# B_r: 128"
    echo "# B_c: $bn"
    echo "# measured_on: $measured"
    "$CUOBJDUMP" -sass "$base.cubin" | sed -e 's/[[:space:]]\+/ /g; s/^ //; s/ $//' | grep -v '^$'
  } > "$OUTDIR/$file.sass"
  grep -q HMMA "$OUTDIR/$file.sass" || { echo "$file: no HMMA" >&2; exit 1; }
  cp "$base.ptxas" "$OUTDIR/$file.ptxas"
  printf '%s\n' "$file.sass" "$arch" "$bn" "$measured" "$name" "$isa" "$res" \
    "$(sha256sum "$OUTDIR/$file.sass" | cut -d' ' -f1)" \
    | paste -sd$'\t' >> "$REC"
  echo "built $file: $res"
}

build fa2_official_sm80      sm_80 64 A100
build fa2_official_sm80_bn32 sm_80 32 RTX3090
build fa2_official_sm86      sm_86 32 -

python3 - "$REC" "$OUTDIR/fa2_provenance.json" "$FA_FULL" "$CUT_FULL" "$V_NVCC" "$V_PTXAS" \
  "$V_OBJ" "$PTX_ISA" "${FLAGS[*]}" "${PTXAS_FLAGS[*]}" <<'PY'
import json, re, sys
rec, dst, fa, cut, v_nvcc, v_ptxas, v_obj, isa, flags, pflags = sys.argv[1:]
files = {}
for line in open(rec):
    f, arch, bn, measured, name, isa0, res, sha = line.rstrip("\n").split("\t")
    r = dict(re.findall(r"(\w+(?:\[\d\])?):(\d+)", res))
    log = open(f"{dst.rsplit('/', 1)[0]}/{f[:-5]}.ptxas").read()
    spill = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", log)
    files[f] = {"arch": arch, "kernel_traits": f"Flash_fwd_kernel_traits<128,128,{bn},4,false,false,cutlass::half_t>",
                "template_flags": "Is_dropout=0 Is_causal=0 Is_local=0 Has_alibi=0 Is_even_MN=1 Is_even_K=1 Is_softcap=0 Return_softmax=0",
                "B_r": 128, "B_c": int(bn), "warps": 4,
                "measured_on": [] if measured == "-" else [measured], "function": name,
                "registers": int(r.get("REG", -1)), "stack_bytes": int(r.get("STACK", -1)),
                "local_bytes": int(r.get("LOCAL", -1)), "resources": res,
                "spill_store_bytes": int(spill.group(2)), "spill_load_bytes": int(spill.group(3)),
                # Kernel_traits::kSmemSize for these traits: Q tile + K and V tiles, fp16
                "dynamic_smem_bytes": (128 + 2 * int(bn)) * 128 * 2,
                "ptx_isa_emitted": isa0, "sha256": sha}
json.dump({"repository": "sonnyli/flash-attention", "commit": fa,
           "upstream": "Dao-AILab/flash-attention",
           "cutlass": {"repository": "NVIDIA/cutlass", "commit": cut},
           "toolchain": {"front_end": v_nvcc, "ptxas": v_ptxas, "cuobjdump": v_obj,
                         "ptx_isa_given_to_ptxas": isa},
           "nvcc_flags": flags, "ptxas_flags": pflags,
           "sha256": "of the .sass file (the cubin's line table names a temporary folder)",
           "files": files},
          open(dst, "w"), indent=1, sort_keys=True)
PY
echo "wrote $OUTDIR"
