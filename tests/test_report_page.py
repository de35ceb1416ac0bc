"""The report's HTML page fits a 1,280 px screen: measured in headless Chromium (tests/browser.py),
every table and every figure lies within the window, so no part of a table is hidden until the
reader scrolls sideways. Skipped, saying why, where Chromium is not installed."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import markdown  # noqa: E402

from browser import VIEWPORT, layout, too_wide  # noqa: E402
from mr2.results.html import report_html  # noqa: E402
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


def wide_figure(folder, inches=14.0):
    fig = plt.figure(figsize=(inches, 2.0))
    fig.savefig(folder / "wide.png", dpi=FIGURE_DPI)
    plt.close(fig)


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


def test_a_wide_report_fits_the_screen(tmp_path):
    """The same tables and figure through report_html: every table and the figure within 1,280 px."""
    wide_figure(tmp_path)
    page = tmp_path / "report_page.html"
    page.write_text(report_html(wide_report(), tmp_path), encoding="utf-8")
    measured = layout(page)
    assert measured["viewport"] == VIEWPORT and len(measured["boxes"]) == 3
    assert too_wide(measured) == []
    assert measured["page"] <= VIEWPORT


def test_the_smoke_reports_page_fits_the_screen(smoke_results):
    """The smoke run's report_page.html: every table (the verdict, the results, the theory table) and
    every figure within 1,280 px, and nothing on the page reaches past it."""
    page = smoke_results / "report_page.html"
    text = page.read_text(encoding="utf-8")
    measured = layout(page)
    tags = [b["tag"] for b in measured["boxes"]]
    assert tags.count("table") == text.count("<table") >= 3 and tags.count("img") == text.count("<img") >= 5
    assert measured["viewport"] == VIEWPORT
    assert too_wide(measured) == []
    assert measured["page"] <= VIEWPORT
