"""The README's result tables, generated: a run's results table is kept in the repository as the
pipeline wrote it (``docs/results/<name>/results.{csv,md}``) and the README shows that Markdown
between the markers ``<!-- results:<name> -->`` and ``<!-- /results:<name> -->``, so the numbers the
README shows cannot drift from a file the pipeline wrote (``tests/test_readme.py`` checks both
links: the Markdown against the CSV, the README against the Markdown). The snapshot also keeps the
run's paired comparisons (comparisons.csv) and settings (settings.csv, with the config's name), from
which the README's verdict table across settings is made (``mr2.results.verdicts``, between
``<!-- verdicts -->`` and ``<!-- /verdicts -->``; refreshed with every snapshot). With ``--section``,
the named sections of the run's report (its generated sentences: the positive control of a
long-tailed run, the premise's links) are kept as ``excerpt.md`` and shown between
``<!-- excerpt:<name> -->`` and ``<!-- /excerpt:<name> -->`` (figures left out). With ``--figure``,
a figure of the report is copied into the snapshot with its caption (``<stem>.png``, ``<stem>.md``)
and shown between ``<!-- figure:<name>.<stem> -->`` and ``<!-- /figure:<name>.<stem> -->``: the
picture a reader of the paper looks for (the trade-off plane of a comparison) with the words that
say what it shows.

  mr2 readme --tables results/tables --name default --config config/config.yaml   (after a run of it)
  mr2 readme --tables results/tables --name longtail --section "Long-tailed data"
  mr2 readme --tables results/tables --name baselines --figure tradeoff
  mr2 verdicts                                     (only the verdict table, from docs/results/*/)
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path
from typing import Sequence

import pandas as pd

from ..common.io import (block_lines, check_no_marker_lines, compare_stated, fill_block_lines, load_json_file,
                         load_yaml_file, save_csv, save_text)
from ..common.runs import check_safe_name
from .tables import results_markdown
from .verdict_text import update_verdicts

SNAPSHOTS = Path("docs") / "results"
#: the files of a snapshot: the results table (required) and, when the run wrote them, its paired
#: comparisons, settings and convergence checks, and the per-seed evidence every number is
#: recomputed from (``EVIDENCE``)
REQUIRED, OPTIONAL = ("results.csv", "results.md"), ("comparisons.csv", "settings.csv", "convergence.csv", "primary.json")
#: the per-seed, per-class tables a snapshot keeps, with the columns a reader needs to recompute any
#: interval, ρ or group number: each run's keys, its per-class test accuracy and the premise's per-class
#: statistics (γ_k, a_k, ‖μ̂_k‖², ‖ŝ_k‖², training set), and the easy/medium/hard groups
EVIDENCE = {"per_class.csv": ["dataset", "method", "variant", "seed", "class", "class_name", "n_test", "accuracy",
                              "gamma", "a", "mean_sq_norm", "spread"],
            "groups.csv": ["dataset", "class", "group"]}
#: what a tuning stage leaves beside the tables (``<tables>/../tune/<dataset>/``), kept under ``tune/<dataset>/``
TUNE_FILES = ("tuning.csv", "chosen.yaml", "budget.csv", "tuning.md", "tuning.png", "reference_groups.csv")


def markers(name: str, kind: str) -> tuple[str, str]:
    """The begin and end markers of the README's block ``kind:name``."""
    return f"<!-- {kind}:{name} -->", f"<!-- /{kind}:{name} -->"


def readme_blocks(text: str, kind: str = "results") -> dict[str, str]:
    """Every generated block of a README of one ``kind`` (results, excerpt): name -> the text
    between its markers (each a line of its own)."""
    return {m.group(1): m.group(2).strip("\n") for m in
            re.finditer(rf"^<!-- {kind}:([\w.-]+) -->\n(.*?)\n<!-- /{kind}:\1 -->$", text, flags=re.S | re.M)}


def require_block(text: str, name: str, kind: str = "results") -> tuple[str, str]:
    """The markers of the README's block ``kind:name``, each a line of its own (``block_lines``); a
    ValueError naming them if it lacks one, or has one twice or in the wrong order."""
    begin, end = markers(name, kind)
    if block_lines(text, begin, end) is None:
        raise ValueError(f"the README has no block {begin} ... {end} to fill (each marker on a line of its own)")
    return begin, end


def fill_block(text: str, name: str, body: str | None, kind: str = "results") -> str:
    """``text`` with the block ``kind:name`` holding ``body`` (the block must exist; ``body`` None
    removes it, markers included); every line outside it is kept (``fill_block_lines``)."""
    begin, end = require_block(text, name, kind)
    return fill_block_lines(text, begin, end, body)


def report_sections(report: str, headings: Sequence[str]) -> str:
    """The sections of a report (Markdown) whose heading text starts with one of ``headings``, in the
    report's order, each up to the next heading of the same or a higher level; image lines and the
    figure captions right under them are left out (``report_figure`` keeps a figure with its caption), and so is
    a heading left with nothing under it; headings become bold lines, so that the excerpt sits
    inside a README section without changing its outline."""
    lines, out, keep_level = report.splitlines(), [], None
    figures = {i for i, line in enumerate(lines) if line.startswith("![")}
    skip = figures.union(*(figure_caption(lines, i) for i in figures))
    for i, line in enumerate(lines):
        m = re.match(r"(#+) (.*)", line)
        if m and (keep_level is None or len(m.group(1)) <= keep_level):
            keep_level = len(m.group(1)) if any(m.group(2).startswith(h) for h in headings) else None
        if keep_level is not None and i not in skip:
            out.append(line)
    missing = [h for h in headings if not re.search(rf"^#+ {re.escape(h)}", report, flags=re.M)]
    if missing:
        raise ValueError(f"the report has no section {', '.join(map(repr, missing))}")
    # a heading whose section held only a figure: nothing under it before the next heading of its level
    filled = [i for i, line in enumerate(out) if line.strip()]
    level = {i: len(out[i].split()[0]) if out[i].startswith("#") else 0 for i in filled}
    emptied = {i for i, nxt in zip(filled, filled[1:] + [None])
               if level[i] and (nxt is None or 0 < level[nxt] <= level[i])}
    kept = [f"**{line.split(' ', 1)[1]}**" if level.get(i) else line for i, line in enumerate(out) if i not in emptied]
    return re.sub(r"\n{3,}", "\n\n", "\n".join(kept)).strip("\n")


def report_figure(report: str, stem: str) -> tuple[str, str]:
    """The figure ``stem`` of a report (Markdown): the image's path as the report writes it
    (``![stem](path/stem.png)``, relative to the report) and its caption, the paragraph right
    under it (after at most one blank line)."""
    lines = report.splitlines()
    image = re.compile(rf"!\[[^\]]*\]\(((?:[\w.-]+/)*{re.escape(stem)}\.png)\)")
    found = next(((i, m) for i, line in enumerate(lines) if (m := image.fullmatch(line.strip()))), None)
    if found is None:
        raise ValueError(f"the report has no figure {stem!r} (an image line ![...](.../{stem}.png))")
    return found[1].group(1), "\n".join(lines[i] for i in figure_caption(lines, found[0]))


def figure_caption(lines: Sequence[str], image: int) -> range:
    """The line numbers of the caption of the figure whose image is line ``image``: the paragraph
    right under it, after at most one blank line, up to a blank line, a heading or another image."""
    start = image + 1
    start += start < len(lines) and not lines[start].strip()
    end = start
    while end < len(lines) and lines[end].strip() and not lines[end].startswith(("#", "![")):
        end += 1
    return range(start, end)


def stale_parts(text: str, folder: Path, name: str, excerpt: bool, figures: Sequence[str]) -> list:
    """What an earlier snapshot of ``name`` left that this one does not make again: [(block name, kind,
    [files in ``folder``])] for the excerpt (without ``excerpt``) and every figure not in ``figures``
    (a figure of the snapshot is its caption file ``<stem>.md`` beside ``<stem>.png``)."""
    out = []
    if not excerpt and ((folder / "excerpt.md").is_file() or block_lines(text, *markers(name, "excerpt"))):
        out.append((name, "excerpt", [folder / "excerpt.md"]))
    kept = {"excerpt", "results", *figures}
    for caption_file in sorted(folder.glob("*.md")) if folder.is_dir() else []:
        if caption_file.stem not in kept and (folder / f"{caption_file.stem}.png").is_file():
            out.append((f"{name}.{caption_file.stem}", "figure", [caption_file, folder / f"{caption_file.stem}.png"]))
    return out


def snapshot_markdown(csv: str | Path, reference: str = "erm") -> str:
    """The results table's Markdown regenerated from its CSV, as ``mr2 table`` writes it."""
    return results_markdown(pd.read_csv(csv), reference=reference)


def regular_file(path: Path) -> Path:
    """``path``, a regular file and no symbolic link (a link in a received results folder, e.g. to
    /etc/hostname, would copy its target into the repository); a ``ValueError`` naming it otherwise."""
    if path.is_symlink() or not path.is_file():
        raise ValueError(f"{path} is {'a symbolic link' if path.is_symlink() else 'not a regular file'}: a snapshot "
                         "copies only the files the run wrote; nothing was written")
    return path


def tuning_files(source: Path) -> list[tuple[str, Path]]:
    """(dataset, file) of each dataset's tuning record under ``source`` (``TUNE_FILES`` of
    ``<source>/<dataset>/``), every one a regular file (``regular_file``): a link is refused."""
    if not source.is_dir():
        return []
    found = []
    for dataset in sorted(source.iterdir()):
        if dataset.is_symlink():
            regular_file(dataset)
        if dataset.is_dir():
            found += [(dataset.name, regular_file(dataset / file)) for file in TUNE_FILES
                      if (dataset / file).exists() or (dataset / file).is_symlink()]
    return found


def keep_tuning(files: list[tuple[str, Path]], target: Path) -> None:
    """Copy each dataset's tuning record (``tuning_files``) to ``<target>/<dataset>/``; a target left
    from an earlier snapshot goes when the run tuned nothing."""
    if target.is_dir():
        shutil.rmtree(target)
    for dataset, file in files:
        (target / dataset).mkdir(parents=True, exist_ok=True)
        shutil.copyfile(file, target / dataset / file.name)


RESULTS_PAGE = Path("docs") / "results.md"  # the page of every snapshot's blocks (the README shows the verdict)


def repository_root(page: str | Path) -> Path:
    """The folder whose ``docs/results/`` holds the snapshots a page shows: the page's own folder, or the
    one above it when the page lies in a ``docs`` folder (``docs/results.md``, the default page)."""
    folder = Path(page).parent
    return folder.parent if folder.name == "docs" else folder


def check_config(config: str | None, tables: Path) -> None:
    """``config``, a config file given as the one the run was made with, must state nothing that the
    run's recorded pipeline config (``<tables>/../pipeline_config.json``) does not hold; a
    ``ValueError`` naming both files and the keys otherwise. A name that is no file, or tables without
    the record, cannot be checked and pass."""
    recorded = tables.parent / "pipeline_config.json"
    if config is None or not Path(config).is_file() or not recorded.is_file():
        return
    stated = load_yaml_file(config) or {}
    if not isinstance(stated, dict):
        raise ValueError(f"--config {config} is not a config (a mapping of keys)")
    keys = sorted(key for key, _ in compare_stated(stated, load_json_file(recorded)))
    if keys:
        raise ValueError(f"--config {config} is not the config {tables} was made with: {recorded} records other "
                         f"values of {', '.join(keys[:6])}{' ...' if len(keys) > 6 else ''}; give the config the run "
                         "was made with")


def update_readme(tables: str | Path, name: str, readme: str | Path = RESULTS_PAGE, root: str | Path = ".",
                  config: str | None = None, sections: Sequence[str] = (), report: str | Path | None = None,
                  figures: Sequence[str] = (), log=print) -> Path:
    """Copy ``<tables>/results.{csv,md}`` (and comparisons.csv, settings.csv where the run wrote
    them; settings.csv gains a column ``config``: ``config``, else ``name``) to
    ``docs/results/<name>/``, put the Markdown into the README's block ``name`` (which must exist)
    and refresh the README's verdict table where it has one. ``sections``: headings of the run's
    report (``report``, default ``<tables>/../report.md``) kept as ``excerpt.md`` and shown in the
    README's block ``excerpt:<name>`` (``report_sections``). ``figures``: stems of the report's
    figures copied with their captions into the snapshot and shown in the blocks
    ``figure:<name>.<stem>`` (``report_figure``). An excerpt or a figure of an earlier snapshot of
    ``name`` that this one does not give again is removed with its README block (``log`` says which),
    so no text of an earlier run stands under the new table. Everything is checked before anything
    is written: ``config`` against the run's record (``check_config``), every file copied a regular
    file (``regular_file``), the table holding no block marker line. Returns the snapshot folder."""
    for what, value in [("snapshot name", name), *(("figure", stem) for stem in figures)]:
        check_safe_name(what, value)  # a folder under docs/results and file stems: never '..' or a path
    readme, tables = Path(readme), Path(tables)
    text = readme.read_text(encoding="utf-8")
    require_block(text, name)  # before anything is copied
    missing = [str(tables / file) for file in REQUIRED if not (tables / file).is_file()]
    if missing:
        raise FileNotFoundError(f"{', '.join(missing)} not found; run the pipeline's results_table step first")
    check_config(config, tables)
    for file in REQUIRED + OPTIONAL + tuple(EVIDENCE):  # what is copied or read into the snapshot
        if (tables / file).exists() or (tables / file).is_symlink():
            regular_file(tables / file)
    tuned = tuning_files(tables.parent / "tune")
    check_no_marker_lines((tables / "results.md").read_text(encoding="utf-8"), str(tables / "results.md"))
    folder = Path(root) / SNAPSHOTS / name
    excerpt, pictures = None, {}
    if sections or figures:
        report = Path(report) if report is not None else tables.parent / "report.md"
        if not report.is_file():
            raise FileNotFoundError(f"{report} not found: the run's report holds the sections {list(sections)} "
                                    f"and figures {list(figures)}")
        source = report.read_text(encoding="utf-8")
    if sections:
        excerpt = report_sections(source, sections)
        text = fill_block(text, name, excerpt, "excerpt")
    here = Path(os.path.relpath(folder, readme.parent)).as_posix()  # the snapshot as the README links it
    for stem in figures:
        image, caption = report_figure(source, stem)
        image = (report.parent / image).resolve()
        if not image.is_relative_to(report.parent.resolve()) or not image.is_file():
            raise FileNotFoundError(f"figure {stem!r}: {image} is not a file beside the report {report}")
        # the run's tables the caption names are the snapshot's copies in the repository
        caption = re.sub(r"results/tables/(?=(?:results|comparisons|settings)\.csv)", f"{here}/", caption)
        pictures[stem] = (image, f"![{stem}]({here}/{stem}.png)\n\n{caption}".strip("\n"))
        text = fill_block(text, f"{name}.{stem}", pictures[stem][1], "figure")
    stale = stale_parts(text, folder, name, bool(sections), figures)
    for block, kind, _ in stale:
        if block_lines(text, *markers(block, kind)) is not None:
            text = fill_block(text, block, None, kind)
    folder.mkdir(parents=True, exist_ok=True)
    for block, kind, files in stale:
        for file in files:
            file.unlink(missing_ok=True)
        log(f"[readme] removed {kind}:{block} of an earlier snapshot (its block and {len(files)} file(s)): "
            f"not given again")
    for file in REQUIRED + OPTIONAL:
        if (tables / file).is_file():
            shutil.copyfile(tables / file, folder / file)
        elif (folder / file).is_file():  # a stale file of an earlier snapshot
            (folder / file).unlink()
    for file, columns in EVIDENCE.items():
        if (tables / file).is_file():
            frame = pd.read_csv(tables / file)
            save_csv(frame[[c for c in columns if c in frame]], folder / file)
        elif (folder / file).is_file():
            (folder / file).unlink()
    keep_tuning(tuned, folder / "tune")
    if (folder / "settings.csv").is_file():
        settings = pd.read_csv(folder / "settings.csv", keep_default_na=False)
        save_csv(settings.assign(config=config or name), folder / "settings.csv")
    if excerpt is not None:
        save_text(excerpt + "\n", folder / "excerpt.md")
    for stem, (image, body) in pictures.items():
        shutil.copyfile(image, folder / f"{stem}.png")
        save_text(body + "\n", folder / f"{stem}.md")
    md = (folder / "results.md").read_text(encoding="utf-8").strip("\n")
    save_text(fill_block(text, name, md), readme)
    update_verdicts(readme, Path(root) / SNAPSHOTS)
    front = Path(root) / "README.md"  # the front page's verdict, short table and headline
    if front.is_file() and front.resolve() != readme.resolve():
        update_verdicts(front, Path(root) / SNAPSHOTS)
    return folder
