"""Server-rendered SVG charts for the operator console: no JavaScript, no CDN.

Each function returns an inline ``<svg>`` (escaped labels) sized to its data, with a ``<title>``
on every mark so hovering shows the exact figure.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString, mark_safe

# Mid-tone colours: each stands out from the admin's light (#fff) and dark (#121212) page
# backgrounds by at least 3:1, WCAG's contrast for graphical objects (relative luminance
# between 0.12 and 0.30; the admin's own dark blue, #417690, sank into the dark theme, and the
# earlier light blue, amber and green were 2.2-2.8:1 on white, the dark red 2.97:1 on #121212).
PALETTE = ("#3d8fd1", "#1f8a7d", "#b8740c", "#4f8f1a", "#d9534f", "#9b7fd4")
# Series that name a state keep the colour the state means, whatever their order.
STATE_COLOURS = {
    "done": "#2e7d32",
    "succeeded": "#2e7d32",
    "failed": "#c94a3f",
    "running": "#3d8fd1",
    "pending": "#808080",
    "queued": "#808080",
    "skipped": "#b8740c",
}
WIDTH, HEIGHT, PAD_LEFT, PAD_BOTTOM, PAD_TOP = 680, 216, 72, 36, 28


def colour(n: int, name: str = "") -> str:
    return STATE_COLOURS.get(name, PALETTE[n % len(PALETTE)])


GRID_STEPS = 4  # horizontal gridlines (with their values) between 0 and the maximum


def _grid(maximum: float, unit: str) -> SafeString:
    """Gridlines across the plot at quarters of the maximum, each labelled on the axis."""
    plot = HEIGHT - PAD_BOTTOM - PAD_TOP
    rows = []
    for step in range(1, GRID_STEPS):
        y = HEIGHT - PAD_BOTTOM - plot * step / GRID_STEPS
        rows.append(
            format_html(
                '<line class="grid" x1="{}" y1="{}" x2="{}" y2="{}" stroke="currentColor" '
                'stroke-opacity="0.15"/><text x="{}" y="{}" font-size="10" text-anchor="end" '
                'fill="currentColor">{}{}</text>',
                PAD_LEFT,
                _f(y),
                WIDTH,
                _f(y),
                PAD_LEFT - 4,
                _f(y + 3),
                _grid_number(maximum * step / GRID_STEPS),
                unit,
            )
        )
    return SafeString("".join(rows))  # each row built by format_html above


def _frame(label: str, body: SafeString, maximum: float, unit: str) -> SafeString:
    axis = format_html(
        '<text x="{}" y="{}" font-size="10" text-anchor="end" fill="currentColor">{}{}</text>'
        '<text x="{}" y="{}" font-size="10" text-anchor="end" fill="currentColor">0</text>'
        '<line x1="{}" y1="{}" x2="{}" y2="{}" stroke="#999"/>'
        '<line x1="{}" y1="{}" x2="{}" y2="{}" stroke="#999"/>{}',
        PAD_LEFT - 4,
        PAD_TOP + 8,
        _number(maximum),
        unit,
        PAD_LEFT - 4,
        HEIGHT - PAD_BOTTOM,
        PAD_LEFT,
        HEIGHT - PAD_BOTTOM,
        WIDTH,
        HEIGHT - PAD_BOTTOM,
        PAD_LEFT,
        PAD_TOP,
        PAD_LEFT,
        HEIGHT - PAD_BOTTOM,
        _grid(maximum, unit) if maximum > 0 else "",
    )
    title = format_html(
        '<text x="{}" y="14" font-size="12" font-weight="bold" fill="currentColor">{}</text>',
        PAD_LEFT,
        label,
    )
    return format_html(
        '<svg class="atlas-chart" role="img" aria-label="{}" viewBox="0 0 {} {}" width="{}" '
        'height="{}" style="color: var(--body-fg, #333)" xmlns="http://www.w3.org/2000/svg">'
        "{}{}{}</svg>",
        label,
        WIDTH,
        HEIGHT,
        WIDTH,
        HEIGHT,
        title,
        axis,
        body,
    )


def stacked_bars(
    label: str, categories: Sequence[str], series: Mapping[str, Sequence[float]], unit: str = ""
) -> SafeString:
    """One bar per category, stacked by series (e.g. weeks x memory types), with a legend."""
    totals = [sum(values[i] for values in series.values()) for i in range(len(categories))]
    maximum = max(totals, default=0) or 1
    plot_h = HEIGHT - PAD_BOTTOM - PAD_TOP
    slot = (WIDTH - PAD_LEFT) / max(len(categories), 1)
    marks: list[SafeString] = []
    for i, category in enumerate(categories):
        x, base = PAD_LEFT + i * slot + slot * 0.15, float(HEIGHT - PAD_BOTTOM)
        for n, (name, values) in enumerate(series.items()):
            h = plot_h * values[i] / maximum
            if h > 0:
                marks.append(
                    format_html(
                        '<rect x="{}" y="{}" width="{}" height="{}" fill="{}">'
                        "<title>{}: {} {}{}</title></rect>",
                        _f(x),
                        _f(base - h),
                        _f(slot * 0.7),
                        _f(h),
                        colour(n, name),
                        category,
                        _number(values[i]),
                        name,
                        unit,
                    )
                )
                base -= h
        marks.append(_tick(x + slot * 0.35, category, every=max(1, len(categories) // 8), i=i))
    marks.append(_legend(list(series)))
    return _frame(label, mark_safe("".join(marks)), maximum, unit)  # noqa: S308 - escaped parts


def lines(
    label: str, categories: Sequence[str], series: Mapping[str, Sequence[float | None]], unit: str
) -> SafeString:
    """One polyline per series over the categories, drawn over the gridlines. None leaves no
    point (no data that day) and the line joins the days on either side; a series with a single
    point is drawn as a short level line across its day, so even one day reads as a line."""
    values = [v for vs in series.values() for v in vs if v is not None]
    maximum = max(values, default=0) or 1
    plot_h = HEIGHT - PAD_BOTTOM - PAD_TOP
    slot = (WIDTH - PAD_LEFT) / max(len(categories), 1)
    marks: list[SafeString] = []
    for n, (name, points) in enumerate(series.items()):
        xy = [
            (PAD_LEFT + (i + 0.5) * slot, HEIGHT - PAD_BOTTOM - plot_h * v / maximum, v, i)
            for i, v in enumerate(points)
            if v is not None
        ]
        if len(xy) == 1:  # one day of data: a short level line across its slot, not a dot
            x, y = xy[0][0], xy[0][1]
            xy_line = [(x - slot * 0.4, y), (x + slot * 0.4, y)]
        else:
            xy_line = [(x, y) for x, y, _, _ in xy]
        if xy:
            path = " ".join(f"{x:.1f},{y:.1f}" for x, y in xy_line)
            marks.append(
                format_html(
                    '<polyline points="{}" fill="none" stroke="{}" stroke-width="2"/>',
                    path,
                    colour(n, name),
                )
            )
        marks += [
            format_html(
                '<circle cx="{}" cy="{}" r="3" fill="{}"><title>{}: {} {}{}</title></circle>',
                _f(x),
                _f(y),
                colour(n, name),
                categories[i],
                name,
                _number(v),
                unit,
            )
            for x, y, v, i in xy
        ]
    for i, category in enumerate(categories):
        marks.append(
            _tick(PAD_LEFT + (i + 0.5) * slot, category, every=max(1, len(categories) // 8), i=i)
        )
    marks.append(_legend(list(series)))
    return _frame(label, mark_safe("".join(marks)), maximum, unit)  # noqa: S308 - escaped parts


def _tick(x: float, text: str, *, every: int, i: int) -> SafeString:
    if i % every:
        return SafeString("")
    return format_html(
        '<text x="{}" y="{}" font-size="10" text-anchor="middle" fill="currentColor">{}</text>',
        _f(x),
        HEIGHT - PAD_BOTTOM + 14,
        text,
    )


def _legend(names: list[str]) -> SafeString:
    return format_html_join(
        "",
        '<rect x="{}" y="{}" width="10" height="10" fill="{}"/>'
        '<text x="{}" y="{}" font-size="11" fill="currentColor">{}</text>',
        (
            (
                PAD_LEFT + 110 * n,
                HEIGHT - 12,
                colour(n, name),
                PAD_LEFT + 110 * n + 14,
                HEIGHT - 3,
                name,
            )
            for n, name in enumerate(names)
        ),
    )


def _f(value: float) -> str:
    return f"{value:.1f}"


def _grid_number(value: float) -> str:
    """A gridline's value, exact to two decimals (a quarter of 1 is 0.25, not 0.2)."""
    return f"{value:,.2f}".rstrip("0").rstrip(".")


def _number(value: float) -> str:
    return f"{value:,.0f}" if float(value).is_integer() else f"{value:,.1f}"
