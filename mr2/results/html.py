"""The report as one self-contained HTML page (for Snakemake's ``--report``, which shows it as it is):
the Markdown rendered with its tables, and every figure embedded as a data URI."""

from __future__ import annotations

import base64
import html as html_lib
import math
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import markdown

from ..common.io import save_text

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
#: the page fits a 1,280 px screen: text at most ``MAX_WIDTH`` wide, tables wrap their cells within it
#: (an interval stays on one line); a figure may be wider than the text, up to the window's width
MAX_WIDTH = 1100
#: a figure is shown at its own pixel size (one CSS px per pixel of the PNG), shrunk to the window's width
#: but never below this share of it: a figure wider than the window by more than that scrolls sideways in
#: its own box, never the page. The figures' text is set in points at ``style.FIGURE_DPI`` (150 dpi:
#: 2.08 px per point), so the smallest of it, 7 pt (6 pt only under more than 30 class names), is at
#: least 12.4 px (10.6 px) on the page; at 0.85 a figure of up to 1,488 px (9.9 inches) fits a
#: 1,280 px window with a scroll bar (1,265 px) whole
MIN_FIGURE_SCALE = 0.85
#: the side padding of the page: a figure's box spans it, edge to edge of the window
PAD = 8
STYLE = (f"body{{font-family:sans-serif;margin:0;padding:0 {PAD}px;line-height:1.45}}"
         f"body>*{{max-width:{MAX_WIDTH}px;margin-left:auto;margin-right:auto}}"
         "table{border-collapse:collapse;font-size:85%;max-width:100%}"
         "td,th{border:1px solid #ccc;padding:2px 5px;vertical-align:top;overflow-wrap:break-word}"
         "td small,th small{color:#555}div.scroll{overflow-x:auto;margin-top:0.5em;margin-bottom:0.5em}"
         f"body>div.figure{{max-width:none;margin:1em -{PAD}px;overflow-x:auto;text-align:center}}"
         "img{max-width:100%;height:auto}code,pre{background:#f6f6f6}pre{overflow-x:auto}")
#: a paragraph holding one image and nothing else: a figure of the report
FIGURE = re.compile(r'<p>\s*(<img\b[^>]*?\bwidth="(\d+)"[^>]*?)\s*/?>\s*</p>')
TABLE = re.compile(r"<table>.*?</table>", re.S)
#: a bracketed interval in a cell, ``[−0.5, +2.5]`` or ``[95 % CI −0.4, +1.1; MDE 1.0]``: kept on one line
INTERVAL = re.compile(r"\[[^\[\]\n]{1,40}\]")
#: the header of a difference column, shown under the column it follows when it is "Δ <that column>"
DELTA = "Δ "


def png_width(data: bytes) -> int | None:
    """The pixel width of a PNG (its IHDR chunk), or None when ``data`` is not one."""
    if data[:8] != b"\x89PNG\r\n\x1a\n" or len(data) < 24 or data[12:16] != b"IHDR":
        return None
    return int.from_bytes(data[16:20], "big")


def _text(cell: ET.Element) -> str:
    return "".join(cell.itertext()).strip()


def _keep_intervals(cell: ET.Element) -> None:
    """Every bracketed interval in ``cell``'s text with no-break spaces: it wraps as one word."""
    keep = lambda text: INTERVAL.sub(lambda m: m.group().replace(" ", "\u00a0"), text) if text else text  # noqa: E731
    for node in cell.iter():
        node.text, node.tail = keep(node.text), (keep(node.tail) if node is not cell else node.tail)


def _below(cell: ET.Element, other: ET.Element, prefix: str = "") -> None:
    """Move ``other``'s content into ``cell``, on a line of its own in small type."""
    small = ET.Element("small")
    small.text = prefix + (other.text or "")
    small.extend(list(other))
    cell.append(ET.Element("br"))
    cell.append(small)


def _word_then_detail(cell: ET.Element) -> None:
    """A cell that opens with a word in bold and goes on (``**higher** +0.3 [−0.1, +0.7]``, a verdict's
    word and the Δ behind it): the rest on a line of its own under the word, in small type."""
    children = list(cell)
    if (cell.text or "").strip() or not children or children[0].tag != "strong" or not (
            (children[0].tail or "").strip() or len(children) > 1):
        return
    rest = ET.Element("td")
    rest.text = (children[0].tail or "").lstrip()
    children[0].tail = None
    for child in children[1:]:
        cell.remove(child)
        rest.append(child)
    _below(cell, rest)


def fit_table(table: str) -> str:
    """A rendered table made narrow enough for the page: each column headed "Δ X" that follows the
    column "X" (a mean and its difference to the reference) shown under it in the same cell, so the
    table has half as many number columns; a cell that opens with a bold word shows the rest under
    it; bracketed intervals never break. A table that does not parse is returned as it is."""
    try:
        root = ET.fromstring(table)
    except ET.ParseError:
        return table
    rows = root.findall(".//tr")
    header = [_text(c) for c in rows[0]] if rows else []
    pairs = [i for i in range(1, len(header)) if header[i] == DELTA + header[i - 1]]
    for row in rows:
        cells = list(row)
        for i in reversed(pairs):
            if i < len(cells):
                _below(cells[i - 1], cells[i], "" if cells[i].tag == "th" else DELTA)
                row.remove(cells[i])
        for cell in row:
            if cell.tag == "td":
                _word_then_detail(cell)
                _keep_intervals(cell)
    return ET.tostring(root, encoding="unicode", method="html")


def fitting(html: str) -> str:
    """Every table ``fit_table``-ed, in a box that scrolls only in a window narrower than the table
    can wrap to (figures are ``figure_boxes``)."""
    return TABLE.sub(lambda m: f'<div class="scroll">{fit_table(m.group(0))}</div>', html)


def embed_images(html: str, base: Path) -> str:
    """Every ``<img src="path">`` of the rendered page, ``path`` relative to ``base``, turned into a
    PNG data URI with the PNG's pixel width as its width. Only images that the Markdown links (never text
    inside a code block, such as the config's strings) and only files under ``base`` are embedded: a
    link outside it is an error, as is a missing file (a report never silently loses a figure)."""
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
        size = f' width="{width}"' if width else ""
        data = base64.b64encode(raw).decode()
        return f"{match.group(1)}data:image/png;base64,{data}{match.group(3)}{size}"

    return IMG_SRC.sub(inline, html)


def figure_boxes(html: str) -> str:
    """Every image alone in its paragraph (a figure of the report, with its pixel width) in a box as
    wide as the window: shown at its pixel size, shrunk to the window but never below
    ``MIN_FIGURE_SCALE`` of it (its ``min-width``), and scrolled sideways in its box when still wider."""
    def box(match: re.Match) -> str:
        least = math.ceil(MIN_FIGURE_SCALE * int(match.group(2)))
        return f'<div class="figure">{match.group(1)} style="min-width:{least}px"></div>'

    return FIGURE.sub(box, html)


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
    body = fitting(figure_boxes(embed_images(render_markdown(text), base)))
    return (f"<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>{title}</title>"
            f"<style>{STYLE}</style></head><body>\n{body}\n</body></html>\n")


def write_report_html(text: str, base: Path, out: str | Path) -> None:
    save_text(report_html(text, base), out)
