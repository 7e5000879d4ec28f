"""Profiling stage: workloads, references, the correctness gate, benchmarks, Nsight Compute
collection and the auto-tuning sweep. Input: kernel variants (kernels/). Output: reports
and CSVs under reports/<gpu>/, each with a JSON sidecar."""
