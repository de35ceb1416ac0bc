"""A page's layout as a real browser draws it: headless Chromium (Debian's ``chromium``, which
scripts/setup.sh installs) loads a copy of the page with a script that, once the page has loaded,
writes the viewport's width and every table's and image's box into the DOM; ``--dump-dom`` prints
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
  const box = e => { const r = e.getBoundingClientRect();
    return {tag: e.tagName.toLowerCase(), left: r.left, right: r.right, width: r.width,
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
    """{viewport, page (the document's scroll width), boxes: [{tag, left, right, width, name}]} of the
    HTML file ``page`` in a ``width`` px wide window, measured after the page's load event."""
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
    """Each table or image that reaches past the viewport, with its width and right edge."""
    limit = measured["viewport"]
    return [f"{b['tag']} {b['name']!r}: {b['width']:.0f} px wide, right edge at {b['right']:.0f} px > {limit} px"
            for b in measured["boxes"] if b["right"] > limit + 0.5 or b["left"] < -0.5]
