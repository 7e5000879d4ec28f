"""Per-launch stages: pure functions from the long frame (or committed tables) to small frames
and records: roofline, pipes, stalls, summary, bench tables, measured roofs."""
