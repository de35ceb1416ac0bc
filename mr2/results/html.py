"""The report as one self-contained HTML page (for Snakemake's ``--report``, which shows it as it is):
the Markdown rendered with its tables, and every figure embedded as a data URI."""

from __future__ import annotations

import base64
import html as html_lib
import re
from pathlib import Path

import markdown

from ..common.io import save_text
from .style import FIGURE_DPI

#: characters of a name from a config, a CSV or a class that would be markup in the report: HTML
#: (``<script>``, ``&``), a Markdown link or code span (``[``, ``]``, backtick), a table cell (``|``)
MARKUP = {"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "[": "&#91;", "]": "&#93;", "`": "&#96;",
          "|": "&#124;"}
_MARKUP = re.compile("[" + re.escape("".join(MARKUP)) + "]")


def escape_text(value) -> str:
    """``value`` as text that the Markdown report and its HTML page show and never run: each of
    ``MARKUP``'s characters as its HTML entity (``fm<script>`` -> ``fm&lt;script&gt;``), so no tag,
    link or table cell comes from a string of a config, a CSV or a class name; names made of
    letters, digits and ``_ . = -`` are unchanged."""
    return _MARKUP.sub(lambda m: MARKUP[m.group()], str(value))


def escape_frame(frame):
    """``frame`` with every text cell ``escape_text``-ed (numbers, and the frame itself, untouched)."""
    text = frame.select_dtypes(include=["object", "string"]).columns
    if not len(text):
        return frame
    frame = frame.copy()
    frame[text] = frame[text].map(lambda v: escape_text(v) if isinstance(v, str) else v)
    return frame


def inert_markdown(text: str) -> str:
    """Markdown written by another step or read from a file (the results table's ``results.md``, the
    theory section) with every ``<`` as its entity: its tables, emphasis and links stay Markdown, but
    no HTML tag of it is live in the report or its page (``fm<script>`` shows as text)."""
    return text.replace("<", "&lt;")


def code_block(text: str, language: str = "") -> str:
    """``text`` as a fenced Markdown code block whose fence is longer than any run of backticks in
    it, so no line of ``text`` can close the block and turn the rest into live Markdown or HTML."""
    runs = [len(r) for r in re.findall(r"`+", text)]
    fence = "`" * max(3, max(runs, default=0) + 1)
    return f"{fence}{language}\n{text}\n{fence}"


IMG_SRC = re.compile(r'(<img\b[^>]*?\bsrc=")([^"]+)(")')
STYLE = ("body{font-family:sans-serif;max-width:1100px;margin:auto;line-height:1.45}"
         "table{border-collapse:collapse;font-size:90%}td,th{border:1px solid #ccc;padding:2px 6px;"
         "white-space:nowrap}div.scroll{overflow-x:auto;margin:0.5em 0}"
         "img{max-width:none}code,pre{background:#f6f6f6}pre{overflow-x:auto}")
#: CSS pixels per inch: every figure is shown at its size in inches (``save_figure``'s dpi), one scale for all
CSS_PX_PER_INCH = 96
TABLE = re.compile(r"<table>.*?</table>", re.S)
FIGURE_PARAGRAPH = re.compile(r"<p>(<img\b[^>]*>)</p>")


def png_width(data: bytes) -> int | None:
    """The pixel width of a PNG (its IHDR chunk), or None when ``data`` is not one."""
    if data[:8] != b"\x89PNG\r\n\x1a\n" or len(data) < 24 or data[12:16] != b"IHDR":
        return None
    return int.from_bytes(data[16:20], "big")


def scrolling(html: str) -> str:
    """Every table and every figure in a horizontally scrolling box: wide tables scroll instead of
    wrapping their numbers over lines, wide figures instead of shrinking to another scale."""
    html = TABLE.sub(lambda m: f'<div class="scroll">{m.group(0)}</div>', html)
    return FIGURE_PARAGRAPH.sub(lambda m: f'<div class="scroll">{m.group(1)}</div>', html)


def embed_images(html: str, base: Path) -> str:
    """Every ``<img src="path">`` of the rendered page, ``path`` relative to ``base``, turned into a
    PNG data URI, shown at ``CSS_PX_PER_INCH`` per inch of the figure (the common scale). Only images that the Markdown links (never text inside a code block, such as the
    config's strings) and only files under ``base`` are embedded: a link outside it is an error, as
    is a missing file (a report never silently loses a figure)."""
    root = base.resolve()

    def inline(match: re.Match) -> str:
        src = html_lib.unescape(match.group(2))
        path = (base / src).resolve()
        if not path.is_relative_to(root):
            raise ValueError(f"report figure {src} lies outside {base}; only figures under it are embedded")
        if not path.is_file():
            raise FileNotFoundError(f"report figure {path} is missing")
        raw = path.read_bytes()
        width = png_width(raw)
        size = f' width="{round(width * CSS_PX_PER_INCH / FIGURE_DPI)}"' if width else ""
        data = base64.b64encode(raw).decode()
        return f"{match.group(1)}data:image/png;base64,{data}{match.group(3)}{size}"

    return IMG_SRC.sub(inline, html)


#: the link schemes a report page may hold (any other, ``javascript:`` above all, becomes ``#``)
SAFE_SCHEMES = ("http", "https", "mailto")
HREF = re.compile(r'(<a\b[^>]*?\bhref=")([^"]*)(")')


def safe_links(html: str) -> str:
    """Every link of a rendered page whose target names a scheme other than ``SAFE_SCHEMES``
    (``javascript:``, ``data:``, ...; spaces and control characters ignored, as browsers ignore them)
    pointed at ``#`` instead: a Markdown link of a pasted file runs nothing when clicked."""
    def check(match: re.Match) -> str:
        target = re.sub(r"[\x00-\x20\x7f]", "", html_lib.unescape(match.group(2)))
        scheme = re.match(r"([A-Za-z][A-Za-z0-9+.-]*):", target)
        keep = scheme is None or scheme.group(1).lower() in SAFE_SCHEMES
        return match.group(0) if keep else f"{match.group(1)}#{match.group(3)}"

    return HREF.sub(check, html)


def render_markdown(text: str) -> str:
    """``text`` rendered to HTML (tables, fenced code) with raw HTML switched off: a tag in the text
    is shown as text, never passed through, and links are ``safe_links``."""
    md = markdown.Markdown(extensions=["tables", "fenced_code"])
    md.preprocessors.deregister("html_block")
    md.inlinePatterns.deregister("html")
    return safe_links(md.convert(text))


def report_html(text: str, base: Path, title: str = "MR² replication report") -> str:
    """The Markdown report ``text`` (figure links relative to ``base``) as a standalone HTML page."""
    body = scrolling(embed_images(render_markdown(text), base))
    return (f"<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>{title}</title>"
            f"<style>{STYLE}</style></head><body>\n{body}\n</body></html>\n")


def write_report_html(text: str, base: Path, out: str | Path) -> None:
    save_text(report_html(text, base), out)
