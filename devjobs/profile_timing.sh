#!/usr/bin/env bash
# One H200 call: is `make profile KERNEL=6` within 1.3x of the bare ncu command it wraps?
# Run from the repo root with the ncu-report wheel carried in .whl/:
#   bash devjobs/profile_timing.sh
# Makes the venv, warms up (one `make profile KERNEL=6`: build, parse cache, index), then
# alternates, 3 times each: the bare ncu command (exactly the argv the sidecar says the
# profile ran, report and verdict to absolute paths in /tmp) and `make profile KERNEL=6`.
# Writes $OUT/profile_timing.json (medians, every run, each make run's stage breakdown from
# build/profile_timing.json, GPU/driver/ncu versions) and the logs under $OUT/logs/.
# Under 5 minutes (each run ~15-25 s); NO_GATE_RUNS=0 leaves out the bare runs without the gate.
set -u
: "${OUT:?}"
mkdir -p "$OUT/logs"
exec > >(tee -a "$OUT/logs/profile_timing.log") 2>&1
T0=$(date +%s)
stamp() { echo "=== [$(( $(date +%s) - T0 )) s] $*"; }
REPS=${REPS:-3}
TMPD=/tmp/flashprof_timing
rm -rf "$TMPD" && mkdir -p "$TMPD"

stamp "setup"
make setup GPU=1 WHEELS=.whl > "$OUT/logs/setup.log" 2>&1 || { tail -20 "$OUT/logs/setup.log"; exit 1; }
PY=$PWD/.venv/bin/python
NCU=$(command -v ncu) || { echo "no ncu on PATH"; exit 1; }

now() { "$PY" -c 'import time; print(f"{time.time():.3f}")'; }
secs() { "$PY" -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.3f}')" "$1" "$2"; }

stamp "warm-up: make profile KERNEL=6"
make --no-print-directory profile KERNEL=6 > "$OUT/logs/warmup.log" 2>&1 || { tail -30 "$OUT/logs/warmup.log"; exit 1; }
tail -n 3 "$OUT/logs/warmup.log"

# The bare command: the sidecar's ncu args (the command as run), with --export and --verdict
# moved to absolute paths of their own (ncu cannot write a relative --export path here).
"$PY" - "$TMPD" > "$TMPD/args.txt" <<'PYEOF'
import json, sys
tmp = sys.argv[1]
args = json.load(open("reports/h200/kernel6.json"))["ncu"]["args"]
out = []
it = iter(args)
for a in it:
    out.append(a)
    if a == "--export":
        out.append(f"{tmp}/bare6"); next(it)
    elif a == "--verdict":
        out.append(f"{tmp}/bare6.verdict.json"); next(it)
print("\n".join(out))
PYEOF
mapfile -t ARGS < "$TMPD/args.txt"
echo "bare: $NCU ${ARGS[*]}"
# The same without the gate (--verdict FILE dropped): what ncu alone costs, for the record.
NOGATE=(); skip=0
for a in "${ARGS[@]}"; do
    if [ $skip -eq 1 ]; then skip=0; continue; fi
    if [ "$a" = "--verdict" ]; then skip=1; continue; fi
    NOGATE+=("$a")
done

bare=(); make=(); nogate=()
for i in $(seq 1 "$REPS"); do
    stamp "run $i: bare ncu"
    rm -f "$TMPD/bare6.ncu-rep" "$TMPD/bare6.verdict.json"
    t1=$(now); "$NCU" "${ARGS[@]}" > "$OUT/logs/bare_$i.log" 2>&1; rc=$?; t2=$(now)
    [ $rc -eq 0 ] && [ -f "$TMPD/bare6.ncu-rep" ] || { echo "bare ncu failed (rc $rc)"; tail -5 "$OUT/logs/bare_$i.log"; exit 1; }
    bare+=("$(secs "$t1" "$t2")"); echo "bare_ncu_s ${bare[-1]}"
    if [ "${NO_GATE_RUNS:-1}" = 1 ]; then
        rm -f "$TMPD/bare6.ncu-rep"
        t1=$(now); "$NCU" "${NOGATE[@]}" > "$OUT/logs/bare_nogate_$i.log" 2>&1; t2=$(now)
        nogate+=("$(secs "$t1" "$t2")"); echo "bare_ncu_no_gate_s ${nogate[-1]}"
    fi
    stamp "run $i: make profile KERNEL=6"
    t1=$(now); make --no-print-directory profile KERNEL=6 > "$OUT/logs/make_$i.log" 2>&1; rc=$?; t2=$(now)
    [ $rc -eq 0 ] || { echo "make profile failed (rc $rc)"; tail -20 "$OUT/logs/make_$i.log"; exit 1; }
    make+=("$(secs "$t1" "$t2")"); echo "make_profile_s ${make[-1]}"
    cp build/profile_timing.json "$TMPD/stages_$i.json"
    grep "^profile: stages" "$OUT/logs/make_$i.log"
done

stamp "write profile_timing.json"
"$PY" - "$OUT/profile_timing.json" "$TMPD" "$NCU" "${bare[*]}" "${make[*]}" "${ARGS[*]}" "${nogate[*]:-}" <<'PYEOF'
import json, platform, statistics, subprocess, sys
dest, tmp, ncu, bare, make, args, nogate = sys.argv[1:8]
nogate = [float(x) for x in nogate.split()]
bare = [float(x) for x in bare.split()]
make = [float(x) for x in make.split()]
stages = [json.load(open(f"{tmp}/stages_{i}.json"))["stages_s"] for i in range(1, len(make) + 1)]
def sh(cmd):
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=60).stdout.strip()
    except Exception as e:
        return f"unavailable: {e}"
smi = sh(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"]).split(", ")
med_b, med_m = statistics.median(bare), statistics.median(make)
data = {
    "what": "warm `make profile KERNEL=6` against the bare ncu command it wraps (same run, alternated)",
    "bare_ncu_s": round(med_b, 2),
    "make_profile_s": round(med_m, 2),
    "ratio": round(med_m / med_b, 3),
    "target_ratio": 1.3,
    "bare_ncu_no_gate_s": round(statistics.median(nogate), 2) if nogate else None,
    "ratio_vs_no_gate": round(med_m / statistics.median(nogate), 3) if nogate else None,
    "bare_note": "bare_ncu_s runs the profile's exact ncu argv, which includes the correctness gate "
                 "(ncu_program --verdict, outside the NVTX range); bare_ncu_no_gate_s drops --verdict",
    "statistic": f"median of {len(make)} alternated runs each, after one warm-up make profile",
    "stages_s": {k: round(statistics.median(s[k] for s in stages), 3) for k in stages[0]},
    "stages_note": "medians per stage; gate runs inside the profiled program, so ncu includes it; "
                   "total is the profile process from start to end (make adds its own start-up)",
    "runs": {"bare_ncu_s": bare, "bare_ncu_no_gate_s": nogate, "make_profile_s": make, "stages_s": stages},
    "bare_command": [ncu, *args.split()],
    "gpu": smi[0] if smi else None,
    "driver": smi[1] if len(smi) > 1 else None,
    "ncu_version": sh([ncu, "--version"]).splitlines()[-1],
    "python": platform.python_version(),
    "git": sh(["git", "rev-parse", "HEAD"]),
}
json.dump(data, open(dest, "w"), indent=2)
open(dest, "a").write("\n")
print(json.dumps({k: data[k] for k in ("bare_ncu_s", "make_profile_s", "ratio", "stages_s")}))
PYEOF
stamp "done"
