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


def wrap(text: str, chars: int, lines: int = 4) -> list[str]:
    """``text`` in lines of at most about ``chars`` characters, broken between words (a longer word is cut), at
    most ``lines`` of them (the last ending in "…" when the text goes on)."""
    out: list[str] = []
    line = ""
    for word in text.split():
        while len(word) > chars:  # a word longer than a line: cut
            if line:
                out.append(line)
                line = ""
            out.append(word[:chars])
            word = word[chars:]
        if line and len(line) + 1 + len(word) > chars:
            out.append(line)
            line = word
        else:
            line = f"{line} {word}" if line else word
    if line:
        out.append(line)
    if len(out) > lines:
        out = out[:lines]
        out[-1] = out[-1][:max(chars - 1, 1)] + "…"
    return out or [""]


def _lines(lines: Sequence[str], x: float, y: float, css: str, step: float) -> str:
    """Lines of text, one ``<tspan>`` each, the first at ``y``."""
    spans = "".join(f'<tspan x="{x:.1f}" dy="{0 if i == 0 else step}">{escape(t)}</tspan>'
                    for i, t in enumerate(lines))
    return f'<text x="{x:.1f}" y="{y:.1f}" class="{css}">{spans}</text>'


#: A legend entry's lines and characters a line (the full name is in the entry's tooltip).
LEGEND_CHARS, LEGEND_LINES = 24, 3


def _legend(names: Sequence[str], x: float, y: float) -> tuple[list[str], float]:
    """The legend's entries, their names wrapped; and where it ends (y)."""
    out = []
    for i, name in enumerate(names):
        color = PALETTE[i % len(PALETTE)]
        lines = wrap(name, LEGEND_CHARS, LEGEND_LINES)
        out.append(f'<g><title>{escape(name)}</title><rect x="{x:.1f}" y="{y - 9:.1f}" width="10" height="10" '
                   f'fill="{color}"/>{_lines(lines, x + 14, y, "lg", 13)}</g>')
        y += 13 * len(lines) + 4
    return out, y


#: Idle stretches cut out of a time axis: a gap between points this many times their median spacing, and a
#: quarter of the time the points cover, is drawn as a narrow break (``BREAK_FRACTION`` of the plot; all the breaks
#: together at most 30% of it).
GAP_FACTOR, GAP_SHARE, BREAK_FRACTION = 10.0, 0.25, 0.03


def _idle_gaps(xs: Sequence[float], x0: float, x1: float) -> list[tuple[float, float]]:
    """The idle stretches of a time axis to cut (start, end), from the points' times."""
    ticks = sorted({x for x in xs if x0 <= x <= x1})
    diffs = sorted(((b - a, a, b) for a, b in zip(ticks, ticks[1:], strict=False)), reverse=True)
    if len(diffs) < 2:
        return []
    median = sorted(d for d, _, _ in diffs)[len(diffs) // 2] or 1.0
    cut: list[tuple[float, float]] = []
    kept = (x1 - x0)
    for d, a, b in diffs:
        if d >= GAP_FACTOR * median and d >= GAP_SHARE * (kept - d):
            cut.append((a, b))
            kept -= d
    return sorted(cut)


def _fmt_span(seconds: float) -> str:
    units = ((86400, "d"), (3600, "h"), (60, "min"), (1, "s"))
    parts: list[str] = []
    for size, name in units:
        if seconds >= size and len(parts) < 2:
            parts.append(f"{int(seconds // size)} {name}")
            seconds %= size
    return " ".join(parts) or "0 s"


def line_chart(  # noqa: C901 - not a dispatch: one drawing routine; not split here (outside the kinds change)
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
    left, right, bottom = 60, 190, 40
    title_lines = wrap(title, max(30, int((width - left) / 7.2)), 3)
    top = 16 * len(title_lines) + 14
    pw = width - left - right
    ph = height - 30 - bottom
    height = top + ph + bottom
    pts = [p for s in series.values() for p in s]
    head = _lines(title_lines, left, 18, "title", 16)
    if not pts:
        return (f'<svg class="chart" viewBox="0 0 {width} {height}" width="{width}" height="{height}" role="img" '
                f'aria-label="{escape(title)}">{head}<text x="{left + pw / 2:.0f}" y="{top + ph / 2:.0f}" '
                f'class="empty">no data</text></svg>')
    x0, x1 = x_range if x_range else (min(p[0] for p in pts), max(p[0] for p in pts))
    y1 = max(p[1] for p in pts)
    if x1 == x0:
        x0, x1 = x0 - 1, x1 + 1
    ystep = _nice_step(y1 or 1, 5)
    ymax = max(ystep, math.ceil((y1 or 1) / ystep) * ystep)
    y0 = 0.0
    gaps = _idle_gaps([p[0] for p in pts], x0, x1) if time_axis else []
    shown = (x1 - x0) - sum(b - a for a, b in gaps)  # the time drawn, idle stretches cut
    gap_w = min(BREAK_FRACTION, 0.3 / max(len(gaps), 1)) * pw  # the breaks take at most 30% of the plot
    run_w = pw - gap_w * len(gaps)

    def sx(x: float) -> float:
        at = float(left)
        start = x0
        for a, b in gaps:
            if x <= a:
                break
            if x < b:  # inside a cut stretch: its break
                return at + (a - start) / shown * run_w + gap_w * (x - a) / (b - a)
            at += (a - start) / shown * run_w + gap_w
            start = b
        return at + (x - start) / shown * run_w

    def sy(y: float) -> float:
        return top + ph - (y - y0) / (ymax - y0) * ph

    parts = [f'<svg class="chart" viewBox="0 0 {width} {height}" width="{width}" height="{height}" role="img" '
             f'aria-label="{escape(title)}">', head,
             f'<rect x="{left}" y="{top}" width="{pw}" height="{ph}" class="plot"/>']
    v = y0
    while v <= ymax + 1e-9:
        yy = sy(v)
        parts.append(f'<line x1="{left}" x2="{left + pw}" y1="{yy:.1f}" y2="{yy:.1f}" class="grid"/>')
        parts.append(f'<text x="{left - 6}" y="{yy + 4:.1f}" class="ytick">{_fmt_num(v)}</text>')
        v += ystep
    runs = [(x0 if i == 0 else gaps[i - 1][1], gaps[i][0] if i < len(gaps) else x1) for i in range(len(gaps) + 1)]
    for a, b in gaps:  # each idle stretch: a hatched break saying how long
        bx = sx(a)
        parts.append(f'<rect x="{bx:.1f}" y="{top}" width="{gap_w:.1f}" height="{ph}" class="gap">'
                     f'<title>{escape(_fmt_span(b - a))} without traffic</title></rect>')
        parts.append(f'<text x="{bx + gap_w / 2:.1f}" y="{top + 12}" class="gapl">{escape(_fmt_span(b - a))}'
                     f'</text>')
    free = float(left) - 100  # where the last tick label ends: labels never overlap
    for a, b in runs:  # ticks per run of activity, as many as its width holds
        n = max(1, min(5, int((sx(b) - sx(a)) / 120)))
        for i in range(n + 1):
            xv = a + (b - a) * i / n
            xx = sx(xv)
            if (i == n and (a, b) != runs[-1]) or xx - 45 < free:
                continue
            free = xx + 45
            # a run's first tick says the day when the chart spans days; the others the time within the run
            label = (_fmt_time(xv, x1 - x0 if i == 0 else max(b - a, 1) if gaps else x1 - x0) if time_axis
                     else _fmt_num(xv))
            parts.append(f'<line x1="{xx:.1f}" x2="{xx:.1f}" y1="{top + ph}" y2="{top + ph + 4}" class="axis"/>')
            parts.append(f'<text x="{xx:.1f}" y="{top + ph + 18}" class="xtick">{escape(label)}</text>')
    parts.append(f'<text x="14" y="{top + ph / 2:.0f}" class="ylabel" '
                 f'transform="rotate(-90 14 {top + ph / 2:.0f})">{escape(y_label)}</text>')
    for i, (name, s) in enumerate(series.items()):
        color = PALETTE[i % len(PALETTE)]
        ordered = sorted(s)
        lines: list[list[str]] = [[]]
        for j, (x, y) in enumerate(ordered):
            if j and any(ordered[j - 1][0] <= a and b <= x for a, b in gaps):
                lines.append([])  # no line drawn across an idle stretch
            elif step and j:
                lines[-1].append(f"{sx(x):.1f},{sy(ordered[j - 1][1]):.1f}")
            lines[-1].append(f"{sx(x):.1f},{sy(y):.1f}")
        for coords in lines:
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
    legend, end = _legend(list(series), left + pw + 14, top + 10)
    parts.extend(legend)
    parts.append("</svg>")
    if end > height:  # a legend longer than the plot: the chart grows to hold it
        parts[0] = parts[0].replace(f'viewBox="0 0 {width} {height}" width="{width}" height="{height}"',
                                    f'viewBox="0 0 {width} {end:.0f}" width="{width}" height="{end:.0f}"')
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
    left, right, top = 300, 120, 52
    bar_h, gap = 9, 8
    group_h = bar_h * len(bar_names) + gap
    height = top + max(1, len(rows)) * group_h + 36
    pw = width - left - right
    parts = [f'<svg class="chart" viewBox="0 0 {width} {height}" '
             f'width="{width}" height="{height}" role="img" aria-label="{escape(title)}">',
             _lines(wrap(title, max(30, int((width - 200) / 7.2)), 2), 10, 18, "title", 16)]
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
        shown = label if len(label) <= 48 else label[:47] + "…"
        parts.append(f'<text x="{left - 8}" y="{gy + group_h / 2:.1f}" class="ylab">{escape(shown)}'
                     f'<title>{escape(label)}</title></text>')
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
        parts.append(f'<rect x="{lx}" y="{top - 16}" width="10" height="10" fill="{PALETTE[j % len(PALETTE)]}"/>')
        parts.append(f'<text x="{lx + 14}" y="{top - 7}" class="lg">{escape(name)}</text>')
    parts.append("</svg>")
    return "".join(parts)
