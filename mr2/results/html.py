"""The report as one self-contained HTML page (for Snakemake's ``--report``, which shows it as it is):
the Markdown rendered with its tables, and every figure embedded as a data URI."""

from __future__ import annotations

import base64
import re
from pathlib import Path

import markdown

from ..common.io import save_text

IMAGE = re.compile(r"!\[([^\]]*)\]\(([^)\s]+)\)")
STYLE = ("body{font-family:sans-serif;max-width:1100px;margin:auto;line-height:1.45}"
         "table{border-collapse:collapse;font-size:90%}td,th{border:1px solid #ccc;padding:2px 6px}"
         "img{max-width:100%}code,pre{background:#f6f6f6}")


def embed_images(text: str, base: Path) -> str:
    """``![name](path)`` with ``path`` relative to ``base`` turned into a PNG data URI; a missing file
    is an error naming it (a report never silently loses a figure)."""

    def inline(match: re.Match) -> str:
        path = base / match.group(2)
        if not path.is_file():
            raise FileNotFoundError(f"report figure {path} is missing")
        data = base64.b64encode(path.read_bytes()).decode()
        return f"![{match.group(1)}](data:image/png;base64,{data})"

    return IMAGE.sub(inline, text)


def report_html(text: str, base: Path, title: str = "MR² replication report") -> str:
    """The Markdown report ``text`` (figure links relative to ``base``) as a standalone HTML page."""
    body = markdown.markdown(embed_images(text, base), extensions=["tables", "fenced_code"])
    return (f"<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>{title}</title>"
            f"<style>{STYLE}</style></head><body>\n{body}\n</body></html>\n")


def write_report_html(text: str, base: Path, out: str | Path) -> None:
    save_text(report_html(text, base), out)
