"""Gap stage: why the series' kernels reach ~101.5 % of FlashAttention-2 on an RTX 3090
but ~80 % on an A100 (issues 6 and 13).

The gap model is the issue-13 instruction-level model (nothing fitted): ``controls`` (SASS
with decoded control codes), ``constants`` (per-GPU latencies / issue intervals with
sources; the H200's from reports/h200/ceilings.json), ``scheduler`` (an in-order,
per-sub-partition issue simulation of the KV loop), ``issue_report`` (predictions vs
published / measured, sensitivity, rendering) and ``frozen`` (its committed result,
reports/gap/issue_model.json, read while the inputs' hashes match). ``data`` holds what
both models read: the GPU data files, the targets, opcode -> pipe, ``launch_work``.
The issue-6 pipe-time bound with a fitted alpha is superseded: ``legacy_pipes/``, imported
only by ``--model pipes`` and the ceilings / pipe-share figures: ``pipe_table`` (its
modelled pipes), ``work`` (work carried over to other GPUs), ``throughput`` (pipe times,
the fitted combination, the table) and ``pipes_report`` (limitations, rendering, ``gap_paths``).
"""
