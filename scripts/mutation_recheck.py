"""Recheck the survivors of a mutation run against the tests as they are now.

    python scripts/mutation_recheck.py WORK [--only REGEX] [PYTEST_ARG ...]

WORK is the work folder of one target of ``scripts/mutation.sh`` (``$MUTATION_DIR/<target>``), where
mutmut keeps its mutants. Every mutant mutmut reported as survived is applied, one at a time, to a
copy of this working tree (its tracked and untracked, not ignored files) by replacing the lines its
``mutmut show`` diff removes with those it adds; then ``pytest -x PYTEST_ARG ...`` runs in the copy,
and the file is restored. A mutant whose lines are no longer in the source (the code changed since
the run) is reported as ``gone``. Prints one line per mutant, ``<name> killed|survived|gone``, then
the counts; exits 1, before any mutant, when the tests fail or select nothing unmutated. ``--only``
keeps the survivors whose name matches REGEX (``re.search``), e.g. one function's mutants with the
tests that reach it.
Environment: MUTMUT (default: the mutmut next to this Python), MR2_MUTATION=1 is set
for the tests as mutation.sh does. Long work shows one line per mutant as it goes.
"""

from __future__ import annotations

import collections
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def survivors(work: Path, mutmut: str, only: str = "") -> list[str]:
    """The names of the mutants ``mutmut results`` lists as survived in ``work`` that match ``only``."""
    out = subprocess.run([mutmut, "results"], cwd=work, capture_output=True, text=True, check=True).stdout
    names = [line.rsplit(":", 1)[0].strip() for line in out.splitlines() if line.rstrip().endswith(": survived")]
    return [name for name in names if re.search(only, name)]


def mutant_change(work: Path, mutmut: str, name: str) -> tuple[str, str, str]:
    """(path, old text, new text) of one mutant, from the unified diff ``mutmut show`` prints:
    the old text is the hunk's context and removed lines, the new its context and added lines."""
    diff = subprocess.run([mutmut, "show", name], cwd=work, capture_output=True, text=True, check=True).stdout
    lines = diff.splitlines()
    path = next(line[4:].strip() for line in lines if line.startswith("--- "))
    body = [line for line in lines if line[:1] in (" ", "-", "+") and not line.startswith(("---", "+++"))]
    old = "\n".join(line[1:] for line in body if line[:1] in (" ", "-"))
    new = "\n".join(line[1:] for line in body if line[:1] in (" ", "+"))
    return path, old, new


def copy_tree(dest: Path) -> None:
    """This working tree's tracked and untracked, not ignored files into ``dest`` (``copy_tree.sh``,
    the copy mutation.sh runs in)."""
    subprocess.run(["bash", str(ROOT / "scripts" / "copy_tree.sh"), str(dest)], check=True)


def recheck(work: Path, pytest_args: list[str], mutmut: str, only: str = "") -> collections.Counter | None:
    """The verdict of every survivor, counted; None when the tests fail (or select nothing) without a
    mutant, so that no failure is mistaken for a kill."""
    counts: collections.Counter = collections.Counter()
    names = survivors(work, mutmut, only)
    print(f"{len(names)} survivors in {work}", flush=True)
    with tempfile.TemporaryDirectory(prefix="mr2-recheck-") as tmp:
        copy = Path(tmp)
        copy_tree(copy)
        env = {**os.environ, "PYTHONPATH": str(copy), "MR2_MUTATION": "1"}

        def tests_fail() -> bool:
            return subprocess.run([sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", *pytest_args],
                                  cwd=copy, env=env, capture_output=True, text=True).returncode != 0

        if tests_fail():
            print(f"mutation_recheck: the tests {' '.join(pytest_args)!r} fail or select nothing without a mutant",
                  file=sys.stderr)
            return None
        for name in names:
            path, old, new = mutant_change(work, mutmut, name)
            source = copy / path
            original = source.read_text(encoding="utf-8")
            if original.count(old) != 1:
                verdict = "gone"
            else:
                source.write_text(original.replace(old, new), encoding="utf-8")
                try:
                    verdict = "killed" if tests_fail() else "survived"
                finally:
                    source.write_text(original, encoding="utf-8")
            counts[verdict] += 1
            print(f"{name} {verdict}", flush=True)
    print(", ".join(f"{k} {counts[k]}" for k in ("killed", "survived", "gone")), flush=True)
    return counts


def main(argv: list[str]) -> int:
    if not argv or not Path(argv[0]).is_dir():
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        print(f"mutation_recheck: no work folder {argv[0]!r}" if argv else "mutation_recheck: name a work folder",
              file=sys.stderr)
        return 2
    mutmut = os.environ.get("MUTMUT") or str(Path(sys.executable).parent / "mutmut")
    work, rest, only = Path(argv[0]), argv[1:], ""
    if rest[:1] == ["--only"]:
        if len(rest) < 2:
            print("mutation_recheck: --only needs a regular expression", file=sys.stderr)
            return 2
        only, rest = rest[1], rest[2:]
        try:
            re.compile(only)
        except re.error as error:
            print(f"mutation_recheck: --only {only!r} is not a regular expression: {error}", file=sys.stderr)
            return 2
    return 0 if recheck(work, rest, mutmut, only) is not None else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
