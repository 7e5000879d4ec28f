"""What the SASS yield bit costs in the series' FlashAttention kernels (issue 31).

The series' sm_80 binaries (sonnyli/flash_attention_from_scratch) carry many yield hints per
KV-loop pass (74-149 instructions with control bit 4 = 0), FA2 two; the model ignores the
bit. This measures whether the hints cost time. Per listing: build the kernel as a cubin
(instantiate.cu, the series' nvcc flags), rewrite bit 45 of the high word of instructions in
its .text section (nothing else), time the variants on one input through the driver API:

  original   as ptxas wrote it
  no_yield   bit 45 = 1 (no hint) wherever the stall count is 1-14 and the instruction is not
             control flow (BRA, EXIT, BSSY, ...: a flipped bit there reads as another opcode
             extension); stall 0 and 15 always
             carry bit 45 = 0 (87 SASS files in reports/sass, sm_80/86/90) and nvdisasm
             rejects BRA, LDSM, NOP with it set, so those stay
  all_yield  bit 45 = 0 (a hint) on every instruction without operand-reuse flags, the
             extreme; with the bit clear nvdisasm drops .reuse (presumably a yielding warp
             cannot keep the reuse cache), which would confound the timing, so those stay

Outputs must equal the original's bit for bit; the original is checked against
scaled_dot_product_attention. Timing: interleaved rounds (variant order rotated per round),
3 warm-up launches then --reps launches per variant and round, each timed with a CUDA event
pair; medians over reps x rounds; TFLOP/s from 4*B*H*S^2*d; ratio_vs_original = median time
/ the original's (> 1: slower). With cuobjdump (beside nvcc or on PATH) and flashprof, the
disassemblies must show the same instructions and control fields but the yield flag.
Usage: --listings 16_A100,7_64_64_swizzling --out DIR [--patch-only: build, patch, check;
no GPU]. Writes DIR/yield_flip.{csv,json}, cubins in DIR/build/. SERIES_SRC: the checkout.
"""
from __future__ import annotations

import argparse
import csv
import ctypes
import dataclasses
import json
import os
import shutil
import statistics
import struct
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
sys.path[:0] = [str(HERE), str(REPO)]
import series_targets as st  # noqa: E402  (FLAGS, listings(), source_root())

YIELD_BIT = 45          # of the high 64-bit word: control code (bits 41..63) bit 4
VARIANTS = ("original", "no_yield", "all_yield")
SMI = ["nvidia-smi", "--query-gpu=clocks.sm,clocks.max.sm", "--format=csv,noheader"]


class Fail(Exception):
    """One line on stderr, exit 2."""


def find_nvcc() -> str:
    try:
        from flashprof.kernels.nvcc import nvcc_path
        return nvcc_path()
    except Exception:   # flashprof or its toolchain finder unavailable: PATH, then the default
        pass
    for cand in (shutil.which("nvcc"), "/usr/local/cuda/bin/nvcc"):
        if cand and os.access(cand, os.X_OK):
            return cand
    raise Fail("nvcc not found (flashprof toolchain, PATH, /usr/local/cuda/bin/nvcc)")


def build_cubin(nvcc: str, listing: str, info: dict, arch: str, bdir: Path) -> Path:
    inc = st.source_root() / info["src_dir"] / "include"
    if not (inc / "forward_kernel.cuh").is_file():
        raise Fail(f"{inc}/forward_kernel.cuh missing: set SERIES_SRC to a checkout of the series")
    cfg_h, out = bdir / f"{listing}.cfg.h", bdir / f"{listing}_{arch}.cubin"
    cfg_h.write_text(f"#define SERIES_CFG {info['config']}\n")
    cmd = [nvcc, *st.FLAGS, f"-gencode=arch=compute_{arch[3:]},code={arch}", "-cubin",
           "-include", str(cfg_h), "-I", str(HERE / "torch_stub"), "-I", str(inc),
           str(HERE / "instantiate.cu"), "-o", str(out)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0 or not out.is_file():
        err = [ln for ln in (proc.stderr + proc.stdout).splitlines() if "error" in ln.lower()]
        raise Fail(f"nvcc failed for {listing} ({arch}): {(err or [proc.returncode])[0]}")
    return out


def elf_sections(data: bytes) -> dict[str, tuple[int, int]]:
    """{section name: (file offset, size)}: flashprof.kernels.sass.patch's reading of the ELF."""
    from flashprof.kernels.sass.patch import PatchError, elf_sections as sections

    try:
        return sections(data)
    except PatchError as e:
        raise Fail(str(e)) from None


def kernel_text(data: bytes) -> tuple[str, int, int]:
    """(mangled name, offset, size) of the one .text.<kernel> section."""
    texts = [(n[len(".text."):], o, s) for n, (o, s) in elf_sections(data).items() if n.startswith(".text.")]
    if len(texts) != 1 or texts[0][2] % 16:
        raise Fail(f"expected one .text.<kernel> section of 16-byte instructions, found {len(texts)}")
    return texts[0]


def param_size(data: bytes, name: str) -> int | None:
    """EIATTR_CBANK_PARAM_SIZE (0x19, a u16 value) in .nv.info.<name>: the kernel's parameter bytes."""
    off, size = elf_sections(data).get(f".nv.info.{name}", (0, 0))
    p = off
    while p < off + size:   # records: format, attribute, u16 (value, or payload size for format 4)
        fmt, attr, val = struct.unpack_from("<BBH", data, p)
        if fmt == 0x03 and attr == 0x19:
            return val
        p += 4 + (val if fmt == 0x04 else 0)
    return None


def patch(data: bytes, off: int, size: int, value: int, skip=frozenset()) -> tuple[bytes, int, int]:
    """Bit 45 set to ``value`` where the docstring says, never at the addresses in ``skip``
    (control flow): (new cubin, changed, yield0 before)."""
    buf = bytearray(data)
    changed = yield0 = 0
    for p in range(off + 8, off + size, 16):
        hi, = struct.unpack_from("<Q", buf, p)
        bit, stall, reuse = hi >> YIELD_BIT & 1, hi >> 41 & 0xF, hi >> 58 & 0xF
        yield0 += bit == 0
        if bit != value and (p - 8 - off) not in skip and (0 < stall < 15 if value else not reuse):
            changed += 1
            struct.pack_into("<Q", buf, p, hi ^ (1 << YIELD_BIT))
    return bytes(buf), changed, yield0


CONTROL_FLOW = {"BRA", "BRX", "JMP", "EXIT", "RET", "CALL", "BSSY", "BSYNC", "WARPSYNC", "BREAK", "YIELD", "NOP"}


def control_flow(nvcc: str, cubin: Path) -> frozenset:
    """Addresses of control-flow instructions (their bit 45 is left alone: on a BRA the
    disassembler reads a flipped bit as another opcode extension). Empty without cuobjdump."""
    tool = Path(nvcc).with_name("cuobjdump")
    tool = str(tool) if tool.exists() else shutil.which("cuobjdump")
    try:
        from flashprof.analysis.gap import controls
    except Exception:
        return frozenset()
    if not tool:
        return frozenset()
    proc = subprocess.run([tool, "-sass", str(cubin)], capture_output=True, text=True)
    if proc.returncode != 0:
        return frozenset()
    return frozenset(i.addr for insts in controls.parse(proc.stdout).values() for i in insts
                     if i.op.split(".")[0] in CONTROL_FLOW)


def check_sass(nvcc: str, orig: Path, patched: Path) -> str:
    """Disassemble both: the same instructions and control fields but the yield flag."""
    tool = Path(nvcc).with_name("cuobjdump")
    tool = str(tool) if tool.exists() else shutil.which("cuobjdump")
    try:
        from flashprof.analysis.gap import controls
    except Exception:
        tool = None
    if not tool:
        return f"sass check of {patched.name} skipped (no cuobjdump or flashprof)"
    fns = []
    for p in (orig, patched):
        proc = subprocess.run([tool, "-sass", str(p)], capture_output=True, text=True)
        if proc.returncode != 0:
            raise Fail(f"cuobjdump -sass {p.name}: {(proc.stderr.strip().splitlines() or ['exit %d' % proc.returncode])[0]}")
        fns.append(controls.parse(proc.stdout))
    a, b = fns
    n = changed = loop0 = loop0_after = 0
    for fn in a:
        ia, ib = a[fn], b.get(fn, [])
        if len(ia) != len(ib):
            raise Fail(f"{patched.name}: instruction count differs in {fn}")
        for x, y in zip(ia, ib):
            if ((x.addr, x.predicate, x.op, x.operands, x.low) != (y.addr, y.predicate, y.op, y.operands, y.low)
                    or dataclasses.replace(x.ctrl, yield_flag=0) != dataclasses.replace(y.ctrl, yield_flag=0)
                    or (x.high ^ y.high) & ~(1 << YIELD_BIT)):
                raise Fail(f"{patched.name}: instruction at {x.addr:#x} differs beyond the yield flag")
            changed += x.ctrl.yield_flag != y.ctrl.yield_flag
        n += len(ia)
        lo, hi = controls.main_loop(ia)
        loop0 += sum(i.ctrl.yield_flag == 0 for i in ia[lo:hi + 1])
        loop0_after += sum(i.ctrl.yield_flag == 0 for i in ib[lo:hi + 1])
    return (f"sass check {patched.name}: {n} instructions, text and other control fields identical, "
            f"yield flag changed on {changed}; KV loop yield=0: {loop0} -> {loop0_after}")


class Args(ctypes.Structure):
    """flash::ForwardKernelArgs (flash_attention.cuh): 4 pointers, 5 int64, 2 int32 = 80 bytes."""
    _fields_ = ([(n, ctypes.c_void_p) for n in ("Q", "K", "V", "O")]
                + [(n, ctypes.c_int64) for n in ("batch_stride", "seq_stride", "head_stride", "seq_len", "n_heads")]
                + [("n_Q_blocks", ctypes.c_int32), ("n_KV_blocks", ctypes.c_int32)])


class Driver:
    """The few CUDA driver calls, in the context torch made current (else the primary one)."""

    def __init__(self, device: int):
        try:
            self.lib = ctypes.CDLL("libcuda.so.1")
        except OSError as e:
            raise Fail(f"libcuda.so.1 not loadable: {e}")
        self.call("cuInit", 0)
        ctx, dev = ctypes.c_void_p(), ctypes.c_int()
        self.call("cuCtxGetCurrent", ctypes.byref(ctx))
        if not ctx.value:
            self.call("cuDeviceGet", ctypes.byref(dev), device)
            self.call("cuDevicePrimaryCtxRetain", ctypes.byref(ctx), dev)
            self.call("cuCtxSetCurrent", ctx)

    def call(self, fn: str, *args) -> None:
        rc = getattr(self.lib, fn)(*args)
        if rc != 0:
            name = ctypes.c_char_p()
            self.lib.cuGetErrorName(rc, ctypes.byref(name))
            raise Fail(f"{fn} failed: CUresult {rc} ({(name.value or b'?').decode()})")

    def function(self, cubin: bytes, name: str, smem: int) -> ctypes.c_void_p:
        mod, fn = ctypes.c_void_p(), ctypes.c_void_p()
        self.call("cuModuleLoadData", ctypes.byref(mod), ctypes.c_char_p(cubin))
        self.call("cuModuleGetFunction", ctypes.byref(fn), mod, name.encode())
        # CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, needed above 48 KiB; set always, as
        # sm_90 cubins also hold 1 KiB of static (reserved) shared memory
        self.call("cuFuncSetAttribute", fn, 8, ctypes.c_int(smem))
        return fn

    def launch(self, fn, grid, block, smem: int, args: Args, stream: int) -> None:
        params = (ctypes.c_void_p * 1)(ctypes.addressof(args))
        self.call("cuLaunchKernel", fn, *map(ctypes.c_uint, (*grid, *block, smem)),
                  ctypes.c_void_p(stream), params, None)


def sh(cmd: list[str]) -> str | None:
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=30).stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None


def measure(a, builds: dict) -> list[dict]:
    try:
        import torch
    except ImportError:
        raise Fail("torch not importable") from None
    if not torch.cuda.is_available():
        raise Fail("no CUDA GPU visible to torch")
    torch.cuda.init()
    B, S, H, d = a.batch, a.seq, a.heads, 128
    g = torch.Generator(device="cuda").manual_seed(0)
    q, k, v = (torch.randn(B, S, H, d, device="cuda", dtype=torch.float16, generator=g) for _ in range(3))
    ref = torch.nn.functional.scaled_dot_product_attention(*(t.transpose(1, 2) for t in (q, k, v))).transpose(1, 2)
    torch.cuda.synchronize()
    drv, stream, rows = Driver(torch.cuda.current_device()), torch.cuda.current_stream().cuda_stream, []
    for listing, b in builds.items():
        d_head, B_r, B_c, n_warps = (int(x) for x in b["config"].split(",")[1:5])
        if d_head != d or S % B_r or S % B_c:
            raise Fail(f"{listing}: d_head {d_head}, tiles {B_r}x{B_c} do not fit d=128, S={S}")
        smem, grid, block = (B_r + 2 * B_c) * d * 2, (S // B_r, H, B), (n_warps * 32, 1, 1)
        fns, outs, kargs = {}, {}, {}
        variants = tuple(v for v in VARIANTS if v in b["cubins"])
        for var in variants:
            fns[var] = drv.function(b["cubins"][var], b["name"], smem)
            outs[var] = torch.full_like(q, float("nan"))
            kargs[var] = Args(q.data_ptr(), k.data_ptr(), v.data_ptr(), outs[var].data_ptr(),
                              S * H * d, H * d, d, S, H, S // B_r, S // B_c)
            drv.launch(fns[var], grid, block, smem, kargs[var], stream)
        torch.cuda.synchronize()
        times = {var: [] for var in variants}
        for r in range(a.rounds):
            n = len(variants)
            for var in variants[r % n:] + variants[:r % n]:
                for _ in range(3):
                    drv.launch(fns[var], grid, block, smem, kargs[var], stream)
                ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(a.reps)]
                for e0, e1 in ev:
                    e0.record()
                    drv.launch(fns[var], grid, block, smem, kargs[var], stream)
                    e1.record()
                torch.cuda.synchronize()
                times[var] += [e0.elapsed_time(e1) for e0, e1 in ev]
        base = statistics.median(times["original"])
        for var in variants:
            med, dec = statistics.median(times[var]), statistics.quantiles(times[var], n=10, method="inclusive")
            rows.append(dict(listing=listing, variant=var, flipped_instructions=b["flipped"][var],
                             yield0_in_text_before=b["yield0"], median_ms=round(med, 4),
                             p10_ms=round(dec[0], 4), p90_ms=round(dec[-1], 4),
                             tflops=round(4 * B * H * S * S * d / med / 1e9, 2), ratio_vs_original=round(med / base, 4),
                             bitwise_equal=bool(torch.equal(outs[var], outs["original"])),
                             max_abs_err_vs_sdpa=(outs[var].float() - ref.float()).abs().max().item()))
            print(" ".join(f"{k}={v}" for k, v in rows[-1].items()), flush=True)
    return rows


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--listings", required=True, help="comma-separated listings of configs.tsv")
    ap.add_argument("--out", required=True, type=Path)
    for flag, default in (("--seq", 4096), ("--batch", 16), ("--heads", 16), ("--reps", 50), ("--rounds", 5)):
        ap.add_argument(flag, type=int, default=default)
    ap.add_argument("--arch", default="sm_90")
    ap.add_argument("--patch-only", action="store_true", help="build, patch, check; no GPU")
    a = ap.parse_args(argv)
    if a.reps < 1 or a.rounds < 1 or a.reps * a.rounds < 2:
        raise Fail("--reps and --rounds must be >= 1, with at least 2 timed launches in all")
    known = st.listings(measured_only=False)
    names = [n.strip() for n in a.listings.split(",") if n.strip()]
    if unknown := [n for n in names if n not in known]:
        raise Fail(f"unknown listing(s) {', '.join(unknown)} (see {st.CONFIGS})")
    nvcc = find_nvcc()
    bdir = a.out / "build"
    bdir.mkdir(parents=True, exist_ok=True)
    clocks_before, builds = sh(SMI), {}
    for listing in names:
        path = build_cubin(nvcc, listing, known[listing], a.arch, bdir)
        data = path.read_bytes()
        name, off, size = kernel_text(data)
        if (ps := param_size(data, name)) != ctypes.sizeof(Args):
            raise Fail(f"{listing}: kernel parameters are {ps} bytes, ForwardKernelArgs here {ctypes.sizeof(Args)}")
        b = dict(config=known[listing]["config"], name=name, cubins={"original": data},
                 flipped={"original": 0}, paths={"original": str(path)}, checks=[])
        skip = control_flow(nvcc, path)
        for var, value in (("no_yield", 1), ("all_yield", 0)):
            b["cubins"][var], b["flipped"][var], b["yield0"] = patch(data, off, size, value, skip)
            p = bdir / f"{path.stem}.{var}.cubin"
            p.write_bytes(b["cubins"][var])
            b["paths"][var] = str(p)
        print(f"{listing}: {size // 16} instructions, yield bit 0 on {b['yield0']}; no_yield flips "
              f"{b['flipped']['no_yield']}, all_yield flips {b['flipped']['all_yield']} ({name})", flush=True)
        for var in ("no_yield", "all_yield"):
            try:
                b["checks"].append(check_sass(nvcc, path, Path(b["paths"][var])))
            except Fail as e:  # an encoding the disassembler refuses is not run: recorded, not fatal
                b["checks"].append(f"{var} not run: {e}")
                del b["cubins"][var]
            print("  " + b["checks"][-1], flush=True)
        builds[listing] = b
    if a.patch_only:
        return 0
    rows = measure(a, builds)
    import torch
    with open(a.out / "yield_flip.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    commit = st.source_root() / "COMMIT"
    meta = dict(method=__doc__.strip(), gpu=torch.cuda.get_device_name(), clocks_sm_max_before=clocks_before,
                clocks_sm_max_after=sh(SMI), nvcc=(sh([nvcc, "--version"]) or "?").splitlines()[-1],
                arch=a.arch, flags=st.FLAGS, series_commit=commit.read_text().strip() if commit.is_file() else None,
                command=[sys.executable, *sys.argv], shape=dict(B=a.batch, S=a.seq, H=a.heads, d=128),
                reps=a.reps, rounds=a.rounds, rows=rows,
                kernels={n: dict(mangled=b["name"], cubins=b["paths"], sass_checks=b["checks"]) for n, b in builds.items()})
    (a.out / "yield_flip.json").write_text(json.dumps(meta, indent=1) + "\n")
    bad = [r for r in rows if not r["bitwise_equal"] or not r["max_abs_err_vs_sdpa"] <= 2e-2]
    for r in bad:
        print(f"yield_flip: check failed: {r['listing']} {r['variant']} bitwise_equal={r['bitwise_equal']} "
              f"max_abs_err_vs_sdpa={r['max_abs_err_vs_sdpa']}", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except Fail as e:
        print(f"yield_flip: error: {e}", file=sys.stderr)
        sys.exit(2)
