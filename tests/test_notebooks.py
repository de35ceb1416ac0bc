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


@pytest.mark.slow
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


def answer(nb):
    """The text the notebook's last cell printed: its generated answer."""
    return "".join(o.get("text", "") for o in code_cells(nb)[-1].outputs if o.output_type == "stream")


def run_notebook(folder, name):
    nb = nbformat.read(folder / f"{name}.ipynb", as_version=4)
    NotebookClient(nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(folder)}}).execute()
    return nb


@pytest.mark.slow
def test_bound_notebook_answers_how_tight_the_bound_is(repository, smoke_results, monkeypatch):
    """Its last cell states, from the numbers, on how many runs the bound holds and is vacuous, the
    median tightness, and the bound across the smoke run's c̄ sweep (1 and 2)."""
    import pandas as pd

    monkeypatch.delenv("MR2_RESULTS", raising=False)
    text = answer(run_notebook(repository / "notebooks", "bound_tightness"))
    bound = pd.read_csv(smoke_results / "theory" / "bound.csv")
    n, vacuous = len(bound), int((bound["bound"] > 1).sum())
    holds = int((bound["bound"] >= bound["test_error"]).sum())
    assert f"holds on {holds} of {n} trained models and is vacuous (above 1" in text
    assert f"on {vacuous} of {n}" in text
    median = float((bound["bound"] / bound["test_error"]).median())
    assert f"the bound is {median:.3g} times the test error" in text or f"the bound is {median:.2e} times" in text
    assert "across mr2's c̄ sweep (1, 2)" in text


@pytest.mark.slow
def test_margins_notebook_answers_how_margins_move(repository, smoke_results, monkeypatch):
    """Its last cell states each group's mean γ_k after the first and the last epoch, recomputed here
    from the per-epoch log, and names the classes with the largest final γ_k."""
    import pandas as pd

    monkeypatch.delenv("MR2_RESULTS", raising=False)
    text = answer(run_notebook(repository / "notebooks", "margins"))
    epochs = pd.read_csv(smoke_results / "tables" / "epochs.csv")
    groups = pd.read_csv(smoke_results / "tables" / "groups.csv")
    rows = epochs[(epochs["method"] == "mr2") & (epochs["variant"] == "default") & (epochs["name"] == "gamma")
                  & epochs["class"].notna()]
    per_class = rows.groupby(["epoch", "class"])["value"].mean().reset_index()
    per_class = per_class.merge(groups.assign(**{"class": groups["class"].astype(float)}), on="class")
    first, last = per_class["epoch"].min(), per_class["epoch"].max()
    for group in ("easy", "medium", "hard"):
        at = per_class[per_class["group"] == group].groupby("epoch")["value"].mean()
        assert f"{group} classes {at[first]:.3f} → {at[last]:.3f}" in text
    assert f"from epoch {int(first)} to epoch {int(last)}" in text and "largest final γ_k:" in text
