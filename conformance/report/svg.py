"""The error-against-time-step plot of a case page, as inline SVG written here (no JS library).

One series per target: x = time step, y = error / allowed error on a log scale, a line at ratio 1
(the tolerance), and a legend. Built from a record's ``error_by_step`` ({output: [ratio or null per
step]}) when present, else one point at the worst element's time step.
"""

from __future__ import annotations

import math

from markupsafe import Markup, escape

from conformance.report.view import num, time_step_of
from conformance.results import Record

#: Tableau 10, then the same hues dashed
PALETTE = ("#4e79a7", "#e15759", "#59a14f", "#f28e2b", "#b07aa1", "#76b7b2", "#edc948", "#ff9da7",
           "#9c755f", "#bab0ac")
FLOOR = 1e-12       # a ratio of 0 (exact) is drawn here, on the axis floor


def series_of(rec: Record) -> dict | None:
    """{"points": [(step, ratio|None)], "source": "error_by_step" | "worst"} or None (no numbers)."""
    by_step = rec.error_by_step
    if isinstance(by_step, dict) and by_step:
        length = max((len(v) for v in by_step.values() if isinstance(v, list)), default=0)
        points = []
        for step in range(length):
            vals = [num(v[step]) for v in by_step.values() if isinstance(v, list) and step < len(v)]
            vals = [v for v in vals if v is not None and not math.isnan(v)]
            points.append((step, max(vals) if vals else None))
        if any(p[1] is not None for p in points):
            return {"points": points, "source": "error_by_step"}
    worst = rec.worst
    if isinstance(worst, dict):
        ratio = num(worst.get("ratio"))
        step = time_step_of(worst.get("time_step"))
        if ratio is not None and not math.isnan(ratio):
            return {"points": [(step if step is not None else 0, ratio)], "source": "worst",
                    "step_known": step is not None}
    return None


def _spread(series) -> dict:
    """Single-point series (worst element only) often coincide: several targets with the same
    wrong answer. Spread coinciding markers sideways so that each target's shows."""
    groups: dict[tuple[float, float], list[int]] = {}
    for i, (_, s) in enumerate(series):
        if s["source"] != "worst":
            continue
        for x, y in s["points"]:
            if y is not None:
                key = (x, round(math.log10(y), 2) if y > 0 and math.isfinite(y) else y)
                groups.setdefault(key, []).append(i)
    out = {}
    for (x, _), members in groups.items():
        n = len(members)
        if n > 1:
            width = min(0.5, 0.06 * (n - 1))
            for k, i in enumerate(members):
                out[(i, x)] = -width / 2 + width * k / (n - 1)
    return out


def _fmt_pow(e: int) -> str:
    return {0: "1", 1: "10", -1: "0.1"}.get(e, f"1e{e}")


def error_plot(records: list[Record], labels: dict | None = None, width: int = 760) -> Markup:
    """An SVG plot of every record that has numbers (the page lists the ones without: rejected,
    crash...); empty when none has."""
    labels = labels or {}
    series, missing = [], []
    for rec in records:
        s = series_of(rec)
        if s is None:
            missing.append(rec)
        else:
            series.append((rec, s))
    if not series:
        return Markup("")
    pts = [y for _, s in series for _, y in s["points"] if y is not None]
    finite = [y for y in pts if math.isfinite(y) and y > 0]
    lo = math.floor(math.log10(min(finite + [1.0]))) if finite else -3
    hi = math.ceil(math.log10(max(finite + [1.0]))) if finite else 1
    lo, hi = min(lo, -1), max(hi, 1)
    if any(y == 0 for y in pts):
        lo = min(lo, max(math.floor(math.log10(min(finite))) - 1 if finite else -4, -15))
    has_inf = any(not math.isfinite(y) for y in pts)
    steps = [x for _, s in series for x, _ in s["points"]]
    xmin, xmax = min(steps), max(steps)
    if xmin == xmax:
        xmin, xmax = xmin - 1, xmax + 1
    pad = max(0.35, 0.02 * (xmax - xmin))
    xmin, xmax = xmin - pad, xmax + pad
    offsets = _spread(series)
    left, right, top, plot_h = 64, 24, 18, 220
    plot_w = width - left - right
    legend_h = 20 * len(series) + 4
    height = top + plot_h + 42 + legend_h

    def X(x):
        return left + (x - xmin) / (xmax - xmin) * plot_w

    def Y(y):
        if y is None:
            return None
        if not math.isfinite(y):
            return top - 6
        e = math.log10(max(y, 10.0 ** lo))
        return top + (hi - e) / (hi - lo) * plot_h

    out = [(f'<svg class="plot" xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
            f'viewBox="0 0 {width} {height}" role="img" aria-label="error against time step per target">')]
    # the region above the tolerance
    out.append(f'<rect class="over" x="{left}" y="{top}" width="{plot_w}" height="{Y(1.0) - top:.1f}"/>')
    # grid and y ticks: every power of ten, labelled at most about 8 of them
    every = max(1, math.ceil((hi - lo) / 8))
    for e in range(lo, hi + 1):
        y = top + (hi - e) / (hi - lo) * plot_h
        out.append(f'<line class="grid" x1="{left}" x2="{left + plot_w}" y1="{y:.1f}" y2="{y:.1f}"/>')
        if (e - lo) % every == 0 or e == 0:
            out.append(f'<text class="tick" x="{left - 6}" y="{y + 4:.1f}" text-anchor="end">{_fmt_pow(e)}</text>')
    nx = xmax - xmin
    xstep = max(1, math.ceil(nx / 12))
    for x in range(math.ceil(xmin), math.floor(xmax) + 1):
        if x < 0 or (x - max(0, math.ceil(xmin))) % xstep:
            continue
        out.append(f'<line class="xgrid" x1="{X(x):.1f}" x2="{X(x):.1f}" y1="{top}" y2="{top + plot_h}"/>')
        out.append(f'<text class="tick" x="{X(x):.1f}" y="{top + plot_h + 16}" text-anchor="middle">{x}</text>')
    out.append(f'<rect class="frame" x="{left}" y="{top}" width="{plot_w}" height="{plot_h}"/>')
    # the tolerance
    y1 = Y(1.0)
    out.append(f'<line class="tol" x1="{left}" x2="{left + plot_w}" y1="{y1:.1f}" y2="{y1:.1f}"/>')
    out.append(f'<text class="tol-label" x="{left + plot_w - 4}" y="{y1 - 5:.1f}" text-anchor="end">'
               f'tolerance (error = allowed)</text>')
    out.append(f'<text class="axis" x="{left + plot_w / 2:.1f}" y="{top + plot_h + 34}" text-anchor="middle">'
               f'time step</text>')
    out.append(f'<text class="axis" transform="translate(14 {top + plot_h / 2:.1f}) rotate(-90)" '
               f'text-anchor="middle">error / allowed</text>')
    if has_inf:
        out.append(f'<text class="tick" x="{left - 6}" y="{top - 2}" text-anchor="end">∞</text>')
    # the series
    for i, (rec, s) in enumerate(series):
        colour = PALETTE[i % len(PALETTE)]
        dash = ' stroke-dasharray="6 3"' if i >= len(PALETTE) else ""
        target = rec.target
        out.append(f'<g class="series" data-target="{escape(target)}" data-source="{s["source"]}">')
        out.append(f"<title>{escape(labels.get(target, target))}</title>")
        d, pen = [], False
        for x, y in s["points"]:
            if y is None:
                pen = False
                continue
            d.append(f'{"L" if pen else "M"}{X(x):.1f} {Y(y):.1f}')
            pen = True
        out.append(f'<path class="line" d="{" ".join(d)}" stroke="{colour}"{dash}/>')
        for x, y in s["points"]:
            if y is None:
                continue
            cls = "pt over-tol" if y > 1 else "pt"
            out.append(f'<circle class="{cls}" cx="{X(x + offsets.get((i, x), 0.0)):.1f}" cy="{Y(y):.1f}" '
                       f'r="{4 if s["source"] == "worst" else 3}" '
                       f'fill="{colour}"><title>{escape(target)}: step {x}, error/allowed {y:.3g}</title></circle>')
        out.append("</g>")
    # the legend
    ly = top + plot_h + 52
    for i, (rec, s) in enumerate(series):
        colour = PALETTE[i % len(PALETTE)]
        dash = ' stroke-dasharray="6 3"' if i >= len(PALETTE) else ""
        worst = max((y for _, y in s["points"] if y is not None), default=None)
        note = "" if s["source"] == "error_by_step" else (
            " (worst element only)" if s.get("step_known", True) else " (worst element; time step not stated)")
        text = f'{labels.get(rec.target, rec.target)} — {rec.verdict}, worst {worst:.3g}×{note}'
        out.append(f'<g class="legend-item"><line x1="{left}" x2="{left + 22}" y1="{ly - 4}" y2="{ly - 4}" '
                   f'stroke="{colour}" stroke-width="2.5"{dash}/><circle cx="{left + 11}" cy="{ly - 4}" r="3" '
                   f'fill="{colour}"/><text class="legend" x="{left + 30}" y="{ly}">{escape(text)}</text></g>')
        ly += 20
    out.append("</svg>")
    return Markup("".join(out))
