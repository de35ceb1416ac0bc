"""One environment, many clones: two clones of the repository at different commits share one venv,
and each runs its own code through the scripts' command path (``scripts/env.sh``: ``python -m mr2``)
and in its notebooks, even when PYTHONPATH names the other clone."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import nbformat
import pytest
from conftest import REPO
from nbclient import NotebookClient

GIT = ["git", "-c", "user.name=test", "-c", "user.email=test@example.org", "-c", "commit.gpgsign=false"]
CODE = ("mr2", "theory", "notebooks", "scripts")
VERSION_B = "0.1.0+clone.b"


def git(*args, cwd):
    subprocess.run([*GIT, *args], cwd=cwd, check=True, capture_output=True, text=True)


@pytest.fixture(scope="module")
def clones(tmp_path_factory):
    """Clone a: this checkout's code, committed; clone b: ``git clone`` of a with one more commit that
    changes ``mr2.__version__``."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    root = tmp_path_factory.mktemp("clones")
    a, b = root / "a", root / "b"
    for name in CODE:
        shutil.copytree(REPO / name, a / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    shutil.copy2(REPO / "pyproject.toml", a / "pyproject.toml")
    git("init", "-q", cwd=a)
    git("add", "-A", cwd=a)
    git("commit", "-q", "-m", "clone a", cwd=a)
    subprocess.run(["git", "clone", "-q", str(a), str(b)], check=True, capture_output=True)
    init = b / "mr2" / "__init__.py"
    text = init.read_text(encoding="utf-8")
    version_a = text.split('__version__ = "')[1].split('"')[0]
    init.write_text(text.replace(f'__version__ = "{version_a}"', f'__version__ = "{VERSION_B}"'), encoding="utf-8")
    git("commit", "-q", "-am", "clone b: another version", cwd=b)
    assert version_a != VERSION_B
    return {a: version_a, b: VERSION_B}


def other(clones, clone):
    return next(c for c in clones if c != clone)


def test_each_clone_command_runs_its_own_code(clones, tmp_path):
    """``source scripts/env.sh`` (what run.sh and test.sh do), then ``python -m mr2 --version`` from
    another folder, with PYTHONPATH naming the other clone: each clone prints its own version."""
    for clone, version in clones.items():
        env = {**os.environ, "MR2_VENV": sys.prefix, "PYTHONPATH": str(other(clones, clone))}
        res = subprocess.run(["bash", "-c", f"source {clone}/scripts/env.sh && cd {tmp_path} && python -m mr2 --version"
                              " && python -c 'import mr2, theory; print(mr2.__file__); print(theory.__file__)'"],
                             capture_output=True, text=True, env=env, timeout=300)
        assert res.returncode == 0, res.stderr
        lines = res.stdout.split()
        assert lines[:2] == ["mr2", version]
        assert lines[2] == str(clone / "mr2" / "__init__.py") and lines[3] == str(clone / "theory" / "__init__.py")


def test_each_clone_notebook_runs_its_own_code(clones, tmp_path, monkeypatch):
    """A notebook's first cell, run by a kernel in the clone's notebooks/ folder whose environment
    names the other clone on PYTHONPATH, imports the clone's own mr2."""
    for clone, version in clones.items():
        monkeypatch.setenv("PYTHONPATH", str(other(clones, clone)))  # the kernel inherits the environment
        monkeypatch.setenv("MR2_RESULTS", str(tmp_path))
        folder = clone / "notebooks"
        nb = nbformat.read(folder / "margins.ipynb", as_version=4)
        first = next(c for c in nb.cells if c.cell_type == "code")
        nb.cells = [first, nbformat.v4.new_code_cell("import mr2\nprint(mr2.__version__, mr2.__file__)")]
        NotebookClient(nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(folder)}}).execute()
        assert nb.cells[1].outputs[0].text.split() == [version, str(clone / "mr2" / "__init__.py")]
