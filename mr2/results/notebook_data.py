"""The data folder of the notebooks (``notebooks/``), and running them.

A notebook reads the pipeline's per-run tables: ``$MR2_RESULTS`` when set, else the repository's
``results/`` when a run made one, else the committed snapshot ``SNAPSHOT`` (so a reader who just
opened the repository, or the forge, sees real outputs). Two layouts are read alike (``table_path``):
a results folder (``tables/<name>.csv``, ``theory/bound.csv``) and a flat snapshot
(``<name>.csv``, as ``docs/results/<snapshot>/`` holds them).

To show another snapshot, change ``SNAPSHOT`` (or write a new one from a results folder:
``python -m mr2.results.notebook_data snapshot results/``); then re-execute the committed notebooks
(``python -m mr2.results.notebook_data execute``): tests/test_notebooks.py checks that their outputs
are what they produce now.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterable

import pandas as pd

from ..common.io import save_csv
from ..common.runs import RUN_KEYS
from .figures.sweeps import SWEEP_TAG, option_column
from .tables import RESULTS_DIR, ROOT_MARKER, read_tables, results_folder

#: the committed snapshot the notebooks read when the repository has no ``results/`` (relative to its root)
SNAPSHOT = "docs/results/notebooks"
#: where a results folder holds each table the notebooks read (a flat snapshot: ``<name>.csv``)
RESULTS_LAYOUT = {"per_class": "tables", "runs": "tables", "epochs": "tables", "groups": "tables",
                  "bound": "theory"}
NOTEBOOKS = ("bound_tightness", "margins")
#: what a snapshot keeps of each table (``write_snapshot``): the columns the notebooks read (None: all)
#: and, of the per-epoch log, the logged names they draw
SNAPSHOT_COLUMNS = {
    "per_class": [*RUN_KEYS, "class", "class_name", "accuracy", "gamma", "a", "spread"],
    "runs": [*RUN_KEYS, SWEEP_TAG, option_column("c_bar")],
    "epochs": None, "groups": None, "bound": None,
}
SNAPSHOT_EPOCH_NAMES = ("gamma", "a")


def repository_root(start: str | Path | None = None) -> Path:
    """The nearest folder at or above ``start`` (default: the current folder) that holds ``ROOT_MARKER``."""
    here = Path(start or Path.cwd()).resolve()
    root = next((d for d in (here, *here.parents) if (d / ROOT_MARKER).is_file()), None)
    if root is None:
        raise FileNotFoundError(f"no repository root ({ROOT_MARKER}) at or above {here}; "
                                "set MR2_RESULTS to the pipeline's results folder")
    return root


def data_folder(override: str | Path | None = None, start: str | Path | None = None) -> Path:
    """The folder the notebooks read: ``override`` (``$MR2_RESULTS``) when given, else the repository's
    ``results/`` when it exists, else its committed ``SNAPSHOT``. A folder that does not exist is an
    error naming it (``mr2.results.tables.results_folder``)."""
    if override:
        return results_folder(override)
    root = repository_root(start)
    return results_folder(root / (RESULTS_DIR if (root / RESULTS_DIR).is_dir() else SNAPSHOT))


def describe(folder: str | Path, start: str | Path | None = None) -> str:
    """One line saying which data ``folder`` is, its path relative to the repository root where it
    lies under it (so the line is the same on every machine)."""
    folder = Path(os.path.abspath(folder))  # a results/ that links elsewhere still reads "results"
    try:
        root = repository_root(start)
        shown = folder.relative_to(root).as_posix()
    except (FileNotFoundError, ValueError):
        root, shown = None, str(folder)
    if root is not None and folder.resolve() == (root / SNAPSHOT).resolve():
        return (f"Data: {shown}, the committed snapshot (see its README.md for the run that made it; "
                f"run the pipeline for {RESULTS_DIR}/, or set MR2_RESULTS, to read other results).")
    return f"Data: {shown} (the pipeline's results)."


def table_path(folder: str | Path, name: str) -> Path:
    """The CSV of table ``name`` in ``folder``: ``<folder>/<RESULTS_LAYOUT[name]>/<name>.csv`` in a
    results folder, ``<folder>/<name>.csv`` in a flat snapshot; an error naming both when neither exists."""
    folder = Path(folder)
    nested, flat = folder / RESULTS_LAYOUT.get(name, "tables") / f"{name}.csv", folder / f"{name}.csv"
    for path in (nested, flat):
        if path.is_file():
            return path
    raise FileNotFoundError(f"missing table {name}: neither {nested} nor {flat}; run the pipeline first")


def read_notebook_tables(folder: str | Path, names: Iterable[str]) -> dict[str, pd.DataFrame]:
    """The tables ``names`` of ``folder`` (either layout), read as ``mr2.results.tables.read_tables`` does."""
    return {name: read_tables(table_path(folder, name).parent, [name])[name] for name in names}


def write_snapshot(results: str | Path, out: str | Path) -> list[Path]:
    """A flat snapshot of a results folder for the notebooks: each table of ``SNAPSHOT_COLUMNS`` as
    ``<out>/<name>.csv`` with only the columns the notebooks read (of the per-epoch log only the
    rows of ``SNAPSHOT_EPOCH_NAMES``). Returns the paths written."""
    paths = []
    for name, columns in SNAPSHOT_COLUMNS.items():
        frame = pd.read_csv(table_path(results, name))
        if columns is not None:
            frame = frame[[c for c in columns if c in frame]]
        if name == "epochs":
            frame = frame[frame["name"].isin(SNAPSHOT_EPOCH_NAMES)]
        paths.append(Path(out) / f"{name}.csv")
        save_csv(frame, paths[-1])
    return paths


def execute(path: str | Path, write: bool = False, timeout: int = 600):
    """Run the notebook at ``path`` headless from its own folder (as a reader's kernel would) and return
    it executed; with ``write`` save it in place. No timing metadata, so re-running on the same data
    changes no byte of the text outputs."""
    import nbformat
    from nbclient import NotebookClient

    path = Path(path)
    nb = nbformat.read(path, as_version=4)
    NotebookClient(nb, timeout=timeout, kernel_name="python3", record_timing=False,
                   resources={"metadata": {"path": str(path.parent)}}).execute()
    if write:
        nbformat.write(nb, path)
    return nb


def main(argv: list[str] | None = None) -> None:
    """``execute``: re-execute the repository's notebooks in place, on the data ``data_folder`` finds
    without ``$MR2_RESULTS`` (the committed snapshot: refused where a results/ exists);
    ``snapshot RESULTS [OUT]``: ``write_snapshot`` of a results folder (OUT: the repository's ``SNAPSHOT``)."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m mr2.results.notebook_data", description=main.__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("execute")
    snap = sub.add_parser("snapshot")
    snap.add_argument("results")
    snap.add_argument("out", nargs="?")
    args = parser.parse_args(argv)
    root = repository_root(Path(__file__).parent)
    if args.command == "snapshot":
        for path in write_snapshot(args.results, args.out or root / SNAPSHOT):
            print(f"wrote {path}")
        return
    if os.environ.get("MR2_RESULTS"):
        raise SystemExit("unset MR2_RESULTS: the committed notebooks show the repository's own data")
    if (root / RESULTS_DIR).is_dir():
        raise SystemExit(f"{root / RESULTS_DIR} exists: the committed notebooks show {SNAPSHOT}; "
                         "run from a clone without results/")
    for name in NOTEBOOKS:
        execute(root / "notebooks" / f"{name}.ipynb", write=True)
        print(f"executed notebooks/{name}.ipynb on {SNAPSHOT}")


if __name__ == "__main__":
    main()
