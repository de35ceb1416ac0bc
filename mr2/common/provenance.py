"""Which code made a run: the git commit of the checkout that holds the ``mr2`` package, recorded in
every run's ``conditions`` (``mr2.engine.record.run_conditions``) beside the CPU and its kernels.

``code_version()`` is ``<12 hex digits of HEAD>``, with ``+changes`` when a tracked file differs
from that commit (``git status --porcelain --untracked-files=no``: the results and other ignored or
untracked files do not count), or ``not recorded`` when the package is not in a git checkout of
its own (installed from a wheel, a copied tree without ``.git``) or git cannot answer. It is read
once per process: the code a process runs is the code it imported."""

from __future__ import annotations

import functools
import subprocess
from pathlib import Path

NOT_RECORDED = "not recorded"
CHANGED = "+changes"  # tracked files differ from the commit: the commit alone does not name the code
GIT_TIMEOUT_S = 10


def package_root() -> Path:
    """The folder that holds the ``mr2`` package (the repository root in a checkout)."""
    return Path(__file__).resolve().parents[2]


def _git(root: Path, *args: str) -> str:
    # --no-optional-locks: runs training side by side must not race for the index's lock
    return subprocess.run(["git", "--no-optional-locks", "-C", str(root), *args], capture_output=True, text=True, check=True,
                          timeout=GIT_TIMEOUT_S).stdout.strip()


def read_code_version(root: Path) -> str:
    """The code version of the checkout at ``root`` (see the module docstring); ``root`` must hold
    ``.git`` itself, so a package inside another project's repository is not named by that one."""
    if not (root / ".git").exists():
        return NOT_RECORDED
    try:
        commit = _git(root, "rev-parse", "--short=12", "HEAD")
        changed = _git(root, "status", "--porcelain", "--untracked-files=no")
    except (OSError, subprocess.SubprocessError):
        return NOT_RECORDED
    if not commit:
        return NOT_RECORDED
    return commit + (CHANGED if changed else "")


@functools.lru_cache(maxsize=1)
def code_version() -> str:
    """``read_code_version`` of the checkout this process imported ``mr2`` from, read once."""
    return read_code_version(package_root())
