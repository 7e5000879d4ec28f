"""The superseded pipe-time model (a fitted bound): kept for ``gap --model pipes``, the
ceilings and pipe-share figures and the static-SASS tables the issue model reads
(``pipe_table``: opcode -> pipe, GPU data files; ``work``: work per pipe; ``throughput``:
pipe times, the fitted combination; ``pipes_report``: limitations, rendering)."""
