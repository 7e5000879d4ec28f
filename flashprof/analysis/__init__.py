"""flashprof analysis: Nsight Compute reports -> tidy frames -> roofline, pipes, stalls.

Stages (each a module with one job):
  parse     reports (+ sidecar JSON) -> long frame (report, launch, metric, unit, value)
  roofline  long frame -> hierarchical roofline rows (Nsight Compute chart convention)
  pipes     long frame -> pipe utilisation, issue activity, instruction mix
  stalls    long frame -> warp-stall breakdown, bank conflicts; per-PC frame -> hot lines
  summary   long frame -> per-launch records, comparisons (CLI: flashprof summary|compare|gap)
No plotting here: figures take these frames.
"""
