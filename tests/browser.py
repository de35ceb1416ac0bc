"""A page's layout as a real browser draws it: headless Chromium (Debian's ``chromium``, which
scripts/setup.sh installs) loads a copy of the page with a script that, once the page has loaded,
writes the viewport's width and every table's and image's box (an image's pixel width, the box it is
seen through) into the DOM; ``--dump-dom`` prints
that DOM. Tests that need it skip, saying why, where no Chromium is installed."""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

#: the screen the report must fit without sideways scrolling
VIEWPORT = 1280
NAMES = ("chromium", "chromium-browser", "google-chrome")
#: root in a container, no display, no network: the flags Chromium needs to run headless there
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync")
MEASURE = """<script>window.addEventListener("load", () => {
  const out = document.createElement("pre");
  out.id = "mr2-layout";
  const scroller = e => { for (let p = e.parentElement; p && p !== document.body; p = p.parentElement) {
    if (["auto", "scroll", "hidden"].includes(getComputedStyle(p).overflowX)) return p; } return null; };
  const box = e => { const r = e.getBoundingClientRect(), s = scroller(e), c = s ? s.getBoundingClientRect() : r;
    return {tag: e.tagName.toLowerCase(), left: r.left, right: r.right, width: r.width,
            natural: e.tagName == "IMG" ? e.naturalWidth : null, seen_left: c.left, seen_right: c.right,
            name: e.tagName == "TABLE" ? e.rows[0].innerText.slice(0, 60) : e.alt}; };
  out.textContent = JSON.stringify({viewport: window.innerWidth, page: document.documentElement.scrollWidth,
                                    boxes: [...document.querySelectorAll("table, img")].map(box)});
  document.body.appendChild(out);
});</script>"""
RESULT = re.compile(r'<pre id="mr2-layout">(.*?)</pre>', re.S)


def chromium() -> str:
    """The Chromium binary, or a skip naming how to install it."""
    found = next((path for path in map(shutil.which, NAMES) if path), None)
    if found is None:
        pytest.skip("no Chromium to measure the page in (apt-get install chromium; scripts/setup.sh installs it)")
    return found


def layout(page: str | Path, width: int = VIEWPORT) -> dict:
    """{viewport, page (the document's scroll width), boxes: [{tag, left, right, width, natural (an
    image's pixel width), seen_left, seen_right, name}]} of the HTML file ``page`` in a ``width`` px wide
    window, measured after the page's load event. ``seen_left``/``seen_right`` are the edges of the box
    the element is seen through: its nearest ancestor that scrolls or clips sideways, else its own."""
    binary = chromium()
    with tempfile.TemporaryDirectory(prefix="mr2-browser-") as tmp:
        copy = Path(tmp) / "page.html"
        text = Path(page).read_text(encoding="utf-8")
        copy.write_text(text.replace("</body>", MEASURE + "</body>") if "</body>" in text else text + MEASURE,
                        encoding="utf-8")
        res = subprocess.run([binary, *FLAGS, f"--user-data-dir={Path(tmp) / 'profile'}",
                              f"--window-size={width},900", "--dump-dom", copy.as_uri()],
                             capture_output=True, text=True, timeout=180)
    found = RESULT.search(res.stdout)
    if found is None:
        raise AssertionError(f"Chromium measured nothing (exit {res.returncode}):\n{res.stderr[-2000:]}")
    return json.loads(html.unescape(found.group(1)))


def too_wide(measured: dict) -> list[str]:
    """Each table that reaches past the viewport, and each image whose box it is seen through does (a
    figure may scroll sideways in a box of its own within the window; ``figure_scales`` says at what
    scale it is shown), with its width and right edge."""
    limit = measured["viewport"]
    edges = lambda b: (b["seen_left"], b["seen_right"]) if b["tag"] == "img" else (b["left"], b["right"])  # noqa: E731
    return [f"{b['tag']} {b['name']!r}: {b['width']:.0f} px wide, right edge at {edges(b)[1]:.0f} px > {limit} px"
            for b in measured["boxes"] if edges(b)[1] > limit + 0.5 or edges(b)[0] < -0.5]


def figure_scales(measured: dict) -> dict[str, float]:
    """name -> each image's shown width over its pixel width (1: one CSS px per pixel of the PNG)."""
    return {b["name"]: b["width"] / b["natural"] for b in measured["boxes"] if b["tag"] == "img" and b["natural"]}
