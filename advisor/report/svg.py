"""Inline SVG plots for the HTML report: the throughput heatmap and value distributions.

Plain strings, no plotting library and nothing fetched: the report must open from a file on a
machine without network. Every value drawn from a host is escaped.
"""

from __future__ import annotations

from html import escape as _html_escape
from typing import Any

from advisor.mesh.results import GREEN_RATIO, YELLOW_RATIO, path_ratio
from advisor.report.safe_text import xml_text

FAILED_FILL = "#8c8c8c"
UNJUDGED_FILL = "#c9d7e8"


def escape(v: object) -> str:
    return _html_escape(xml_text(v))


def ratio_colour(ratio: float) -> str:
    """Red (0) -> amber (the yellow threshold) -> green (the green threshold and above)."""
    def mix(a: tuple[int, int, int], b: tuple[int, int, int], t: float) -> str:
        return "#" + "".join(f"{round(x + (y - x) * t):02x}" for x, y in zip(a, b))

    red, amber, green = (0xc6, 0x28, 0x28), (0xf2, 0xa9, 0x00), (0x2e, 0x9d, 0x4f)
    if ratio >= GREEN_RATIO:
        return mix(green, green, 0)
    if ratio >= YELLOW_RATIO:
        return mix(amber, green, (ratio - YELLOW_RATIO) / (GREEN_RATIO - YELLOW_RATIO))
    return mix(red, amber, max(ratio, 0) / YELLOW_RATIO)


def _mbps(v: Any) -> str:
    return "-" if not isinstance(v, (int, float)) else f"{v / 1e6:,.0f} Mb/s"


def heatmap(paths: list[dict[str, Any]], cell: int = 34) -> str:
    """Sources as rows, destinations as columns; one ``rect.cell`` per path in ``paths``."""
    hosts = sorted({str(p.get("src")) for p in paths} | {str(p.get("dst")) for p in paths})
    index = {h: i for i, h in enumerate(hosts)}
    label_w = max(60, 7 * max((len(h) for h in hosts), default=4) + 12)
    top = label_w
    size = len(hosts) * cell
    width, height = label_w + size + 10, top + size + 10
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" class="heatmap" role="img" width="{width}" height="{height}" '
             f'viewBox="0 0 {width} {height}" aria-label="throughput measured over expected, source rows, destination columns">']
    for h, i in index.items():
        y = top + i * cell + cell / 2 + 4
        x = label_w + i * cell + cell / 2
        parts.append(f'<text class="row-label" x="{label_w - 6}" y="{y:.0f}" text-anchor="end">{escape(h)}</text>')
        parts.append(f'<text class="col-label" transform="translate({x + 4:.0f},{top - 6}) rotate(-60)">{escape(h)}</text>')
        parts.append(f'<rect class="self" x="{label_w + i * cell}" y="{top + i * cell}" width="{cell - 2}" '
                     f'height="{cell - 2}" fill="#eeeeee"/>')
    for p in paths:
        src, dst = str(p.get("src")), str(p.get("dst"))
        r = path_ratio(p)
        if p.get("status") != "ok":
            fill, text, tip = FAILED_FILL, "×", f"{src} → {dst}: test failed: {p.get('error') or 'no result'}"
        elif r is None:
            fill, text, tip = UNJUDGED_FILL, "?", f"{src} → {dst}: {_mbps(p.get('measured_bps'))}, no expected rate"
        else:
            fill, text = ratio_colour(r), f"{r * 100:.0f}"
            tip = (f"{src} → {dst}: {_mbps(p.get('measured_bps'))} of {_mbps(p.get('expected_bps'))} expected "
                   f"({r:.0%}); retransmits {p.get('retransmits', '-')}; RTT {p.get('rtt_us', '-')} µs")
        x, y = label_w + index[dst] * cell, top + index[src] * cell
        ratio_attr = "" if r is None else f' data-ratio="{r:.4f}"'
        parts.append(
            f'<g class="path"><rect class="cell" x="{x}" y="{y}" width="{cell - 2}" height="{cell - 2}" fill="{fill}" '
            f'data-src="{escape(src)}" data-dst="{escape(dst)}" data-status="{escape(str(p.get("status")))}"{ratio_attr} '
            f'data-tip="{escape(tip)}"><title>{escape(tip)}</title></rect>'
            f'<text class="cell-text" x="{x + (cell - 2) / 2:.0f}" y="{y + cell / 2 + 3:.0f}" text-anchor="middle">'
            f'{escape(text)}</text></g>')
    parts.append("</svg>")
    return "".join(parts)


def heatmap_legend() -> str:
    stops = "".join(f'<stop offset="{t:.2f}" stop-color="{ratio_colour(t)}"/>' for t in (0, 0.25, 0.5, 0.7, 0.9, 1.0))
    return ('<svg xmlns="http://www.w3.org/2000/svg" class="legend" width="380" height="34" viewBox="0 0 380 34">'
            f'<defs><linearGradient id="ratio-scale">{stops}</linearGradient></defs>'
            '<rect x="0" y="0" width="220" height="12" fill="url(#ratio-scale)"/>'
            '<text x="0" y="28">0%</text><text x="99" y="28">50%</text><text x="190" y="28">≥90%</text>'
            f'<rect x="240" y="0" width="12" height="12" fill="{FAILED_FILL}"/><text x="256" y="11">failed</text>'
            f'<rect x="240" y="18" width="12" height="12" fill="{UNJUDGED_FILL}"/><text x="256" y="29">no expected rate</text>'
            '</svg>')


def distribution(values: dict[str, float], *, lo: float = 0.0, hi: float = 1.0, bins: int = 10,
                 label: str = "efficiency", percent: bool = True) -> str:
    """A histogram of ``values`` (name -> value) in ``bins`` equal bins over [lo, hi]; names on hover."""
    w, h, pad = 420, 170, 30
    bw = (w - 2 * pad) / bins
    buckets: list[list[str]] = [[] for _ in range(bins)]
    for name, v in values.items():
        i = min(bins - 1, max(0, int((v - lo) / (hi - lo) * bins)))
        buckets[i].append(f"{name} {v:.0%}" if percent else f"{name} {v:g}")
    top = max((len(b) for b in buckets), default=1) or 1
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" class="distribution" width="{w}" height="{h}" '
             f'viewBox="0 0 {w} {h}" role="img" aria-label="{escape(label)} distribution">',
             f'<line x1="{pad}" y1="{h - pad}" x2="{w - pad}" y2="{h - pad}" stroke="#555"/>']
    for i, names in enumerate(buckets):
        b_lo = lo + (hi - lo) * i / bins
        x = pad + i * bw
        if names:
            bh = (h - 2 * pad) * len(names) / top
            tip = f"{b_lo:.0%}–{b_lo + (hi - lo) / bins:.0%}: {len(names)} — " + ", ".join(names) if percent else ", ".join(names)
            parts.append(f'<rect class="bar" x="{x + 1:.1f}" y="{h - pad - bh:.1f}" width="{bw - 2:.1f}" height="{bh:.1f}" '
                         f'fill="#3a6ea5"><title>{escape(tip)}</title></rect>'
                         f'<text x="{x + bw / 2:.1f}" y="{h - pad - bh - 3:.1f}" text-anchor="middle">{len(names)}</text>')
        if i % 2 == 0:
            parts.append(f'<text x="{x:.1f}" y="{h - pad + 14}" text-anchor="middle">'
                         f'{f"{b_lo:.0%}" if percent else f"{b_lo:g}"}</text>')
    parts.append(f'<text x="{w - pad:.1f}" y="{h - pad + 14}" text-anchor="middle">{f"{hi:.0%}" if percent else f"{hi:g}"}</text>')
    parts.append(f'<text x="{w / 2:.0f}" y="{h - 2}" text-anchor="middle" class="axis-label">{escape(label)}</text></svg>')
    return "".join(parts)


CURVE_COLOURS = ("#3a6ea5", "#c62828", "#2e9d4f", "#f2a900", "#6a3d9a", "#555555")


def line_plot(series: dict[str, list[tuple[float, float]]], *, title: str, x_label: str, log_x: bool = True,
              x_format=lambda v: f"{v:g}", lines_only: tuple[str, ...] = ()) -> str:
    """Lines (name -> [(x, y)], y in [0, 1]) on a log or linear x axis; points show their values on hover.
    Series named in ``lines_only`` (dense curves) are drawn as a line alone and put no tick on the x axis."""
    import math

    w, h, left, right, top, bottom = 460, 250, 40, 110, 22, 38
    # NaN or infinity is no point on a plot (it would be drawn at cx="nan")
    series = {name: [(x, y) for x, y in pts if math.isfinite(x) and math.isfinite(y)] for name, pts in series.items()}
    xs = [x for pts in series.values() for x, _ in pts if x > 0 or not log_x]
    if not xs:
        return ""
    fx = (lambda v: math.log10(v)) if log_x else (lambda v: v)
    lo, hi = fx(min(xs)), fx(max(xs))
    span = (hi - lo) or 1.0

    def px(x: float) -> float:
        return left + (fx(x) - lo) / span * (w - left - right)

    def py(y: float) -> float:
        return top + (1 - max(0.0, min(1.0, y))) * (h - top - bottom)

    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" class="curves" width="{w}" height="{h}" viewBox="0 0 {w} {h}" '
             f'role="img" aria-label="{escape(title)}"><text x="{left}" y="14">{escape(title)}</text>']
    for t in (0, 0.25, 0.5, 0.75, 1.0):
        parts.append(f'<line x1="{left}" x2="{w - right}" y1="{py(t):.1f}" y2="{py(t):.1f}" stroke="#e5e5e5"/>'
                     f'<text x="{left - 4}" y="{py(t) + 4:.1f}" text-anchor="end">{t:.0%}</text>')
    ticks = sorted({x for name, pts in series.items() if name not in lines_only for x, _ in pts if x > 0 or not log_x})
    for x in ticks[:: max(1, len(ticks) // 8)]:
        parts.append(f'<text x="{px(x):.1f}" y="{h - bottom + 14}" text-anchor="middle">{escape(x_format(x))}</text>')
    parts.append(f'<text x="{(left + w - right) / 2:.0f}" y="{h - 4}" text-anchor="middle">{escape(x_label)}</text>')
    for i, (name, pts) in enumerate(series.items()):
        colour = CURVE_COLOURS[i % len(CURVE_COLOURS)]
        pts = sorted(p for p in pts if p[0] > 0 or not log_x)
        path = " ".join(f"{'M' if j == 0 else 'L'}{px(x):.1f},{py(y):.1f}" for j, (x, y) in enumerate(pts))
        parts.append(f'<path class="curve" d="{path}" fill="none" stroke="{colour}" stroke-width="1.6"/>')
        if name not in lines_only:
            parts.extend(f'<circle class="point" cx="{px(x):.1f}" cy="{py(y):.1f}" r="3" fill="{colour}">'
                         f'<title>{escape(name)}: {escape(x_format(x))} → {y:.1%}</title></circle>' for x, y in pts)
        parts.append(f'<rect x="{w - right + 10}" y="{top + 16 * i}" width="10" height="10" fill="{colour}"/>'
                     f'<text x="{w - right + 24}" y="{top + 9 + 16 * i}">{escape(name)}</text>')
    parts.append("</svg>")
    return "".join(parts)
