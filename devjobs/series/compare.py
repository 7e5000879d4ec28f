"""Compare rebuilt series SASS with the series' own listings (kernel_sass/*.asm).

Usage: python3 devjobs/series/compare.py LISTING_DIR SASS_DIR [--json OUT] [--md OUT]

LISTING_DIR holds the series' nvdisasm-style listings (text only: labels, no addresses, no
encodings); SASS_DIR holds the <listing>_sm_XX.sass files devjobs/series_sass.sh wrote
(cuobjdump -sass with encodings). For each pair: registers (SHI_REGISTERS in the listing,
REG in our resources line), whole-function and KV-loop instruction counts, the loop's
opcode histogram, and how much of the loop's instruction sequence is the same (difflib
ratio over opcodes with modifiers; and over full text with registers). The KV loop is the
backward branch whose range holds the most HMMA (ties: the wider one), the rule
kernels/sass_text.find_main_loop uses; this file re-implements it so that it runs with the
standard library alone, without the analysis package.
"""
from __future__ import annotations

import argparse
import difflib
import json
import re
import sys
from collections import Counter
from pathlib import Path

_ADDR = re.compile(r"^/\*([0-9a-f]{4,})\*/\s*(.*?)\s*;\s*/\*\s*0x[0-9a-f]{16}\s*\*/", re.I)
_LABEL = re.compile(r"^\s*(\.L_x_\d+):\s*$")
_LREF = re.compile(r"`\(?(\.L_x_\d+)\)?")
_HEX = re.compile(r"0x([0-9a-fA-F]+)")
# opcode classes reported on their own; everything else is counted by base opcode
WATCH = ("HMMA", "LDSM", "LDS", "LDGSTS", "STS", "STG", "MUFU", "FFMA", "FMUL", "FADD", "FMNMX",
         "IMAD.MOV", "MOV", "IMAD.SHL", "IMAD.WIDE", "IMAD", "IADD3", "LOP3", "SHF", "LEA",
         "F2FP", "SHFL", "BAR", "CS2R", "ISETP", "BRA", "DEPBAR")


def _split(text: str) -> tuple[str, str, str]:
    text = text.strip().lstrip("{ ").strip()
    pred = ""
    if text.startswith("@"):
        pred, text = text.split(None, 1)
    op, _, rest = text.partition(" ")
    return pred, op, rest.strip()


def opclass(op: str) -> str:
    base = op.split(".", 1)[0]
    if base == "IMAD":
        for sub in ("IMAD.MOV", "IMAD.SHL", "IMAD.WIDE"):
            if op.startswith(sub):
                return sub
    return base


def read_listing(path: Path) -> tuple[list[tuple[str, str, str]], list[int | None], int]:
    """(instructions, branch target index per instruction, registers) of a series listing."""
    text = path.read_text()
    regs = int(re.search(r"SHI_REGISTERS=(\d+)", text).group(1))
    insts, refs, labels = [], [], {}
    body = False
    for line in text.splitlines():
        if line.startswith(".text."):
            body = True
            continue
        if not body:
            continue
        if m := _LABEL.match(line):
            labels[m.group(1)] = len(insts)
            continue
        s = line.strip()
        if not s or s.startswith(("//", ".")) or not s.endswith(";"):
            continue
        pred, op, rest = _split(s[:-1])
        insts.append((pred, op, rest))
        m = _LREF.search(rest)
        refs.append(m.group(1) if m else None)
    targets = [labels.get(r) if r else None for r in refs]
    # branch and call targets as instruction indices, so the text compares across formats
    insts = [(p, o, f"->{t}" if r else x) for (p, o, x), r, t in zip(insts, refs, targets)]
    targets = [t if o.startswith("BRA") else None for (_, o, _), t in zip(insts, targets)]
    return insts, targets, regs


def read_sass(path: Path) -> tuple[list[tuple[str, str, str]], list[int | None], int]:
    """(instructions, branch target index per instruction, registers) of our .sass file."""
    text = path.read_text()
    regs = int(re.search(r"REG:(\d+)", text).group(1))
    insts, addrs, raw = [], [], []
    for line in text.splitlines():
        if m := _ADDR.match(line):
            addrs.append(int(m.group(1), 16))
            insts.append(_split(m.group(2)))
    index = {a: k for k, a in enumerate(addrs)}
    out = []
    for pred, op, rest in insts:
        hits = _HEX.findall(rest) if op.startswith(("BRA", "CALL")) else []
        t = index.get(int(hits[-1], 16)) if hits else None
        out.append((pred, op, f"->{t}") if hits else (pred, op, rest))
        raw.append(t if op.startswith("BRA") else None)
    return out, raw, regs


def main_loop(insts, targets) -> tuple[int, int] | None:
    best, span = None, None
    hmma = [k for k, (_, op, _) in enumerate(insts) if op.startswith("HMMA")]
    for k, t in enumerate(targets):
        if t is None or t >= k:
            continue
        n = sum(t <= h <= k for h in hmma)
        key = (n, k - t, -t)
        if n and (best is None or key > best):
            best, span = key, (t, k)
    return span


def _norm(inst) -> str:
    pred, op, rest = inst
    rest = re.sub(r"\s+", "", rest)
    return f"{pred} {op} {rest}".strip()


def compare(listing: Path, sass: Path) -> dict:
    a, ta, ra = read_listing(listing)
    b, tb, rb = read_sass(sass)
    la, lb = main_loop(a, ta), main_loop(b, tb)
    # drop the trailing NOP padding cuobjdump prints and the listing also carries
    la_body = a[la[0]:la[1] + 1] if la else []
    lb_body = b[lb[0]:lb[1] + 1] if lb else []
    ha = Counter(opclass(op) for _, op, _ in la_body)
    hb = Counter(opclass(op) for _, op, _ in lb_body)
    ops_a = [op for _, op, _ in la_body]
    ops_b = [op for _, op, _ in lb_body]
    return {
        "listing": listing.name, "sass": sass.name,
        "regs_series": ra, "regs_ours": rb,
        "insts_series": sum(op != "NOP" for _, op, _ in a),
        "insts_ours": sum(op != "NOP" for _, op, _ in b),
        "loop_series": len(la_body), "loop_ours": len(lb_body),
        "hist_series": dict(ha), "hist_ours": dict(hb),
        "loop_opcode_seq_ratio": round(difflib.SequenceMatcher(None, ops_a, ops_b,
                                                               autojunk=False).ratio(), 4),
        "loop_text_identical": [_norm(x) for x in la_body] == [_norm(x) for x in lb_body],
        "function_text_identical": [_norm(x) for x in a] == [_norm(x) for x in b],
    }


def compare_sass(a_path: Path, b_path: Path) -> dict:
    """Two cuobjdump files (e.g. two builds of FA2): the same fields as compare()."""
    a, ta, ra = read_sass(a_path)
    b, tb, rb = read_sass(b_path)
    la, lb = main_loop(a, ta), main_loop(b, tb)
    la_body, lb_body = a[la[0]:la[1] + 1], b[lb[0]:lb[1] + 1]
    return {
        "listing": a_path.name, "sass": b_path.name, "regs_series": ra, "regs_ours": rb,
        "insts_series": sum(op != "NOP" for _, op, _ in a),
        "insts_ours": sum(op != "NOP" for _, op, _ in b),
        "loop_series": len(la_body), "loop_ours": len(lb_body),
        "hist_series": dict(Counter(opclass(op) for _, op, _ in la_body)),
        "hist_ours": dict(Counter(opclass(op) for _, op, _ in lb_body)),
        "loop_opcode_seq_ratio": round(difflib.SequenceMatcher(
            None, [op for _, op, _ in la_body], [op for _, op, _ in lb_body], autojunk=False).ratio(), 4),
        "loop_text_identical": [_norm(x) for x in la_body] == [_norm(x) for x in lb_body],
        "function_text_identical": [_norm(x) for x in a] == [_norm(x) for x in b],
    }


def md_table(rows: list[dict]) -> str:
    cols = ("HMMA", "LDSM", "IMAD.MOV", "MOV", "LOP3", "IMAD.SHL", "SHF", "IADD3", "FFMA", "MUFU")
    out = ["| build | regs series/ours | function instr series/ours | loop series/ours | "
           + " | ".join(cols) + " | loop opcode-seq ratio | loop text identical | function text identical |",
           "|" + "---|" * (7 + len(cols))]
    for r in rows:
        cells = [f"{r['hist_series'].get(c, 0)}/{r['hist_ours'].get(c, 0)}" for c in cols]
        out.append(f"| {r['sass'][:-5]} | {r['regs_series']}/{r['regs_ours']} | "
                   f"{r['insts_series']}/{r['insts_ours']} | {r['loop_series']}/{r['loop_ours']} | "
                   + " | ".join(cells) + f" | {r['loop_opcode_seq_ratio']:.3f} | "
                   f"{'yes' if r['loop_text_identical'] else 'no'} | "
                   f"{'yes' if r['function_text_identical'] else 'no'} |")
    return "\n".join(out) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("listing_dir", type=Path, help="or, with --pair, the first .sass file")
    ap.add_argument("sass_dir", type=Path, help="or, with --pair, the second .sass file")
    ap.add_argument("--pair", action="store_true",
                    help="compare two cuobjdump .sass files (columns: first/second)")
    ap.add_argument("--arch", default="sm_80")
    ap.add_argument("--json", type=Path)
    ap.add_argument("--md", type=Path)
    args = ap.parse_args(argv)
    rows = []
    if args.pair:
        rows.append(compare_sass(args.listing_dir, args.sass_dir))
    for sass in [] if args.pair else sorted(args.sass_dir.glob(f"*_{args.arch}.sass"),
                       key=lambda p: (int(p.name.split("_")[0]), p.name)):
        listing = args.listing_dir / (sass.name[: -len(f"_{args.arch}.sass")] + ".asm")
        if listing.is_file():
            rows.append(compare(listing, sass))
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1, sort_keys=True) + "\n")
    table = md_table(rows)
    if args.md:
        args.md.write_text(table)
    sys.stdout.write(table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
