"""`make profile KERNEL=<1..7|ref|cudnn|all>` or `TARGET=path/to/file.py:fn`: build, gate,
collect one Nsight Compute report per target, and write its sidecar.

A user target (see user_target.py) gets every kernel its one call launches inside the NVTX
range, each its own record in the report (or those matching --kernel-regex), at most
--max-launches of them; its sidecar also records the spec, the source's sha256 and git state.

Output: reports/<gpu>/<stem>.ncu-rep + <stem>.json (variant config, shape, dtype, GPU,
driver, clocks, ncu version and command, git revision). An existing report is moved to
reports/<gpu>/history/ first, never overwritten. Then, in the same process, the summary of
the new reports (stdout) and the figures they change (``figures --changed``); --no-analysis
skips both.

Where the time goes: the correctness gate of kernels 1-7 and the references runs inside the
profiled program (flashprof.profiling.ncu_program --verdict), outside the NVTX range, so
this process never runs a kernel; the GPU facts for the sidecar (torch) and the analysis
imports are gathered in a background thread while ncu runs, and nothing is said or written
before that check has passed. The new report is parsed once, for the summary and the
figures alike. --timing-json writes the stages' seconds (gate, ncu, parse, summary,
figures, total).
"""
from __future__ import annotations

import json
import math
import os
import shlex
import shutil
import sys
import threading
import time
import warnings
from pathlib import Path

from flashprof.kernels.config import MMA_SYNC_KEY, variant

from flashprof.kernels.cli import ArgumentParser, FlashprofError, run_cli, doc_summary
from flashprof.kernels.gpus import reports_folder
from flashprof.profiling.launches import check_count, check_limit, check_regex, matching, ncu_kernels
from flashprof.profiling.ncu import (SECTION_SETS, NcuOptions, find_ncu, ncu_command, ncu_version, retire, run_ncu, stop)
from flashprof.profiling.user_target import MAX_LAUNCHES, is_spec, source_info
from flashprof.profiling.sidecar import sidecar_path

from flashprof.paths import ROOT  # noqa: E402


def report_stem(base: str, seq: int, batch: int, heads: int, dtype: str, section_set: str) -> str:
    """Shipped default shape keeps the plain name (kernel6); anything else is spelled out."""
    if (seq, batch, heads, dtype, section_set) == (4096, 16, 16, "fp16", "full"):
        return base
    return f"{base}_s{seq}_b{batch}_h{heads}_{dtype}_{section_set}"


def check_seq(names: list[str], seq: int, gpu: str | None = None) -> None:
    """SEQ must be a multiple of the tile of every variant asked for (references have none).

    Without ``gpu`` this uses kernel 7's fallback config, so it can run before any GPU is
    touched; profile_all repeats it with the GPU's tuned kernel 7.
    """
    tiles = {n: variant(n, gpu=gpu).seq_multiple() for n in names if n.isdigit() or n == MMA_SYNC_KEY}
    if not tiles or all(seq % t == 0 for t in tiles.values()):
        return
    if len(tiles) == 1:
        ((n, t),) = tiles.items()
        raise FlashprofError(f"SEQ={seq} is not a multiple of kernel {n}'s tile ({t})")
    need = math.lcm(*tiles.values())
    raise FlashprofError(f"SEQ={seq} is not a multiple of {need}, the largest tile of kernels "
                         f"{', '.join(tiles)}")


def dispatch_record(name: str, gpu: str, seq: int, dtype: str) -> dict | None:
    """Kernel 7's per-shape table and why this shape got its config (None for other targets)."""
    if name != "7":
        return None
    from flashprof.kernels.config import dispatch, variant_origin

    return {"table": dispatch(7, gpu).to_dict(), "choice": variant(7, gpu, seq, dtype).slug,
            "why": variant_origin(7, gpu, seq, dtype)}


def parse_args(argv):
    p = ArgumentParser(prog="flashprof profile", description=doc_summary(__doc__))
    p.add_argument("kernel", help="1-7, ref, cudnn, all, path/to/file.py:fn, module:fn, or a comma list")
    p.add_argument("--seq", type=int, default=4096, help="sequence length S (default: %(default)s)")
    p.add_argument("--batch", type=int, default=None, help="default: the series' batch for SEQ (16 up to 4096, 8 at 8192, 4 at 16384)")
    p.add_argument("--heads", type=int, default=16, help="attention heads (default: %(default)s)")
    p.add_argument("--dtype", default="fp16", help="fp16 or bf16 (default: %(default)s)")
    p.add_argument("--set", dest="section_set", default="full", choices=SECTION_SETS, help="Nsight Compute section set (default: %(default)s)")
    p.add_argument("--clock-control", default="none", choices=("none", "base"), help="ncu --clock-control; none leaves the GPU's clocks as they are (default: %(default)s)")
    p.add_argument("--out-dir", type=Path, default=None, help="default: reports/<gpu>")
    p.add_argument("--paths-file", type=Path, default=None, help="write the report paths here")
    p.add_argument("--kernel-regex", default=None,
                   help="profile only launches whose kernel name matches (default: the target's own)")
    p.add_argument("--max-launches", type=int, default=MAX_LAUNCHES,
                   help=f"user targets: refuse a call that launches more kernels (default {MAX_LAUNCHES})")
    p.add_argument("--no-gate", action="store_true", help="skip the correctness check (not recommended)")
    p.add_argument("--no-analysis", action="store_true",
                   help="only the reports: no summary, no figures (flashprof summary / figures draw them later)")
    p.add_argument("--timing-json", type=Path, default=None,
                   help="write the seconds of each stage (gate, ncu, parse, summary, figures, total) here")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    t_start = time.perf_counter()
    args = parse_args(argv)

    def body() -> int:
        from flashprof.profiling.env import check_writable, require_gpu
        from flashprof.profiling.targets import parse_names, resolve
        from flashprof.profiling.workload import Shape, check_dtype, seed_shape

        # Cheapest and most specific first: KERNEL, dtype, shape, tile, output paths; only
        # then the machine (GPU, then ncu), so a typo is never reported as "no GPU".
        names = parse_names(args.kernel)
        for n in names:
            if is_spec(n):
                resolve(n)  # imports the user's file: a missing file or function is not "no GPU"
        check_regex(args.kernel_regex)
        check_limit(args.max_launches)
        check_dtype(args.dtype)
        batch = args.batch if args.batch is not None else seed_shape(args.seq).batch
        shape = Shape(batch, args.seq, args.heads)
        check_seq(names, shape.seq)
        for d in filter(None, (args.out_dir, args.paths_file and args.paths_file.parent,
                               args.timing_json and args.timing_json.parent)):
            check_writable(d)
        # A user target is gated and counted here (torch in this process anyway): the GPU
        # first. Otherwise the GPU is checked while ncu runs, unless there is no ncu to run.
        if any(is_spec(n) for n in names):
            require_gpu()
        try:
            ncu = find_ncu()
        except FlashprofError:
            require_gpu()  # "no GPU" comes before "no ncu"
            raise
        return profile_all(names, shape, args, ncu, t_start=t_start)

    return run_cli("profile", body)


# ------------------------------------------------------------- work beside ncu
# Every module the background thread imports, imported by the main thread before the thread
# starts: two threads importing at once deadlocked on the H200 (the thread in matplotlib ->
# packaging, the main thread in torch's extension build -> setuptools -> packaging, under the
# venv's import hook; `make profile KERNEL=7` then `KERNEL=6` hung in a futex, 3 of 3 tries).
# The thread then only computes; what it would import is already in sys.modules.
UP_FRONT = ("torch", "torch.utils.cpp_extension")
UP_FRONT_ANALYSIS = ("flashprof.analysis.charts.driver", "flashprof.analysis.stages.summary",
                     "flashprof.analysis.charts.inputs", "flashprof.analysis.report.parse")


def import_up_front(analysis: bool) -> list[str]:
    """Import :data:`UP_FRONT` (and the analysis modules when ``analysis``) on this thread; a
    module that fails to import is left to the code that needs it (it raises its own error
    there: "no torch" from the GPU check). Returns the names imported."""
    import importlib
    done = []
    for group in (UP_FRONT, UP_FRONT_ANALYSIS if analysis else ()):
        for name in group:
            try:
                importlib.import_module(name)
                done.append(name)
            except Exception:  # noqa: BLE001 - met again, and reported, where it is used
                break  # the rest of the group needs this one
    return done


class Machine:
    """What the sidecars need of this machine (GPU, software, clocks, ncu version), the
    GPU check and the tile check against this GPU's tuned kernel 7, in a background
    thread while the first ncu runs; then the analysis imports. ``result()`` waits and
    raises the check's error: it is the first thing looked at once ncu is done, so "no
    GPU" is never reported as an ncu failure. A failed check stops the running ncu."""

    def __init__(self, names: list[str], seq: int, ncu: str, preload: bool, out_dir: Path | None = None):
        self.names, self.seq, self.ncu, self.preload, self.out_dir = names, seq, ncu, preload, out_dir
        self._done = threading.Event()
        self._lock = threading.Lock()
        self._procs: list = []
        self._value: dict | None = None
        self._error: BaseException | None = None
        self.preload_error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="flashprof-machine", daemon=True)
        self.stream = _Held(sys.stderr, self._done)

    def start(self, background: bool) -> "Machine":
        if background:
            import_up_front(self.preload)
            self._thread.start()
        else:  # the analysis imports then happen when the analysis starts
            self._check()
        return self

    def _run(self) -> None:
        self._check()
        if self.preload and self._error is None:
            self._preload()

    def _check(self) -> None:
        from flashprof.profiling import env

        try:
            gpu = env.gpu_info()  # imports torch: "no torch" and "no GPU" are raised here
            check_seq(self.names, self.seq, gpu=gpu["slug"])  # this GPU's tuned kernel 7 may have a larger tile
            self._value = {"gpu": gpu, "software": env.software(), "clocks_before": env.smi_clocks(),
                           "ncu_version": ncu_version(self.ncu)}
        except BaseException as e:  # noqa: BLE001 - handed to the main thread by result()
            with self._lock:
                self._error = e
                procs = list(self._procs)
            for proc in procs:
                if proc.poll() is None:
                    stop(proc)
        finally:
            self._done.set()
            if self._error is None:
                self.stream.release()

    def _preload(self) -> None:
        try:
            import flashprof.analysis.charts.driver  # noqa: F401  (pandas, matplotlib, the specs)
            import flashprof.analysis.stages.summary  # noqa: F401
        except BaseException as e:  # noqa: BLE001 - reported by the analysis stage
            self.preload_error = e
            return
        self._prefetch()

    def _prefetch(self) -> None:
        """While ncu runs: start one report reader per target (their imports are most of a
        fresh parse) and load the folder's other reports, so that the analysis after ncu
        parses only what ncu wrote. Best effort: anything wrong here is met again, and
        reported, by the analysis itself."""
        from flashprof.analysis.charts.inputs import make_inputs
        from flashprof.analysis.report import parse

        try:
            parse.prestart_workers(len(self.names))
            folder = Path(self.out_dir) if self.out_dir else ROOT / reports_folder(self._value["gpu"]["slug"])
            if folder.is_dir():
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    parse.load_frame(make_inputs(folder).paths)
        except Exception:  # noqa: BLE001
            pass

    def watch(self, proc) -> None:
        """run_ncu's on_start: a failed check stops this ncu too."""
        with self._lock:
            failed = self._error is not None
            if not failed:
                self._procs.append(proc)
        if failed:
            stop(proc)

    @property
    def done(self) -> bool:
        return self._done.is_set()

    def result(self) -> dict:
        if not self._done.wait(check_timeout()):
            raise FlashprofError(
                f"the machine check (torch import, GPU query, nvidia-smi, ncu --version) did not finish in "
                f"{check_timeout():.0f} s; nothing was written (FLASHPROF_CHECK_TIMEOUT=seconds to wait longer)")
        if self._error is not None:
            raise self._error
        assert self._value is not None
        return self._value

    def join_preload(self, timeout: float | None = None) -> bool:
        """Wait for the background imports and parse-ahead; False if still running after ``timeout``."""
        if self._thread.is_alive():
            self._thread.join(timeout)
        return not self._thread.is_alive()


def check_timeout() -> float:
    """Seconds ``Machine.result`` waits for the background check (FLASHPROF_CHECK_TIMEOUT, default 300)."""
    try:
        return max(1.0, float(os.environ.get("FLASHPROF_CHECK_TIMEOUT", "300")))
    except ValueError:
        return 300.0


class _Held:
    """stderr that holds what is written until ``release()``: nothing is said about a run
    that the GPU check may still refuse (a refusal stays one line)."""

    def __init__(self, stream, ready: threading.Event):
        self._stream, self._ready = stream, ready
        self._lock = threading.Lock()
        self._held: list[str] = []
        self._released = False

    def write(self, text: str) -> int:
        with self._lock:
            if not self._released:
                self._held.append(text)
                return len(text)
        return self._stream.write(text)

    def flush(self) -> None:
        with self._lock:
            if not self._released:
                return
        self._stream.flush()

    def release(self) -> None:
        with self._lock:
            self._released = True
            held, self._held = self._held, []
        if held:
            self._stream.write("".join(held))
            self._stream.flush()


def _built(cfg, slug: str | None = None) -> bool:
    """The extension of ``cfg`` exists and is newer than every kernel source: the profiled
    program only loads it (a cold build happens here, with its progress, not under ncu)."""
    from flashprof.kernels import build as kb

    so = kb.BUILD_ROOT / cfg.slug / f"{cfg.module_name}.so"
    try:
        built = so.stat().st_mtime
        return all(p.stat().st_mtime <= built for p in kb.CSRC.iterdir())
    except OSError:
        return False


def _guess_slug() -> str | None:
    """This GPU's slug from nvidia-smi (no torch), only to find kernel 7's tuned build."""
    from flashprof.kernels.config import gpu_slug
    from flashprof.profiling.env import run_command

    name = run_command(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"], timeout=10)
    return gpu_slug(name.splitlines()[0]) if name else None


def _read_verdict(path: Path):
    from flashprof.profiling.correctness import Verdict

    try:
        data = json.loads(path.read_text())
        return Verdict(**data["verdict"]), data
    except FileNotFoundError:
        return None, None
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise FlashprofError(f"unreadable correctness verdict {path}: {e}") from None


def _land(fresh: Path, report: Path) -> None:
    try:
        os.replace(fresh, report)
    except OSError:
        shutil.move(str(fresh), str(report))  # .incomplete/ on another file system


# ------------------------------------------------------------------ profiling
def profile_all(names: list[str], shape, args, ncu: str, t_start: float | None = None) -> int:
    """Profile each target in turn (``profile_one``), then the summary and figures of the
    new reports (``analyse``) and the stages' timing."""
    t_all = t_start if t_start is not None else time.perf_counter()
    analysis = not getattr(args, "no_analysis", True)
    users = any(is_spec(n) for n in names)
    out_dir = getattr(args, "out_dir", None)
    machine = Machine(names, shape.seq, ncu, preload=analysis, out_dir=out_dir).start(background=not users)
    stages: dict[str, float] = {"gate": 0.0, "ncu": 0.0}
    paths = [profile_one(name, f"{i}/{len(names)}", i == 1, shape, args, ncu, machine, stages)
             for i, name in enumerate(names, 1)]
    _finish(paths, args, machine, stages, analysis, t_all)
    return 0


def profile_one(name: str, count: str, first: bool, shape, args, ncu: str, machine: Machine,
                stages: dict[str, float]) -> Path:
    """One target: the correctness gate, ncu into a hidden folder, the report landed in
    reports/<gpu>/ (the old one to history/), its sidecar written; returns the report."""
    from flashprof.profiling.env import check_writable, write_json_atomic
    from flashprof.profiling.targets import resolve

    t0 = time.perf_counter()
    stream = machine.stream
    target, fn, verdict, in_child, label = _gate(name, count, shape, args, machine, stages)
    user_regex = getattr(args, "kernel_regex", None)  # KERNEL_REGEX=, else the target's own
    regex = user_regex or target.kernel_regex
    limit = getattr(args, "max_launches", MAX_LAUNCHES)
    counted = precount(target, fn, shape, args.dtype, user_regex, limit) if target.user else None
    stem = report_stem(target.stem, shape.seq, shape.batch, shape.heads, args.dtype, args.section_set)
    out_dir = getattr(args, "out_dir", None)
    final_dir = out_dir or (ROOT / reports_folder(machine.result()["gpu"]["slug"]) if machine.done else None)
    pending = _Pending(final_dir, stem)
    program = [sys.executable, "-P", "-m", "flashprof.profiling.ncu_program", name, "--batch", str(shape.batch),
               "--seq", str(shape.seq), "--heads", str(shape.heads), "--dtype", args.dtype]
    if in_child:
        program += ["--verdict", str(pending.verdict_file)]
    # A user target: room for one launch over the limit, so ncu's own count can refuse it.
    opts = NcuOptions(output=pending.fresh.with_suffix(""), kernel_regex=regex,
                      section_set=args.section_set, clock_control=args.clock_control,
                      launch_count=limit + 1 if target.user else 1)
    cmd = ncu_command(ncu, opts, program)
    try:
        info, verdict, profiled, ncu_secs = _run_profiled(cmd, target, shape, args, machine, pending,
                                                          in_child, verdict, user_regex, limit, stages)
        if pending.final_dir is None:
            pending.final_dir = ROOT / reports_folder(info["gpu"]["slug"])
        check_writable(pending.final_dir)
        if target.config is not None:  # kernel 7's config is this GPU's tuned one
            target = resolve(name, gpu=info["gpu"]["slug"], seq=shape.seq, dtype=args.dtype)
    except BaseException:
        pending.discard()
        raise
    stages["ncu"] += ncu_secs
    report = pending.land(label, stream)
    sidecar = _sidecar(target, counted, limit, shape, args, info, first, regex, opts, profiled, cmd,
                       report, pending.fresh, ncu_secs, verdict, in_child)
    write_json_atomic(sidecar_path(report), sidecar.to_json())
    print(f"[{label}] wrote {report} (ncu {ncu_secs:.1f}s, total {time.perf_counter() - t0:.1f}s)",
          file=stream, flush=True)
    return report


def _gate(name: str, count: str, shape, args, machine: Machine, stages: dict[str, float]):
    """The target (kernel 7: the config this GPU's table dispatches for this shape) and, when
    this process needs torch now (a user target, or a kernel not built yet), its build and
    correctness check here; otherwise the check runs inside ncu's program (``in_child``).
    Returns (target, its callable or None, verdict or None, in_child, progress label)."""
    from flashprof.profiling.correctness import require
    from flashprof.profiling.targets import PER_GPU, resolve

    stream = machine.stream
    target = resolve(name, gpu=machine.result()["gpu"]["slug"] if machine.done else None,
                      seq=shape.seq, dtype=args.dtype)
    label = f"{count} {target.stem}"
    in_child = not target.user and not args.no_gate
    cold = target.config is not None and not _built(
        target.config if name not in PER_GPU or machine.done else resolve(name, gpu=_guess_slug(), seq=shape.seq, dtype=args.dtype).config)
    fn = verdict = None
    if target.user or cold:  # this process needs torch now: the check first
        target = resolve(name, gpu=machine.result()["gpu"]["slug"], seq=shape.seq, dtype=args.dtype)
        print(f"[{label}] {target.title}: build + correctness check", file=stream, flush=True)
        fn = target.callable()
        if target.user and not args.no_gate:
            tg = time.perf_counter()
            verdict = require(fn, shape, args.dtype, target.title)
            stages["gate"] += time.perf_counter() - tg
    else:
        print(f"[{label}] {target.title}: correctness check and profile (in the profiled program)",
              file=stream, flush=True)
    return target, fn, verdict, in_child, label


class _Pending:
    """Where ncu writes: a hidden .incomplete/ (never picked up by `flashprof summary <dir>`)
    of the report folder; the finished report replaces the old one (moved to history/) only
    after ncu and the gate succeeded, so a failed or interrupted run leaves reports/ as it
    was. Before the GPU is known, reports/.incomplete/: the same file system as reports/<gpu>/."""

    def __init__(self, final_dir: Path | None, stem: str):
        self.final_dir = final_dir
        self.dir = (final_dir or ROOT / "reports") / ".incomplete"
        self.name = f"{stem}.ncu-rep"
        self.fresh = self.dir / self.name
        self.verdict_file = self.dir / f"{stem}.verdict.json"
        try:
            self.dir.mkdir(parents=True, exist_ok=True)
            self.fresh.unlink(missing_ok=True)  # left by an interrupted run; ncu will not overwrite it
            self.verdict_file.unlink(missing_ok=True)
        except OSError as e:
            raise FlashprofError(f"cannot prepare {self.fresh}: {e.strerror}") from None

    def discard(self) -> None:
        for f in (self.fresh, self.verdict_file):
            f.unlink(missing_ok=True)
        try:
            self.dir.rmdir()  # only when empty
        except OSError:
            pass

    def land(self, label: str, stream) -> Path:
        """The report into its folder (an old one to history/ first); returns its path."""
        report = self.final_dir / self.name
        old = retire(report)
        if old:
            print(f"[{label}] previous report kept as {old}", file=stream)
        _land(self.fresh, report)
        self.verdict_file.unlink(missing_ok=True)
        if self.dir != self.final_dir / ".incomplete":
            try:
                self.dir.rmdir()
            except OSError:
                pass
        return report


def _run_profiled(cmd, target, shape, args, machine: Machine, pending: _Pending, in_child: bool, verdict,
                  user_regex, limit: int, stages: dict[str, float]):
    """ncu over the profiled program, then what must hold before the report is kept: the
    GPU check, the verdict the program wrote, a report, the launch count of a user target.
    Returns (machine facts, verdict, profiled kernels, ncu seconds)."""
    from flashprof.profiling.correctness import refusal

    failure = None
    ncu_out = ncu_secs = None
    try:
        ncu_out, ncu_secs = run_ncu(cmd, target.stem, stream=machine.stream, on_start=machine.watch)
    except FlashprofError as e:
        failure = e
    info = machine.result()  # "no GPU" (and a refused tile) before anything ncu said
    if in_child:
        verdict, vdata = _read_verdict(pending.verdict_file)
        if verdict is not None and not verdict.ok:
            raise FlashprofError(refusal(target.title, shape, args.dtype, verdict))
        if failure is None and verdict is None:
            raise FlashprofError(f"the profiled program wrote no correctness verdict ({pending.verdict_file}); "
                                 "nothing was kept")
        stages["gate"] += float(vdata.get("seconds", 0.0)) if vdata else 0.0
    if failure is not None:
        raise failure
    if not pending.fresh.exists():
        raise FlashprofError(f"ncu finished but wrote no report at {pending.fresh}")
    profiled = ncu_kernels(ncu_out)
    if target.user:
        check_count(profiled, limit, target.user.spec, user_regex)  # refused: nothing lands
    return info, verdict, profiled, ncu_secs


def _sidecar(target, counted, limit: int, shape, args, info: dict, first: bool, regex, opts, profiled, cmd,
             report: Path, fresh: Path, ncu_secs: float, verdict, in_child: bool):
    """The new report's sidecar (``flashprof.profiling.sidecar.Sidecar``)."""
    from flashprof.profiling.env import git_info, now, smi_clocks
    from flashprof.profiling.sidecar import Sidecar

    return Sidecar(
        target_key=target.name,  # which target this is (to_json also writes it as "kernel")
        title=target.title,
        target=user_sidecar(target, counted, limit) if target.user else None,
        config=target.config.to_dict() if target.config else None,
        config_slug=target.config.slug if target.config else None,
        dispatch=dispatch_record(target.name, info["gpu"]["slug"], shape.seq, args.dtype),
        shape=shape.to_dict(),
        dtype=args.dtype,
        flops=shape.flops,
        gpu=info["gpu"],
        clocks={"nvidia_smi_before": info["clocks_before"] if first else smi_clocks(),
                "nvidia_smi_after": smi_clocks(),
                "clock_control": args.clock_control,
                "note": "the SM clock during the profiled launch is in the report "
                        "(sm__cycles_elapsed.avg.per_second)"},
        ncu={"version": info["ncu_version"], "section_set": args.section_set, "kernel_regex": regex,
             "launch_count": opts.launch_count, "profiled_kernels": profiled,
             # the command as run, with the report's final path (ncu wrote it to .incomplete/)
             "args": [str(report.with_suffix("")) if a == str(fresh.with_suffix("")) else a for a in cmd[1:]],
             "seconds": round(ncu_secs, 2)},
        correctness=verdict.to_dict() if verdict else None,
        correctness_where=("the profiled program, before the NVTX range" if in_child
                           else "the profiling process" if verdict else None),
        software=info["software"],
        git=git_info(),
        command=" ".join(shlex.quote(a) for a in sys.argv),
        created=now(),
    )


def _finish(paths: list[Path], args, machine: Machine, stages: dict[str, float], analysis: bool,
            t_all: float) -> None:
    """The list of reports written, the analysis of them, the stages' timing."""
    from flashprof.profiling.env import write_json_atomic

    stream = machine.stream
    if args.paths_file:
        args.paths_file.write_text("\n".join(str(p) for p in paths) + "\n")
    print(f"profiled {len(paths)} target(s) in {time.perf_counter() - t_all:.1f}s", file=stream)
    for p in paths:
        print(p, flush=True)
    if analysis:
        stages.update(analyse(paths, machine, stream))
    stages["total"] = time.perf_counter() - t_all
    timing = {k: round(v, 3) for k, v in stages.items()}
    print("profile: stages " + ", ".join(f"{k} {v:.1f} s" for k, v in timing.items()), file=stream, flush=True)
    if getattr(args, "timing_json", None):
        write_json_atomic(args.timing_json, {"stages_s": timing, "reports": [str(p) for p in paths],
                                             "note": "gate runs inside ncu's program: ncu includes it"})


# ------------------------------------------------------------- summary, figures
def analyse(paths: list[Path], machine: Machine, stream) -> dict[str, float]:
    """The new reports' summary (stdout) and the figures they change, from one parse of
    their folder: the frame the summary reads is the one the figures draw."""
    if not machine.join_preload(check_timeout()):
        print(f"profile: note: the background parse of the folder did not finish in {check_timeout():.0f} s; "
              "the analysis parses it itself", file=stream, flush=True)
    if machine.preload_error is not None:
        raise FlashprofError(f"the analysis stage cannot start: {machine.preload_error}")
    from flashprof.analysis.charts import driver
    from flashprof.analysis.charts.inputs import make_inputs
    from flashprof.analysis.report.errors import ReportError
    from flashprof.analysis.report.parse import load_frame
    from flashprof.analysis.stages.summary import find_ceilings, find_ref_reports, render_table, summarize

    times = {"parse": 0.0, "summary": 0.0, "figures": 0.0}
    by_folder: dict[Path, list[Path]] = {}
    for p in paths:
        by_folder.setdefault(p.parent, []).append(p)
    for folder, new in by_folder.items():
        t0 = time.perf_counter()
        inp = make_inputs(folder)
        real = {os.path.realpath(p) for p in new}
        problem = None
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                frame = load_frame(inp.paths)
            except (ReportError, ValueError) as e:  # another report of the folder: the new one still gets its summary
                problem, frame = e, load_frame(new)
        inp.__dict__["frame"] = frame  # Inputs.frame is a cached property: the figures reuse this parse
        mine = frame["path"].map(os.path.realpath).isin(real)
        names = list(dict.fromkeys(frame.loc[mine, "report"]))
        for w in caught:  # only what concerns the new reports (the others' were said when they landed)
            if any(str(w.message).startswith(f"{n}:") for n in names):
                print(f"profile: warning: {w.message}", file=stream, flush=True)
        t1 = time.perf_counter()
        refs = {os.path.realpath(p) for p in find_ref_reports(new)} - real
        is_ref = frame["path"].map(os.path.realpath).isin(refs)
        rows = summarize(frame[mine], frame[is_ref] if is_ref.any() else None, find_ceilings(new))
        print(render_table(rows), flush=True)
        t2 = time.perf_counter()
        if problem is not None:
            raise FlashprofError(f"figures of {folder} not drawn: {str(problem).strip().splitlines()[0]}")
        try:
            out = driver.out_dir(folder)
            driver.build_changed(inp, out, names, log=lambda m: print(m, flush=True))
        except (FlashprofError, OSError, ValueError, KeyError) as e:
            raise FlashprofError(f"figures of {folder} not drawn: {str(e).strip().splitlines()[0]}") from None
        t3 = time.perf_counter()
        times["parse"] += t1 - t0
        times["summary"] += t2 - t1
        times["figures"] += t3 - t2
    return times


def precount(target, fn, shape, dtype: str, regex: str | None, limit: int) -> list[str] | None:
    """Kernels one warmed-up call launches (PyTorch profiler), refused early if none or too
    many; None when the profiler sees no kernels on this machine (ncu's count decides)."""
    import torch

    from flashprof.profiling.launches import profiler_kernels
    from flashprof.profiling.workload import make_inputs

    q, k, v = make_inputs(shape, dtype)
    for _ in range(3):  # the same warm-up as flashprof.profiling.ncu_program: compilation, autotuning
        fn(q, k, v)
    kernels = profiler_kernels(lambda: fn(q, k, v))
    del q, k, v
    torch.cuda.empty_cache()
    if kernels is None:
        print(f"profile: warning: the PyTorch profiler sees no kernels here; ncu will count "
              f"{target.user.spec}'s launches", file=sys.stderr)
        return None
    kept = matching(kernels, regex)
    check_count(kept, limit, target.user.spec, regex)
    return kept


def user_sidecar(target, counted: list[str] | None, limit: int) -> dict:
    info = source_info(target.user_fn.wrapped, target.user)
    info["max_launches"] = limit
    info["profiler_kernels"] = counted
    return info


if __name__ == "__main__":
    sys.exit(main())
