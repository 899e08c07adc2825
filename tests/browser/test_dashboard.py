"""A tenant's dashboard in Chromium at 1400x900, light and dark (issue 34, item 8): every chart
spans its panel, has axes and gridlines, and is legible in both themes, checked on the colours
the browser computes: every series (bars, lines, points, legend keys) stands out from the
panel's background by at least 3:1 (WCAG's contrast for graphical objects) and the labels by
at least 4.5:1 (text). Screenshots under var/test-artifacts/browser/."""

from __future__ import annotations

from typing import Any

import pytest

from tests.browser.test_first_hour import themed

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
GRAPHICS, TEXT = 3.0, 4.5  # WCAG 2.1: 1.4.11 non-text contrast, 1.4.3 text contrast

# For each chart: its width against its panel, its gridlines and axes, and the contrast of
# each mark and of its labels against the nearest opaque background (computed colours).
MEASURE = """() => {
  const rgb = (c) => (c.match(/[\\d.]+/g) || []).map(Number);
  const lum = ([r, g, b]) => {
    const lin = (v) => {
      v /= 255;
      return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4;
    };
    return 0.2126 * lin(r) + 0.7152 * lin(g) + 0.0722 * lin(b);
  };
  const ratio = (a, b) => {
    const [x, y] = [lum(a), lum(b)].sort((p, q) => q - p);
    return (x + 0.05) / (y + 0.05);
  };
  const background = (el) => {
    for (let box = el; box; box = box.parentElement) {
      const c = rgb(getComputedStyle(box).backgroundColor);
      if (c.length === 3 || (c.length === 4 && c[3] > 0.9)) return c.slice(0, 3);
    }
    return [255, 255, 255];
  };
  return [...document.querySelectorAll('svg.atlas-chart')].map((svg) => {
    const panel = svg.closest('.atlas-panel');
    const bg = background(svg);
    const marks = [];
    for (const el of svg.querySelectorAll('rect, polyline, circle')) {
      const style = getComputedStyle(el);
      const paint = el.tagName === 'polyline' ? style.stroke : style.fill;
      if (!paint || paint === 'none') continue;
      marks.push({paint, ratio: ratio(rgb(paint), bg)});
    }
    const label = svg.querySelector('text');
    return {
      panel: panel ? panel.id : '',
      width: svg.getBoundingClientRect().width,
      room: panel ? panel.getBoundingClientRect().width : 0,
      grid: svg.querySelectorAll('line.grid').length,
      axes: svg.querySelectorAll('line:not(.grid)').length,
      marks,
      text: label ? ratio(rgb(getComputedStyle(label).fill), bg) : 0,
      background: bg,
    };
  });
}"""


@pytest.fixture(autouse=True)
def embedded(settings: Any, tmp_path: Any, no_cluster: None) -> None:
    settings.ATLAS_MEMORY_BACKEND = "embedded"
    settings.ATLAS_EMBEDDED_PATH = str(tmp_path / "memory.sqlite3")


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_every_chart_spans_its_panel_with_axes_and_is_legible_in_the_theme(
    busy_week, acme, acme_admin, signed_in, shot, theme
):
    page = themed(signed_in(acme_admin), theme)
    page.goto(f"/admin/tenants/tenant/{acme.pk}/dashboard/")
    page.wait_for_selector("svg.atlas-chart")
    charts = page.evaluate(MEASURE)
    shot(page, f"dashboard-{theme}")

    panels = {chart["panel"] for chart in charts}
    assert {"panel-memories", "panel-recall", "panel-consolidation"} <= panels, panels
    for chart in charts:
        where = f"{chart['panel']} ({theme}, background {chart['background']})"
        assert chart["width"] > 0.9 * chart["room"] - 20, where  # responsive, not ~380 px
        assert chart["grid"] >= 3 and chart["axes"] >= 2, where
        assert chart["marks"], where
        faint = [m for m in chart["marks"] if m["ratio"] < GRAPHICS]
        assert not faint, f"{where}: series below {GRAPHICS}:1: {faint}"
        assert chart["text"] >= TEXT, f"{where}: labels at {chart['text']:.2f}:1"
