"""The notebooks: committed without outputs, and executed headless on the smoke pipeline's results."""

from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"
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


@pytest.mark.parametrize("name", NAMES)
def test_runs_headless_on_smoke_results(name, smoke_results, tmp_path, monkeypatch):
    monkeypatch.setenv("MR2_RESULTS", str(smoke_results))  # the kernel inherits the environment
    nb = nbformat.read(NOTEBOOKS / f"{name}.ipynb", as_version=4)
    NotebookClient(nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}).execute()
    outputs = [o for c in code_cells(nb) for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    images = [o for o in outputs if "image/png" in o.get("data", {})]
    tables = [o for o in outputs if "text/html" in o.get("data", {})]
    assert len(images) >= 3 and len(tables) >= 2  # every figure and table cell produced its output
    assert all(c.execution_count is not None for c in code_cells(nb))
