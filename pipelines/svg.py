"""Small inline-SVG charts for the self-contained report page (no plotting library, no external URLs)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime

from pipelines.escape import escape

PALETTE = (
    "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22", "#7f7f7f",
)

Point = tuple[float, float]


def _nice_step(span: float, ticks: int) -> float:
    if span <= 0:
        return 1.0
    raw = span / max(1, ticks)
    mag = 10 ** math.floor(math.log10(raw))
    for m in (1, 2, 2.5, 5, 10):
        if raw <= m * mag:
            return m * mag
    return 10 * mag


def _fmt_num(v: float) -> str:
    if abs(v) >= 1000:
        return f"{v:,.0f}"
    if v == int(v):
        return str(int(v))
    return f"{v:.3g}"


def _fmt_time(epoch_s: float, span_s: float) -> str:
    t = datetime.fromtimestamp(epoch_s, UTC)
    if span_s < 120:
        return t.strftime("%H:%M:%S")
    if span_s < 2 * 86400:
        return t.strftime("%H:%M")
    return t.strftime("%m-%d %H:%M")


def _legend(names: Sequence[str], x: float, y: float) -> list[str]:
    out = []
    for i, name in enumerate(names):
        color = PALETTE[i % len(PALETTE)]
        yy = y + i * 16
        out.append(f'<rect x="{x:.1f}" y="{yy - 9:.1f}" width="10" height="10" fill="{color}"/>')
        out.append(f'<text x="{x + 14:.1f}" y="{yy:.1f}" class="lg">{escape(name)}</text>')
    return out


def line_chart(
    series: Mapping[str, Sequence[Point]],
    title: str,
    y_label: str,
    width: int = 900,
    height: int = 300,
    time_axis: bool = True,
    step: bool = False,
    point_labels: Mapping[str, Sequence[str]] | None = None,
    x_range: tuple[float, float] | None = None,
) -> str:
    """Lines (x = epoch seconds when ``time_axis``) with a legend on the right; returns an ``<svg>``.

    ``point_labels`` are written beside the points when there are few of them (always in the tooltips).
    """
    left, right, top, bottom = 60, 190, 30, 40
    pw, ph = width - left - right, height - top - bottom
    pts = [p for s in series.values() for p in s]
    parts = [f'<svg class="chart" viewBox="0 0 {width} {height}" '
             f'width="{width}" height="{height}" role="img" aria-label="{escape(title)}">',
             f'<text x="{left}" y="18" class="title">{escape(title)}</text>']
    if not pts:
        parts.append(f'<text x="{left + pw / 2:.0f}" y="{top + ph / 2:.0f}" class="empty">no data</text></svg>')
        return "".join(parts)
    x0, x1 = x_range if x_range else (min(p[0] for p in pts), max(p[0] for p in pts))
    y1 = max(p[1] for p in pts)
    if x1 == x0:
        x0, x1 = x0 - 1, x1 + 1
    ystep = _nice_step(y1 or 1, 5)
    ymax = max(ystep, math.ceil((y1 or 1) / ystep) * ystep)
    y0 = 0.0

    def sx(x: float) -> float:
        return left + (x - x0) / (x1 - x0) * pw

    def sy(y: float) -> float:
        return top + ph - (y - y0) / (ymax - y0) * ph

    parts.append(f'<rect x="{left}" y="{top}" width="{pw}" height="{ph}" class="plot"/>')
    v = y0
    while v <= ymax + 1e-9:
        yy = sy(v)
        parts.append(f'<line x1="{left}" x2="{left + pw}" y1="{yy:.1f}" y2="{yy:.1f}" class="grid"/>')
        parts.append(f'<text x="{left - 6}" y="{yy + 4:.1f}" class="ytick">{_fmt_num(v)}</text>')
        v += ystep
    for i in range(6):
        xv = x0 + (x1 - x0) * i / 5
        xx = sx(xv)
        label = _fmt_time(xv, x1 - x0) if time_axis else _fmt_num(xv)
        parts.append(f'<line x1="{xx:.1f}" x2="{xx:.1f}" y1="{top + ph}" y2="{top + ph + 4}" class="axis"/>')
        parts.append(f'<text x="{xx:.1f}" y="{top + ph + 18}" class="xtick">{escape(label)}</text>')
    parts.append(f'<text x="14" y="{top + ph / 2:.0f}" class="ylabel" '
                 f'transform="rotate(-90 14 {top + ph / 2:.0f})">{escape(y_label)}</text>')
    for i, (name, s) in enumerate(series.items()):
        color = PALETTE[i % len(PALETTE)]
        ordered = sorted(s)
        coords: list[str] = []
        for j, (x, y) in enumerate(ordered):
            if step and j:
                coords.append(f"{sx(x):.1f},{sy(ordered[j - 1][1]):.1f}")
            coords.append(f"{sx(x):.1f},{sy(y):.1f}")
        parts.append(f'<polyline points="{" ".join(coords)}" fill="none" stroke="{color}" stroke-width="1.8">'
                     f'<title>{escape(name)}</title></polyline>')
        labels = (point_labels or {}).get(name)
        if len(ordered) <= 60 or labels:
            for j, (x, y) in enumerate(ordered):
                tip = f"{name}: {_fmt_num(y)}" + (f" ({labels[j]})" if labels and j < len(labels) else "")
                parts.append(f'<circle cx="{sx(x):.1f}" cy="{sy(y):.1f}" r="2.6" fill="{color}">'
                             f'<title>{escape(tip)}</title></circle>')
                if labels and j < len(labels) and len(pts) <= 6:
                    parts.append(f'<text x="{sx(x) + 3:.1f}" y="{sy(y) - 5:.1f}" class="pl">{escape(labels[j])}</text>')
    parts.extend(_legend(list(series), left + pw + 14, top + 10))
    parts.append("</svg>")
    return "".join(parts)


def bar_chart(
    rows: Sequence[tuple[str, Sequence[float]]],
    bar_names: Sequence[str],
    title: str,
    unit: str,
    width: int = 900,
    log: bool = True,
) -> str:
    """Horizontal grouped bars (one group per row label, one bar per ``bar_names`` entry)."""
    left, right, top = 300, 120, 44
    bar_h, gap = 9, 8
    group_h = bar_h * len(bar_names) + gap
    height = top + max(1, len(rows)) * group_h + 36
    pw = width - left - right
    parts = [f'<svg class="chart" viewBox="0 0 {width} {height}" '
             f'width="{width}" height="{height}" role="img" aria-label="{escape(title)}">',
             f'<text x="10" y="18" class="title">{escape(title)}</text>']
    values = [v for _, vs in rows for v in vs if v is not None and v > 0]
    if not values:
        parts.append(f'<text x="{left + pw / 2:.0f}" y="{top + 20}" class="empty">no data</text></svg>')
        return "".join(parts)
    vmax = max(values)
    if log:
        lo = 10 ** math.floor(math.log10(min(values)))
        hi = 10 ** math.ceil(math.log10(vmax))
        if hi <= lo:
            hi = lo * 10

        def sx(v: float) -> float:
            return left + (math.log10(max(v, lo)) - math.log10(lo)) / (math.log10(hi) - math.log10(lo)) * pw

        ticks = [lo * 10**i for i in range(int(round(math.log10(hi / lo))) + 1)]
    else:
        step = _nice_step(vmax, 5)
        hi = math.ceil(vmax / step) * step

        def sx(v: float) -> float:
            return left + v / hi * pw

        ticks = [step * i for i in range(int(round(hi / step)) + 1)]
    bottom = top + len(rows) * group_h
    for tv in ticks:
        xx = sx(tv)
        parts.append(f'<line x1="{xx:.1f}" x2="{xx:.1f}" y1="{top - 4}" y2="{bottom}" class="grid"/>')
        parts.append(f'<text x="{xx:.1f}" y="{bottom + 14}" class="xtick">{_fmt_num(tv)}</text>')
    parts.append(f'<text x="{left + pw / 2:.0f}" y="{bottom + 30}" class="xtick">{escape(unit)}'
                 f'{" (log scale)" if log else ""}</text>')
    for i, (label, vs) in enumerate(rows):
        gy = top + i * group_h
        parts.append(f'<text x="{left - 8}" y="{gy + group_h / 2:.1f}" class="ylab">{escape(label)}</text>')
        for j, v in enumerate(vs):
            if v is None:
                continue
            color = PALETTE[j % len(PALETTE)]
            w = max(1.0, sx(v) - left) if v > 0 else 0
            y = gy + j * bar_h
            parts.append(f'<rect x="{left}" y="{y:.1f}" width="{w:.1f}" height="{bar_h - 1}" fill="{color}">'
                         f'<title>{escape(label)} {escape(bar_names[j])}: {_fmt_num(v)} {escape(unit)}</title></rect>')
            parts.append(f'<text x="{left + w + 4:.1f}" y="{y + bar_h - 1:.1f}" class="bl">{_fmt_num(v)}</text>')
    for j, name in enumerate(bar_names):
        lx = width - right - 160 + j * 70
        parts.append(f'<rect x="{lx}" y="9" width="10" height="10" fill="{PALETTE[j % len(PALETTE)]}"/>')
        parts.append(f'<text x="{lx + 14}" y="18" class="lg">{escape(name)}</text>')
    parts.append("</svg>")
    return "".join(parts)
