"""The README's result tables, generated: a run's results table is kept in the repository as the
pipeline wrote it (``docs/results/<name>/results.{csv,md}``) and the README shows that Markdown
between the markers ``<!-- results:<name> -->`` and ``<!-- /results:<name> -->``, so the numbers the
README shows cannot drift from a file the pipeline wrote (``tests/test_readme.py`` checks both
links: the Markdown against the CSV, the README against the Markdown).

  mr2 readme --tables results/tables --name default      (after a run of config/config.yaml)
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pandas as pd

from ..common.io import save_text
from .tables import results_markdown

SNAPSHOTS = Path("docs") / "results"


def markers(name: str) -> tuple[str, str]:
    return f"<!-- results:{name} -->", f"<!-- /results:{name} -->"


def readme_blocks(text: str) -> dict[str, str]:
    """Every generated block of a README: name -> the text between its markers."""
    return {m.group(1): m.group(2).strip("\n") for m in
            re.finditer(r"<!-- results:([\w.-]+) -->\n(.*?)\n<!-- /results:\1 -->", text, flags=re.S)}


def snapshot_markdown(csv: str | Path, reference: str = "erm") -> str:
    """The results table's Markdown regenerated from its CSV, as ``mr2 table`` writes it."""
    return results_markdown(pd.read_csv(csv), reference=reference)


def update_readme(tables: str | Path, name: str, readme: str | Path = "README.md", root: str | Path = ".") -> Path:
    """Copy ``<tables>/results.{csv,md}`` to ``docs/results/<name>/`` and put the Markdown into the
    README's block ``name`` (which must exist). Returns the snapshot folder."""
    if not re.fullmatch(r"[\w.-]+", name):
        raise ValueError(f"snapshot name {name!r}: letters, digits, _ . - only")
    readme, tables = Path(readme), Path(tables)
    text = readme.read_text(encoding="utf-8")
    begin, end = markers(name)
    if begin not in text or end not in text:
        raise ValueError(f"{readme} has no block {begin} ... {end} to fill")
    folder = Path(root) / SNAPSHOTS / name
    folder.mkdir(parents=True, exist_ok=True)
    for file in ("results.csv", "results.md"):
        if not (tables / file).is_file():
            raise FileNotFoundError(f"{tables / file} not found; run the pipeline's results_table step first")
        shutil.copyfile(tables / file, folder / file)
    md = (folder / "results.md").read_text(encoding="utf-8").strip("\n")
    head, rest = text.split(begin, 1)
    save_text(f"{head}{begin}\n{md}\n{end}{rest.split(end, 1)[1]}", readme)
    return folder
