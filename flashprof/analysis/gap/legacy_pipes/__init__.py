"""The superseded pipe-time model (a fitted bound): kept for ``gap --model pipes`` and the
ceilings and pipe-share figures, and imported by nothing else (the issue model reads its
data from ``flashprof.analysis.gap.data``). ``pipe_table``: the modelled pipes; ``work``:
work carried over to other GPUs; ``throughput``: pipe times, the fitted combination;
``pipes_report``: limitations, rendering."""
