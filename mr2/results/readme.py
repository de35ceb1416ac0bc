"""The README's result tables, generated: a run's results table is kept in the repository as the
pipeline wrote it (``docs/results/<name>/results.{csv,md}``) and the README shows that Markdown
between the markers ``<!-- results:<name> -->`` and ``<!-- /results:<name> -->``, so the numbers the
README shows cannot drift from a file the pipeline wrote (``tests/test_readme.py`` checks both
links: the Markdown against the CSV, the README against the Markdown). The snapshot also keeps the
run's paired comparisons (comparisons.csv) and settings (settings.csv, with the config's name), from
which the README's verdict table across settings is made (``mr2.results.verdicts``, between
``<!-- verdicts -->`` and ``<!-- /verdicts -->``; refreshed with every snapshot).

  mr2 readme --tables results/tables --name default --config config/config.yaml   (after a run of it)
  mr2 verdicts                                     (only the verdict table, from docs/results/*/)
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pandas as pd

from ..common.io import save_csv, save_text
from .tables import results_markdown
from .verdicts import update_verdicts

SNAPSHOTS = Path("docs") / "results"
#: the files of a snapshot: the results table (required) and, when the run wrote them, its paired
#: comparisons and settings
REQUIRED, OPTIONAL = ("results.csv", "results.md"), ("comparisons.csv", "settings.csv")


def markers(name: str) -> tuple[str, str]:
    return f"<!-- results:{name} -->", f"<!-- /results:{name} -->"


def readme_blocks(text: str) -> dict[str, str]:
    """Every generated block of a README: name -> the text between its markers."""
    return {m.group(1): m.group(2).strip("\n") for m in
            re.finditer(r"<!-- results:([\w.-]+) -->\n(.*?)\n<!-- /results:\1 -->", text, flags=re.S)}


def snapshot_markdown(csv: str | Path, reference: str = "erm") -> str:
    """The results table's Markdown regenerated from its CSV, as ``mr2 table`` writes it."""
    return results_markdown(pd.read_csv(csv), reference=reference)


def update_readme(tables: str | Path, name: str, readme: str | Path = "README.md", root: str | Path = ".",
                  config: str | None = None) -> Path:
    """Copy ``<tables>/results.{csv,md}`` (and comparisons.csv, settings.csv where the run wrote
    them; settings.csv gains a column ``config``: ``config``, else ``name``) to
    ``docs/results/<name>/``, put the Markdown into the README's block ``name`` (which must exist)
    and refresh the README's verdict table where it has one. Returns the snapshot folder."""
    if not re.fullmatch(r"[\w.-]+", name):
        raise ValueError(f"snapshot name {name!r}: letters, digits, _ . - only")
    readme, tables = Path(readme), Path(tables)
    text = readme.read_text(encoding="utf-8")
    begin, end = markers(name)
    if begin not in text or end not in text:
        raise ValueError(f"{readme} has no block {begin} ... {end} to fill")
    folder = Path(root) / SNAPSHOTS / name
    folder.mkdir(parents=True, exist_ok=True)
    for file in REQUIRED:
        if not (tables / file).is_file():
            raise FileNotFoundError(f"{tables / file} not found; run the pipeline's results_table step first")
    for file in REQUIRED + OPTIONAL:
        if (tables / file).is_file():
            shutil.copyfile(tables / file, folder / file)
        elif (folder / file).is_file():  # a stale file of an earlier snapshot
            (folder / file).unlink()
    if (folder / "settings.csv").is_file():
        settings = pd.read_csv(folder / "settings.csv", keep_default_na=False)
        save_csv(settings.assign(config=config or name), folder / "settings.csv")
    md = (folder / "results.md").read_text(encoding="utf-8").strip("\n")
    head, rest = text.split(begin, 1)
    save_text(f"{head}{begin}\n{md}\n{end}{rest.split(end, 1)[1]}", readme)
    update_verdicts(readme, Path(root) / SNAPSHOTS)
    return folder
