"""The data folders of the notebooks (``notebooks/``), and running them.

A notebook reads the pipeline's per-run tables: ``$MR2_RESULTS`` when set, else the repository's
``results/`` when a run made one, else the committed snapshots (so a reader who just opened the
repository, or the forge, sees real outputs). Of the snapshots (``SNAPSHOTS``, richest first) each
part of a notebook reads the first that holds every table it needs (``data_folder``'s ``tables``):
the tuned Fashion-MNIST run set (``EVIDENCE_SNAPSHOT``: 16 seeds, its per-class tables) for what
per-class tables decide, and a smoke-sized run (``SMOKE_SNAPSHOT``) for the tables only it kept (the
runs table, the bound table, the per-epoch log). Two layouts are read alike (``table_path``): a
results folder (``tables/<name>.csv``, ``theory/bound.csv``) and a flat snapshot (``<name>.csv``,
as ``docs/results/<snapshot>/`` holds them).

To refresh the smoke snapshot, write it from a smoke run's results folder
(``python -m mr2.results.notebook_data snapshot results/``); then re-execute the committed
notebooks (``python -m mr2.results.notebook_data execute``): tests/test_notebooks.py checks that
their outputs are what they produce now.
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

#: the committed run set whose per-class tables the notebooks read when the repository has no
#: ``results/`` (relative to its root)
EVIDENCE_SNAPSHOT = "docs/results/tuned-fashion-mnist"
#: the committed smoke-sized run: the only snapshot with a runs table, a bound table and a per-epoch log
SMOKE_SNAPSHOT = "docs/results/notebooks"
#: the committed snapshots, richest first, and what each is (``describe``)
SNAPSHOTS = {
    EVIDENCE_SNAPSHOT: "the committed tuned Fashion-MNIST run set (config/tuned-fashion-mnist.yaml: 16 seeds "
                       "of 20 epochs, and seeds 0-2 of 80 epochs as fashion_mnist.x4)",
    SMOKE_SNAPSHOT: "the committed smoke-sized run (2 seeds of 3 epochs, see its README.md), the only committed "
                    "run set that kept these tables: its numbers show the code working, they are no evidence",
}
#: where a results folder holds each table the notebooks read (a flat snapshot: ``<name>.csv``)
RESULTS_LAYOUT = {"per_class": "tables", "runs": "tables", "epochs": "tables", "groups": "tables",
                  "convergence": "tables", "bound": "theory"}
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


def data_folder(override: str | Path | None = None, start: str | Path | None = None,
                tables: Iterable[str] = ("per_class",)) -> Path:
    """The folder a notebook reads ``tables`` from: ``override`` (``$MR2_RESULTS``) when given, else the
    repository's ``results/`` when it exists, else the first of its committed ``SNAPSHOTS`` that holds
    every one of ``tables``. A folder that does not exist is an error naming it
    (``mr2.results.tables.results_folder``), and so are snapshots that lack a table."""
    if override:
        return results_folder(override)
    root = repository_root(start)
    if (root / RESULTS_DIR).is_dir():
        return results_folder(root / RESULTS_DIR)
    tables = list(tables)
    for snapshot in SNAPSHOTS:
        if all(_table(root / snapshot, name) for name in tables):
            return root / snapshot
    raise FileNotFoundError(f"missing results folder {root / RESULTS_DIR}, and no committed snapshot holds the "
                            f"tables {tables} ({', '.join(SNAPSHOTS)}); run the pipeline or set MR2_RESULTS")


def describe(folder: str | Path, start: str | Path | None = None) -> str:
    """One line saying which data ``folder`` is, its path relative to the repository root where it
    lies under it (so the line is the same on every machine)."""
    folder = Path(os.path.abspath(folder))  # a results/ that links elsewhere still reads "results"
    try:
        root = repository_root(start)
        shown = folder.relative_to(root).as_posix()
    except (FileNotFoundError, ValueError):
        root, shown = None, str(folder)
    for snapshot, what in SNAPSHOTS.items():
        if root is not None and folder.resolve() == (root / snapshot).resolve():
            return (f"Data: {shown}, {what} (run the pipeline for {RESULTS_DIR}/, or set MR2_RESULTS, "
                    "to read other results).")
    return f"Data: {shown} (the pipeline's results)."


def table_path(folder: str | Path, name: str) -> Path:
    """The CSV of table ``name`` in ``folder``: ``<folder>/<RESULTS_LAYOUT[name]>/<name>.csv`` in a
    results folder, ``<folder>/<name>.csv`` in a flat snapshot; an error naming both when neither exists."""
    found = _table(folder, name)
    if found is None:
        nested, flat = _places(folder, name)
        raise FileNotFoundError(f"missing table {name}: neither {nested} nor {flat}; run the pipeline first")
    return found


def _places(folder: str | Path, name: str) -> tuple[Path, Path]:
    folder = Path(folder)
    return folder / RESULTS_LAYOUT.get(name, "tables") / f"{name}.csv", folder / f"{name}.csv"


def _table(folder: str | Path, name: str) -> Path | None:
    """``table_path`` of ``name`` in ``folder``, None where neither layout holds it."""
    return next((path for path in _places(folder, name) if path.is_file()), None)


def read_notebook_tables(folder: str | Path, names: Iterable[str]) -> dict[str, pd.DataFrame]:
    """The tables ``names`` of ``folder`` (either layout), read as ``mr2.results.tables.read_tables`` does."""
    return {name: read_tables(table_path(folder, name).parent, [name])[name] for name in names}


#: the columns of a per-epoch log (``epochs.csv``)
EPOCH_COLUMNS = [*RUN_KEYS, "epoch", "class", "name", "value"]


def check_epochs(per_class: pd.DataFrame, convergence: pd.DataFrame,
                 names: Iterable[str] = SNAPSHOT_EPOCH_NAMES) -> pd.DataFrame:
    """The per-class statistics ``names`` (γ_k, a_k) of each convergence check's two run sets as a
    per-epoch log (``EPOCH_COLUMNS``): for every row of ``convergence`` (a setting ``dataset``, its
    ``check`` trained ``check_epochs`` instead of ``epochs``), each seed's final values of the setting's
    run at epoch ``epochs`` and of the check's run at epoch ``check_epochs``, both under the setting's
    name, for the seeds that ran both. Two runs per seed, not one run's trajectory: the check's run
    trains longer from its start (its own learning-rate schedule). Empty without a check."""
    names, parts = list(names), []
    for row in convergence.dropna(subset=["epochs", "check_epochs"]).itertuples():
        runs = [per_class[(per_class["dataset"] == d) & (per_class["method"] == row.method)
                          & (per_class["variant"] == row.variant)] for d in (row.dataset, row.check)]
        seeds = set(runs[0]["seed"]) & set(runs[1]["seed"])
        for run, epoch in zip(runs, (row.epochs, row.check_epochs)):
            long = run[run["seed"].isin(seeds)].melt(id_vars=[*RUN_KEYS, "class"], value_vars=names,
                                                     var_name="name", value_name="value")
            parts.append(long.assign(dataset=row.dataset, epoch=int(epoch)))
    return pd.concat(parts, ignore_index=True)[EPOCH_COLUMNS] if parts else pd.DataFrame(columns=EPOCH_COLUMNS)


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
    it executed; with ``write`` save it in place. No timing metadata, and a cell's printed text as one
    output however the kernel sent it in pieces, so re-running on the same data changes no byte of the
    text outputs. ``timeout`` (seconds) bounds each cell and the kernel's start
    (a busy machine can take more than nbclient's 60 s to start one)."""
    import nbformat
    from nbclient import NotebookClient

    path = Path(path)
    nb = nbformat.read(path, as_version=4)
    NotebookClient(nb, timeout=timeout, startup_timeout=timeout, kernel_name="python3", record_timing=False,
                   coalesce_streams=True, resources={"metadata": {"path": str(path.parent)}}).execute()
    if write:
        nbformat.write(nb, path)
    return nb


def main(argv: list[str] | None = None) -> None:
    """``execute``: re-execute the repository's notebooks in place, on the data ``data_folder`` finds
    without ``$MR2_RESULTS`` (the committed snapshots: refused where a results/ exists);
    ``snapshot RESULTS [OUT]``: ``write_snapshot`` of a smoke run's results folder (OUT: the repository's
    ``SMOKE_SNAPSHOT``)."""
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
        for path in write_snapshot(args.results, args.out or root / SMOKE_SNAPSHOT):
            print(f"wrote {path}")
        return
    if os.environ.get("MR2_RESULTS"):
        raise SystemExit("unset MR2_RESULTS: the committed notebooks show the repository's own data")
    if (root / RESULTS_DIR).is_dir():
        raise SystemExit(f"{root / RESULTS_DIR} exists: the committed notebooks show {', '.join(SNAPSHOTS)}; "
                         "run from a clone without results/")
    for name in NOTEBOOKS:
        execute(root / "notebooks" / f"{name}.ipynb", write=True)
        print(f"executed notebooks/{name}.ipynb on {', '.join(SNAPSHOTS)}")


if __name__ == "__main__":
    main()
