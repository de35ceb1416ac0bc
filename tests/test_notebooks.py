"""The notebooks: committed without outputs, and executed headless from a repository's notebooks/
folder on the smoke pipeline's results, with no environment variable."""

import shutil
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

REPO = Path(__file__).resolve().parents[1]
NOTEBOOKS = REPO / "notebooks"
NAMES = ["bound_tightness", "margins"]


def code_cells(nb):
    return [c for c in nb.cells if c.cell_type == "code"]


@pytest.mark.parametrize("name", NAMES)
def test_committed_without_outputs(name):
    nb = nbformat.read(NOTEBOOKS / f"{name}.ipynb", as_version=4)
    nbformat.validate(nb)
    assert all(c.outputs == [] and c.execution_count is None for c in code_cells(nb))
    assert "MR2_RESULTS" in code_cells(nb)[0].source  # parameterised by the results folder


def test_every_notebook_is_tested():
    assert sorted(p.stem for p in NOTEBOOKS.glob("*.ipynb")) == sorted(NAMES)


@pytest.fixture(scope="module")
def repository(smoke_results, tmp_path_factory):
    """A repository layout (pyproject.toml, notebooks/) whose results/ links to the smoke run's."""
    root = tmp_path_factory.mktemp("repo")
    shutil.copy2(REPO / "pyproject.toml", root / "pyproject.toml")
    shutil.copytree(NOTEBOOKS, root / "notebooks")
    (root / "results").symlink_to(smoke_results, target_is_directory=True)
    return root


@pytest.mark.parametrize("name", NAMES)
def test_runs_from_notebooks_without_environment(name, repository, monkeypatch):
    monkeypatch.delenv("MR2_RESULTS", raising=False)  # the kernel inherits the environment
    folder = repository / "notebooks"
    nb = nbformat.read(folder / f"{name}.ipynb", as_version=4)
    nb.cells.insert(2, nbformat.v4.new_code_cell("print(RESULTS.resolve())"))  # which folder it read
    NotebookClient(nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(folder)}}).execute()
    outputs = [o for c in code_cells(nb) for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    assert code_cells(nb)[1].outputs[0].text.strip() == str((repository / "results").resolve())
    images = [o for o in outputs if "image/png" in o.get("data", {})]
    tables = [o for o in outputs if "text/html" in o.get("data", {})]
    assert len(images) >= 3 and len(tables) >= 2  # every figure and table cell produced its output
    assert all(c.execution_count is not None for c in code_cells(nb))
