"""Label placement in display space: text sizes and obstacles (points, lines, boxes)
that a new label should keep clear of; used by the roofline's roof and slope labels."""
from __future__ import annotations

import numpy as np


def text_size(ax, renderer, text: str, fontsize: float, bold: bool = False) -> tuple[float, float]:
    """(width, height) in display pixels of ``text`` drawn unrotated."""
    t = ax.text(0, 0, text, fontsize=fontsize, fontweight="bold" if bold else "normal", transform=None)
    bb = t.get_window_extent(renderer)
    t.remove()
    return float(bb.width), float(bb.height)


class Obstacles:
    """Display-space points (x, y, radius) that a label must keep clear of."""

    def __init__(self, ax, pts=None):
        self.ax = ax
        self.pts = [] if pts is None else list(pts)

    def point(self, x, y, r: float = 0.0) -> None:
        px = self.ax.transData.transform((x, y))
        self.pts.append((px[0], px[1], r))

    def line(self, xy, r: float = 1.0, step: float = 3.0) -> None:
        """A polyline in data coordinates, sampled every ``step`` pixels (display space,
        so straight on log axes too)."""
        d = self.ax.transData.transform(np.asarray(xy, float))
        for a, b in zip(d[:-1], d[1:]):
            n = max(int(np.hypot(*(b - a)) / step), 1)
            for t in np.linspace(0, 1, n + 1):
                q = a + t * (b - a)
                self.pts.append((q[0], q[1], r))

    def rect_px(self, x0: float, y0: float, w: float, h: float, step: float = 3.0) -> None:
        for xx in np.linspace(x0, x0 + w, max(int(w / step), 1) + 1):
            for yy in np.linspace(y0, y0 + h, max(int(h / step), 1) + 1):
                self.pts.append((xx, yy, 0.0))

    def rrect_px(self, c, u, w: float, h: float, step: float = 3.0) -> None:
        """A rotated rectangle: centre ``c``, unit direction ``u`` of its long side."""
        n = np.array([-u[1], u[0]])
        for s in np.linspace(-w / 2, w / 2, max(int(w / step), 1) + 1):
            for t in np.linspace(-h / 2, h / 2, max(int(h / step), 1) + 1):
                q = np.asarray(c) + s * u + t * n
                self.pts.append((q[0], q[1], 0.0))

    def merged(self, more) -> "Obstacles":
        out = Obstacles(self.ax, self.pts)
        for o in more:
            out.pts += o.pts
        return out

    def clearance(self, centres: np.ndarray, u, w: float, h: float) -> np.ndarray:
        """Per centre: the smallest gap (px) between a ``w`` x ``h`` box along ``u`` and
        any obstacle (negative: overlap)."""
        if not self.pts:
            return np.full(len(centres), np.inf)
        P = np.asarray(self.pts, float)
        n = np.array([-u[1], u[0]])
        d = P[None, :, :2] - np.asarray(centres, float)[:, None, :]
        along = np.abs(d @ np.asarray(u, float))
        across = np.abs(d @ n)
        dx = np.maximum(along - w / 2, 0)
        dy = np.maximum(across - h / 2, 0)
        inside = (dx == 0) & (dy == 0)
        gap = np.where(inside, -np.minimum(w / 2 - along, h / 2 - across), np.hypot(dx, dy)) - P[None, :, 2]
        return gap.min(axis=1)

    def best_rect(self, corners, w: float, h: float, ax_bbox=None, good: float = 3.0):
        """The first (left, bottom) of ``corners`` whose upright box keeps ``good`` px
        clear (and lies inside ``ax_bbox``), else the one with the most clearance."""
        cs = np.asarray(corners, float)
        centres = cs + np.array([w / 2, h / 2])
        clear = self.clearance(centres, np.array([1.0, 0.0]), w, h)
        if ax_bbox is not None:
            out = ((cs[:, 0] < ax_bbox.x0 + 2) | (cs[:, 0] + w > ax_bbox.x1 - 2)
                   | (cs[:, 1] < ax_bbox.y0 + 2) | (cs[:, 1] + h > ax_bbox.y1 - 2))
            clear = np.where(out, -np.inf, clear)
        ok = np.flatnonzero(clear >= good)
        return tuple(cs[ok[0]] if len(ok) else cs[int(np.argmax(clear))])
