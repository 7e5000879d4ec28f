"""Reading reports: Nsight Compute files (through ``ncu_report`` in worker processes) and their
sidecars -> one tidy long frame; which target a report is."""
