"""Plot helpers shared by the chart functions in ``analysis.plots`` (style, labels)."""
