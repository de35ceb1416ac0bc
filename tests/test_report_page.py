"""The report's HTML page fits a 1,280 px screen and shows its figures legibly: measured in headless
Chromium (tests/browser.py), every table lies within the window, so no part of a table is hidden until
the reader scrolls sideways, and every figure is shown at its pixel size, or shrunk to the window but
never below ``MIN_FIGURE_SCALE`` (0.85) of it: its 7 pt text, 14.6 px in the PNG, stays at least
12.4 px on the page. A figure still wider than the window scrolls in its own box, never the page.
Skipped, saying why, where Chromium is not installed."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import markdown  # noqa: E402
import pytest  # noqa: E402

from browser import VIEWPORT, figure_scales, layout, too_wide  # noqa: E402
from mr2.results.html import MIN_FIGURE_SCALE, report_html  # noqa: E402
from mr2.results.plotting import FIGURE_DPI  # noqa: E402

METRICS = ["Top-1", "All", "Easy", "Medium", "Hard", "Worst class"]


def wide_report() -> str:
    """A results table as mr2.results.tables writes it (16 columns: a mean and a "Δ" column per metric,
    each Δ an interval), a verdict table of long cells, and a figure 14 inches wide."""
    header = ["Dataset", "Method", "Variant", "Seeds"] + [h for m in METRICS for h in (m, f"Δ {m}")]
    rows = ["| fashion_mnist_longtail | mr2_uniform | c_bar=0.5 | 16 | "
            + " | ".join("47.8 ± 5.9 | +1.7 [-124.3, +127.8]" for _ in METRICS) + " |"] * 3
    verdict = ["| Setting | Hard classes up | Easy classes not down | Overall up | Each ablation below full MR² "
               "| MR² above the baselines (hard up, easy not down) |", "|---|---|---|---|---|---|",
               "| fashion_mnist, small_cnn, 100/class × 3 ep | " + " | ".join(
                   ["**underpowered** +8.0 [-14.2, +30.2]"] * 3 + ["**underpowered** mr2_uniform -4.0 [-19.9, +11.9]; "
                                                                   "mr2_no_rep -5.7 [-37.5, +26.0]",
                                                                   "**no clear difference** +0.1 [-0.3, +0.5]"]) + " |"]
    table = ["| " + " | ".join(header) + " |", "|" + "|".join(["---"] * 4 + ["---:"] * 12) + "|", *rows]
    return "\n".join(["# Report", "", *verdict, "", *table, "", "![wide](wide.png)", ""])


def wide_figure(folder, inches=14.0, name="wide"):
    fig = plt.figure(figsize=(inches, 2.0))
    fig.savefig(folder / f"{name}.png", dpi=FIGURE_DPI)
    plt.close(fig)


def legible(measured: dict) -> list[str]:
    """Each figure shown below ``MIN_FIGURE_SCALE`` of its pixel width, above it (no figure is blown up
    past its pixels), or shrunk although its box had room for it at its own size, or scrolled
    sideways although it was not at the least scale: with its scale."""
    wrong = []
    for b in (b for b in measured["boxes"] if b["tag"] == "img"):
        scale, room = b["width"] / b["natural"], b["seen_right"] - b["seen_left"]
        if not MIN_FIGURE_SCALE - 1e-3 <= scale <= 1 + 1e-3:
            wrong.append(f"{b['name']}: shown at {scale:.2f} of its {b['natural']} px")
        elif scale < 1 - 1e-3 and b["width"] < room - 1 and b["width"] > MIN_FIGURE_SCALE * b["natural"] + 1:
            wrong.append(f"{b['name']}: shrunk to {scale:.2f} with room for {room:.0f} px")
        elif b["width"] > room + 1 and scale > MIN_FIGURE_SCALE + 1e-2:
            wrong.append(f"{b['name']}: scrolls at {scale:.2f}, above the least scale")
    return wrong


def test_the_measure_sees_a_table_and_a_figure_wider_than_the_screen(tmp_path):
    """The instrument itself: the same report as Markdown alone, cells on one line (the page's style
    before it fitted the screen), overflows, and the measure names the results table and the figure,
    not the narrow table."""
    wide_figure(tmp_path)
    body = markdown.markdown(wide_report() + "\n| a | b |\n|---|---|\n| 1 | 2 |\n", extensions=["tables"])
    page = tmp_path / "plain.html"
    body = body.replace("wide.png", (tmp_path / "wide.png").as_uri())
    page.write_text("<!DOCTYPE html><html><head><meta charset='utf-8'><style>td,th{white-space:nowrap}</style>"
                    f"</head><body>{body}</body></html>", encoding="utf-8")
    measured = layout(page)
    assert measured["viewport"] == VIEWPORT
    assert len(measured["boxes"]) == 4  # three tables, one figure
    wide = too_wide(measured)
    assert any(line.startswith("table 'Dataset") for line in wide)
    assert any(line.startswith("img 'wide'") for line in wide)
    assert not any("'a\\tb'" in line for line in wide)
    assert measured["page"] > VIEWPORT  # the reader would scroll sideways
    assert figure_scales(measured) == {"wide": 1.0} and legible(measured) == []


def test_the_measure_sees_a_figure_shrunk_below_its_pixels(tmp_path):
    """The instrument itself: figures as the page showed them before, at 96 CSS px per inch of a
    150 dpi PNG (0.64 of its pixels) and shrunk further to a 1,100 px text column, are measured at
    that scale and named, as is a figure blown up past its pixels."""
    wide_figure(tmp_path, inches=9.0, name="shrunk")
    wide_figure(tmp_path, inches=14.0, name="column")
    wide_figure(tmp_path, inches=3.0, name="blown")
    shown = {"shrunk": round(9.0 * 96), "column": round(14.0 * 96), "blown": round(3.0 * FIGURE_DPI * 1.5)}
    images = "".join(f'<p><img alt="{n}" src="{(tmp_path / f"{n}.png").as_uri()}" width="{w}"></p>' for n, w in shown.items())
    page = tmp_path / "before.html"
    page.write_text("<!DOCTYPE html><html><head><meta charset='utf-8'><style>body{max-width:1100px;margin:auto}"
                    f"img{{max-width:100%;height:auto}}</style></head><body>{images}</body></html>", encoding="utf-8")
    measured = layout(page)
    scales = figure_scales(measured)
    assert scales["shrunk"] == pytest.approx(96 / FIGURE_DPI, abs=0.01)
    assert scales["column"] == pytest.approx(1100 / (14.0 * FIGURE_DPI), abs=0.01)
    assert scales["blown"] == pytest.approx(1.5, abs=0.01)
    assert [line.split(":")[0] for line in legible(measured)] == ["shrunk", "column", "blown"]


def test_a_wide_report_fits_the_screen(tmp_path):
    """The same tables and figures through report_html: every table within 1,280 px; a 4-inch figure
    at its pixel size; a 9.5-inch one (1,425 px) shrunk to the window, not below 0.85; a 14-inch one
    (2,100 px) at 0.85, scrolling in its own box; the page itself never scrolls sideways."""
    wide_figure(tmp_path)
    wide_figure(tmp_path, inches=9.5, name="window")
    wide_figure(tmp_path, inches=4.0, name="small")
    page = tmp_path / "report_page.html"
    text = wide_report() + "\n![window](window.png)\n\n![small](small.png)\n"
    page.write_text(report_html(text, tmp_path), encoding="utf-8")
    measured = layout(page)
    assert measured["viewport"] == VIEWPORT and len(measured["boxes"]) == 5
    assert too_wide(measured) == []
    assert measured["page"] <= VIEWPORT
    scales = figure_scales(measured)
    assert scales["small"] == pytest.approx(1.0, abs=1e-3)
    assert MIN_FIGURE_SCALE <= scales["window"] < 1 and scales["wide"] == pytest.approx(MIN_FIGURE_SCALE, abs=1e-3)
    window = next(b for b in measured["boxes"] if b["name"] == "window")
    assert window["right"] <= VIEWPORT and window["left"] >= 0  # whole on the screen, no scrolling
    assert legible(measured) == []


def test_the_smoke_reports_page_fits_the_screen(smoke_results):
    """The smoke run's report_page.html: every table (the verdict, the results, the theory table)
    within 1,280 px, nothing on the page reaching past it, and every figure at its pixel size or shrunk
    to the window, never below 0.85 of it."""
    page = smoke_results / "report_page.html"
    text = page.read_text(encoding="utf-8")
    measured = layout(page)
    tags = [b["tag"] for b in measured["boxes"]]
    assert tags.count("table") == text.count("<table") >= 3 and tags.count("img") == text.count("<img") >= 5
    assert measured["viewport"] == VIEWPORT
    assert too_wide(measured) == []
    assert measured["page"] <= VIEWPORT
    assert legible(measured) == [] and min(figure_scales(measured).values()) >= MIN_FIGURE_SCALE
