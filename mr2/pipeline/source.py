"""The workflow's own source on the local disk when it is used as a module read from git.

A workflow that uses this one as a Snakemake module from a git source (``git+file://<repo>/workflow/
Snakefile@<ref>``, or ``github("<owner>/mr2", path="workflow/Snakefile", tag=...)`` as snakedeploy
writes it) has no folder holding the workflow's ``mr2``: Snakemake reads each of its files from git.
``checkout`` writes the tree of that commit once into a folder of its own, which the workflow then
imports at parse time and puts first on every job's PYTHONPATH, so the jobs run the code of the
module's commit, not another ``mr2`` that happens to be installed.

This file imports only the standard library: the workflow loads it by itself (from the git source)
before any other module of the package can be imported.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

#: what a checkout holds: the packages and the workflow folder (its schemas and the report's captions)
TREE = ("mr2", "theory", "workflow")


def commit_of(repository: str | os.PathLike, ref: str) -> str:
    """The full commit id that ``ref`` (a branch, a tag, a commit) names in git ``repository``."""
    res = subprocess.run(["git", "-C", str(repository), "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"],
                         capture_output=True, text=True)
    if res.returncode != 0 or not res.stdout.strip():
        raise ValueError(f"{repository}: {ref!r} names no commit")
    return res.stdout.strip()


def checkout(repository: str | os.PathLike, ref: str, root: str | os.PathLike) -> Path:
    """``<root>/<commit>``: the folders of ``TREE`` (those the commit has) at ``ref`` of git ``repository``, written once
    (a folder is complete or absent: it is written aside and renamed into place, so concurrent
    parses of the workflow, on a cluster's nodes too, never see half a tree)."""
    commit = commit_of(repository, ref)
    dest = Path(root).resolve() / commit
    if dest.is_dir():
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=f".{commit}.", dir=dest.parent))
    try:
        present = subprocess.run(["git", "-C", str(repository), "ls-tree", "--name-only", commit],
                                 capture_output=True, text=True, check=True).stdout.split()
        archive = subprocess.run(["git", "-C", str(repository), "archive", "--format=tar", commit, "--",
                                  *[name for name in TREE if name in present]], capture_output=True, check=True)
        subprocess.run(["tar", "-x", "-C", str(scratch)], input=archive.stdout, capture_output=True, check=True)
        try:
            os.rename(scratch, dest)
        except OSError:  # another parse wrote it first
            if not dest.is_dir():
                raise
    finally:
        if scratch.exists():
            shutil.rmtree(scratch)
    return dest
