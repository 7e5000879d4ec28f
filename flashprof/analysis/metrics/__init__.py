"""Metric recipes: every quantity the analysis reports, each with its ordered ways to get it
from a report and the provenance of the value it gave."""
