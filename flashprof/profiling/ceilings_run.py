"""`flashprof ceilings` (`make ceilings`): build the ceilings binary, run it on this GPU while
sampling nvidia-smi's SM clock, and write reports/<gpu>/ceilings.{json,csv,meta.json,raw.jsonl}.

Input: a CUDA GPU, nvidia-smi and the CUDA toolchain (or ``--from-output``: a saved
ceilings.raw.jsonl, re-derived without a GPU). Output: the files above; the table on stdout.
Exit 0 when every benchmark passed its self-check, 1 when one failed (its value is null and
the files are still written), 2 on any other error.
"""
from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path

from flashprof.kernels.common import write_atomic
from flashprof.kernels.config import gpu_slug
from flashprof.kernels.gpus import reports_folder

from flashprof.profiling import ceiling_rates as derive
from flashprof.profiling.env import ROOT, check_writable, git_info, now, smi_clocks, write_json_atomic
from flashprof.kernels.cli import ArgumentParser, FlashprofError, run_cli, doc_summary

RUN_TIMEOUT_S = 300  # the binary takes well under a minute on an H100/H200
FILES = ("ceilings.json", "ceilings.csv", "ceilings.meta.json", "ceilings.raw.jsonl")


class ClockSampler:
    """nvidia-smi's clocks.sm, sampled in the background while the binary runs."""

    def __init__(self, period_s: float = 0.25):
        self.period_s, self.mhz = period_s, []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def _loop(self):
        while not self._stop.is_set():
            try:
                self.mhz.append(float(smi_clocks().get("sm_mhz", "")))
            except ValueError:  # no nvidia-smi, or "[N/A]"
                pass
            self._stop.wait(self.period_s)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join(timeout=10)


def gpu_arch() -> str:
    """sm_XY of GPU 0, from nvidia-smi (no torch needed)."""
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=compute_cap", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError) as e:
        raise FlashprofError(f"no usable GPU: nvidia-smi could not run ({e}); pass --arch to build anyway") from None
    cap = out.stdout.strip().splitlines()[0].strip() if out.returncode == 0 and out.stdout.strip() else ""
    if not cap.replace(".", "").isdigit():
        raise FlashprofError(f"no usable GPU: nvidia-smi gave no compute capability ({out.stderr.strip()[:120]})")
    return "sm_" + cap.replace(".", "")


def run_binary(exe: Path) -> tuple[str, int, list[float], float]:
    """(stdout, exit status, SM MHz samples, seconds) of one run of the binary."""
    t0 = time.perf_counter()
    with ClockSampler() as clocks:
        try:
            proc = subprocess.run([str(exe)], capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            raise FlashprofError(f"{exe} ran longer than {RUN_TIMEOUT_S} s; is another job using the GPU?") from None
    if proc.returncode not in (0, 1):
        last = (proc.stderr.strip().splitlines() or [f"exit {proc.returncode}"])[-1]
        raise FlashprofError(f"the ceilings binary failed (exit {proc.returncode}): {last}")
    for line in proc.stderr.strip().splitlines():
        print(line, file=sys.stderr)
    return proc.stdout, proc.returncode, clocks.mhz, time.perf_counter() - t0


def run_wgmma(exe: Path) -> str:
    """The wgmma measurement record (a run of its own: a fault there must not cost the
    other results); on failure, a record with no numbers whose check says why."""
    try:
        proc = subprocess.run([str(exe), "wgmma"], capture_output=True, text=True, timeout=120)
        rc, err = proc.returncode, proc.stderr.strip().splitlines()
    except subprocess.TimeoutExpired:
        proc, rc, err = None, None, ["timed out after 120 s"]
    if proc is not None and rc in (0, 1):
        for line in err:
            print(line, file=sys.stderr)
        return "".join(ln + "\n" for ln in proc.stdout.splitlines() if '"record": "measurement"' in ln)
    why = err[-1] if err else f"exit {rc}"
    print(f"ceilings: warning: the wgmma run failed ({why}); the other results stand", file=sys.stderr)
    return json.dumps({"record": "measurement", "name": "wgmma_f16_f32", "kind": "throughput",
                       "unit": "FLOP/clk/SM", "basis": "cycles", "warps_per_scheduler": 2, "work": 0,
                       "n": 0, "cycles": [], "cycles_max": [], "cycles_2n": [], "ms": [],
                       "check": f"the wgmma run failed: {why}"}) + "\n"


def write_reports(out_dir: Path, doc: dict, raw: str, meta: dict) -> list[Path]:
    check_writable(out_dir)
    paths = [out_dir / f for f in FILES]
    write_json_atomic(paths[0], doc)
    for path, text in ((paths[1], derive.csv_text(doc)), (paths[3], raw)):
        write_atomic(path, text)
    write_json_atomic(paths[2], meta)
    return paths


def _nvcc_facts() -> dict:
    from flashprof.kernels import ceilings as bench
    from flashprof.kernels.toolchain import ToolchainError, find_toolchain

    try:
        tc = find_toolchain("nvcc")
        return {"nvcc": tc.nvcc_version, "nvcc_path": str(tc.path("nvcc")), "flags": list(bench.NVCC_FLAGS)}
    except ToolchainError as e:
        return {"nvcc": None, "why": str(e)}


def cli(argv: list[str] | None = None) -> int:
    p = ArgumentParser(prog="flashprof ceilings", description=doc_summary(__doc__))
    p.add_argument("--out", type=Path, default=None, help="output folder (default reports/<gpu>)")
    p.add_argument("--arch", default=None, help="build for this arch (default: GPU 0's, via nvidia-smi)")
    p.add_argument("--from-output", type=Path, default=None, metavar="RAW",
                   help="re-derive from a saved ceilings.raw.jsonl instead of running")
    p.add_argument("--build-only", action="store_true", help="compile the binary, print its path, stop")
    args = p.parse_args(argv)

    def body() -> int:
        from flashprof.kernels import ceilings as bench
        from flashprof.kernels.sass.static import BuildError
        from flashprof.kernels.toolchain import ToolchainError

        t0 = time.perf_counter()
        if args.from_output:
            try:
                raw = args.from_output.read_bytes().decode("utf-8")
            except OSError as e:
                raise FlashprofError(f"cannot read {args.from_output}: {e.strerror}") from None
            except UnicodeDecodeError:
                raise FlashprofError(f"{args.from_output}: not the text output of the ceilings binary "
                                     "(not UTF-8 text)") from None
            status, mhz, seconds, smi0, smi1, build = None, [], None, {}, {}, {}
        else:
            arch = args.arch or gpu_arch()
            try:
                exe = bench.build(arch)
            except (ToolchainError, BuildError) as e:
                raise FlashprofError(str(e)) from None
            if args.build_only:
                print(exe)
                return 0
            smi0 = smi_clocks()
            raw, status, mhz, seconds = run_binary(exe)
            if bench.target(arch).endswith("a"):  # built with wgmma
                raw += run_wgmma(exe)
            smi1, build = smi_clocks(), {"arch": arch, **_nvcc_facts()}
        device, records = derive.parse_output(raw)
        doc = derive.derive(device, records, mhz)
        slug = gpu_slug(device["name"])
        meta = {
            "schema": derive.SCHEMA, "what": "ceilings",
            "gpu": {"name": device["name"], "slug": slug, "arch": device["arch"],
                    "sm_count": device["sm_count"], "l2_bytes": device.get("l2_bytes"),
                    "driver": (smi0 or smi1).get("driver")},
            "clocks": {"sm_clock_hz_cycles_over_events": doc["sm_clock_hz"],
                       "nvidia_smi_sm_mhz_during_run": mhz,
                       "nvidia_smi_before": smi0, "nvidia_smi_after": smi1, "clock_control": "none"},
            "build": build, "git": git_info(), "repeats": device.get("repeats"),
            "command": " ".join(sys.argv), "created": now(),
            "seconds": round(seconds, 1) if seconds else None,
            "rederived_from": str(args.from_output) if args.from_output else None,
            "elapsed_s": round(time.perf_counter() - t0, 1),
        }
        out_dir = args.out or ROOT / reports_folder(slug)
        paths = write_reports(out_dir, doc, raw, meta)
        print(derive.table(doc))
        for warn in [derive.clock_warning(doc), *derive.over_peak(doc)]:
            if warn:
                print(f"ceilings: warning: {warn}", file=sys.stderr)
        print("wrote " + ", ".join(str(x) for x in paths))
        failed = [m["name"] for m in doc["measurements"] if m["value"] is None]
        if failed or status == 1:
            print(f"ceilings: error: self-check failed for {', '.join(failed) or 'a benchmark'} "
                  "(values null in the report)", file=sys.stderr)
            return 1
        return 0

    return run_cli("ceilings", body)


main = cli

if __name__ == "__main__":
    sys.exit(cli())
