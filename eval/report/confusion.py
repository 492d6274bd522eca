"""The confusion matrix as an HTML table: counts readable on every cell colour.

Each cell is shaded by its count on a light-to-dark blue ramp, and its count is written in
whichever of black or white contrasts more with that shade (WCAG 2 contrast ratio), so
a count on the darkest cell is as readable as on the lightest; the Chromium test checks each
cell's computed colours. Text, not a picture: the counts can be selected and searched. Column
names are set upright (report.css), so every class and "(no submission)" fit a 1,400 px page;
the Chromium test checks that too.
"""

from __future__ import annotations

from html import escape
from itertools import pairwise
from typing import Any

# light to dark blue (the stops of matplotlib's "Blues", sampled): share of the largest count
RAMP: tuple[tuple[float, tuple[int, int, int]], ...] = (
    (0.0, (247, 251, 255)), (0.25, (198, 219, 239)), (0.5, (107, 174, 214)),
    (0.75, (33, 113, 181)), (1.0, (8, 48, 107)),
)  # fmt: skip
DARK_TEXT, LIGHT_TEXT = (0, 0, 0), (255, 255, 255)

Rgb = tuple[int, int, int]


def shade(share: float) -> Rgb:
    """The ramp's colour at `share` in [0, 1], linearly between its stops."""
    share = min(max(share, 0.0), 1.0)
    for (low, a), (high, b) in pairwise(RAMP):
        if share <= high:
            t = (share - low) / (high - low)
            return (
                round(a[0] + t * (b[0] - a[0])),
                round(a[1] + t * (b[1] - a[1])),
                round(a[2] + t * (b[2] - a[2])),
            )
    return RAMP[-1][1]


def luminance(rgb: Rgb) -> float:
    """WCAG 2 relative luminance."""

    def channel(value: int) -> float:
        c = value / 255
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4

    r, g, b = (channel(v) for v in rgb)
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast(first: Rgb, second: Rgb) -> float:
    light, dark = sorted((luminance(first), luminance(second)), reverse=True)
    return (light + 0.05) / (dark + 0.05)


def text_colour(background: Rgb) -> Rgb:
    dark, light = contrast(DARK_TEXT, background), contrast(LIGHT_TEXT, background)
    return DARK_TEXT if dark >= light else LIGHT_TEXT


def _css(rgb: Rgb) -> str:
    return f"rgb({rgb[0]}, {rgb[1]}, {rgb[2]})"


def confusion_table(run: dict[str, Any]) -> str:
    """One run's matrix: rows the true root cause, columns the reported one."""
    table = run["confusion"]
    rows, columns, matrix = table["rows"], table["columns"], table["matrix"]
    top = max((count for row in matrix for count in row), default=0) or 1
    head = "".join(f"<th class='col'><span>{escape(str(c))}</span></th>" for c in columns)
    body = []
    for name, counts in zip(rows, matrix, strict=True):
        cells = []
        for count in counts:
            background = shade(count / top)
            style = f"background: {_css(background)}; color: {_css(text_colour(background))}"
            text = str(count) if count else ""
            cells.append(f"<td class='count' data-count='{count}' style='{style}'>{text}</td>")
        body.append(f"<tr><th>{escape(str(name))}</th>{''.join(cells)}</tr>")
    return (
        f"<h3>{escape(str(run['name']))}: true (rows) vs reported root cause (columns)</h3>"
        f"<table class='confusion'><tr><th>true \\ reported</th>{head}</tr>{''.join(body)}</table>"
    )
