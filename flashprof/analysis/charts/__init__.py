"""Figures and their charts: frames -> matplotlib Figures (``*_charts``, ``roofline_*``), what
the figures are (``specs``), their inputs (``inputs``) and the driver that writes PNGs."""
