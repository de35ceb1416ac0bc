"""The notebooks: committed executed on the committed snapshot (``mr2.results.notebook_data``), so a
reader who just opened the repository sees their figures and answers; their text outputs are what
they produce now; they run headless from a repository's notebooks/ folder with no environment
variable, on the repository's results/ when a run made one (the smoke run here)."""

import shutil
from pathlib import Path

import nbformat
import pandas as pd
import pytest

from mr2.results import notebook_data as nd
from mr2.results.plotting import display_name
from mr2.results.statistics import t_interval

REPO = Path(__file__).resolve().parents[1]
NOTEBOOKS = REPO / "notebooks"
SNAPSHOT_LINE = f"Data: {nd.SNAPSHOT}, the committed snapshot"


def code_cells(nb):
    return [c for c in nb.cells if c.cell_type == "code"]


def text_outputs(nb) -> list[list[str]]:
    """Per code cell, its outputs as text: printed text, a table's HTML, an object's text, and for an
    image only that there is one (its bytes vary with the plotting library's version)."""
    out = []
    for cell in code_cells(nb):
        texts = []
        for o in cell.outputs:
            if o.output_type == "stream":
                texts.append(f"{o.name}: {o.text}")
            elif o.output_type == "error":
                texts.append(f"error: {o.ename}: {o.evalue}")
            else:
                data = o.get("data", {})
                texts += [f"{kind}: {data[kind]}" for kind in ("text/html", "text/plain") if kind in data]
                texts += ["image/png"] if "image/png" in data else []
        out.append(texts)
    return out


def committed(name):
    return nbformat.read(NOTEBOOKS / f"{name}.ipynb", as_version=4)


def test_every_notebook_is_tested():
    assert sorted(p.stem for p in NOTEBOOKS.glob("*.ipynb")) == sorted(nd.NOTEBOOKS)


@pytest.mark.parametrize("name", nd.NOTEBOOKS)
def test_committed_executed_on_the_snapshot(name):
    """Every code cell ran, in order, without an error; the first says it read the committed snapshot;
    the figures and tables are there, and the last cell printed the answer."""
    nb = committed(name)
    nbformat.validate(nb)
    cells = code_cells(nb)
    assert [c.execution_count for c in cells] == list(range(1, len(cells) + 1))
    assert not [o for c in cells for o in c.outputs if o.output_type == "error"]
    assert "MR2_RESULTS" in cells[0].source  # parameterised by the results folder
    assert cells[0].outputs[0].text.startswith(SNAPSHOT_LINE)
    outputs = [o for c in cells for o in c.outputs]
    assert len([o for o in outputs if "image/png" in o.get("data", {})]) >= 3
    assert len([o for o in outputs if "text/html" in o.get("data", {})]) >= 2
    assert len(answer(nb).splitlines()) >= 3


def repository(root: Path, results: Path | None = None) -> Path:
    """A repository layout at ``root``: pyproject.toml, notebooks/, the committed snapshot, and
    results/ linked to ``results`` when given."""
    root.mkdir(parents=True, exist_ok=True)
    shutil.copy2(REPO / "pyproject.toml", root / "pyproject.toml")
    shutil.copytree(NOTEBOOKS, root / "notebooks")
    shutil.copytree(REPO / nd.SNAPSHOT, root / nd.SNAPSHOT)
    if results is not None:
        (root / "results").symlink_to(results, target_is_directory=True)
    return root


@pytest.mark.slow
@pytest.mark.parametrize("name", nd.NOTEBOOKS)
def test_committed_outputs_are_what_the_notebook_produces_now(name, tmp_path, monkeypatch):
    """Re-executed from a fresh repository without results/, each cell's text outputs (its printed
    answer, its tables) are the committed ones, and it draws as many figures: no stale number.
    After a change, regenerate with ``python -m mr2.results.notebook_data execute``."""
    monkeypatch.delenv("MR2_RESULTS", raising=False)  # the kernel inherits the environment
    root = repository(tmp_path / "repo")
    now = nd.execute(root / "notebooks" / f"{name}.ipynb")
    assert text_outputs(now) == text_outputs(committed(name))


def answer(nb):
    """The text the notebook's last cell printed: its generated answer."""
    return "".join(o.get("text", "") for o in code_cells(nb)[-1].outputs if o.output_type == "stream")


@pytest.fixture(scope="module")
def smoke_repository(smoke_results, tmp_path_factory):
    """A repository layout whose results/ links to the smoke run's."""
    return repository(tmp_path_factory.mktemp("repo"), smoke_results)


@pytest.mark.slow
@pytest.mark.parametrize("name", nd.NOTEBOOKS)
def test_runs_from_notebooks_on_the_runs_results(name, smoke_repository, monkeypatch):
    """Where a run made results/, the notebooks read it (not the snapshot), with no environment variable."""
    monkeypatch.delenv("MR2_RESULTS", raising=False)
    nb = nd.execute(smoke_repository / "notebooks" / f"{name}.ipynb")
    outputs = [o for c in code_cells(nb) for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    assert code_cells(nb)[0].outputs[0].text.strip() == "Data: results (the pipeline's results)."
    images = [o for o in outputs if "image/png" in o.get("data", {})]
    tables = [o for o in outputs if "text/html" in o.get("data", {})]
    assert len(images) >= 3 and len(tables) >= 2  # every figure and table cell produced its output


@pytest.mark.slow
def test_bound_notebook_answers_how_tight_the_bound_is(smoke_repository, smoke_results, monkeypatch):
    """Its last cell states, from the numbers, MR²'s bound ÷ test error (mean over seeds with its
    interval) and whether its bound is vacuous, on how many runs the bound holds and is vacuous,
    the median tightness, and the bound across the smoke run's c̄ sweep (1 and 2)."""
    monkeypatch.delenv("MR2_RESULTS", raising=False)
    text = answer(nd.execute(smoke_repository / "notebooks" / "bound_tightness.ipynb"))
    bound = pd.read_csv(smoke_results / "theory" / "bound.csv")
    n, vacuous = len(bound), int((bound["bound"] > 1).sum())
    holds = int((bound["bound"] >= bound["test_error"]).sum())
    assert (f"Proposition 1 holds on {holds} and is vacuous (above 1, more than any error rate) on {vacuous} of {n}"
            in text)
    median = float((bound["bound"] / bound["test_error"]).median())
    assert f"the bound is {median:.3g} times the test error" in text or f"the bound is {median:.2e} times" in text
    mr2 = bound[(bound["method"] == "mr2") & (bound["variant"] == "default")]
    ratio = (mr2["bound"] / mr2["test_error"]).mean()
    word = "vacuous" if t_interval(mr2["bound"])["lo"] > 1 else "vacuous or not: not shown"
    assert f"{display_name('mr2')} {ratio:.3g} [" in text and f"], {word} (bound " in text
    assert "across mr2's c̄ sweep (1, 2)" in text


@pytest.mark.slow
def test_margins_notebook_answers_how_margins_move(smoke_repository, smoke_results, monkeypatch):
    """Its last cell states each group's mean γ_k after the first and the last epoch, each with an
    interval, recomputed here from the per-epoch log, and names the classes with the largest final γ_k."""
    monkeypatch.delenv("MR2_RESULTS", raising=False)
    text = answer(nd.execute(smoke_repository / "notebooks" / "margins.ipynb"))
    epochs = pd.read_csv(smoke_results / "tables" / "epochs.csv")
    groups = pd.read_csv(smoke_results / "tables" / "groups.csv")
    rows = epochs[(epochs["method"] == "mr2") & (epochs["variant"] == "default") & (epochs["name"] == "gamma")
                  & epochs["class"].notna()]
    per_class = rows.groupby(["epoch", "class"])["value"].mean().reset_index()
    per_class = per_class.merge(groups.assign(**{"class": groups["class"].astype(float)}), on="class")
    first, last = per_class["epoch"].min(), per_class["epoch"].max()
    for group in ("easy", "medium", "hard"):
        at = per_class[per_class["group"] == group].groupby("epoch")["value"].mean()
        assert f"{group} classes {at[first]:.3f} [" in text and f"] → {at[last]:.3f} [" in text
    assert f"from epoch {int(first)} to epoch {int(last)}" in text and "largest final γ_k" in text
    assert "times the easy classes' (mean of the per-seed ratios): " in text


# ----------------------------------------------------------------------------- where the notebooks read
def tables_at(folder: Path, nested: bool) -> Path:
    """A results folder (tables/, theory/) or a flat snapshot, each table a one-row CSV naming its place."""
    for name, sub in nd.RESULTS_LAYOUT.items():
        path = folder / sub / f"{name}.csv" if nested else folder / f"{name}.csv"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"where,class\n{'nested' if nested else 'flat'} {name},1\n")
    return folder


def test_data_folder_prefers_the_override_then_results_then_the_snapshot(tmp_path):
    root = tmp_path / "repo"
    (root / "notebooks").mkdir(parents=True)
    (root / "pyproject.toml").write_text("")
    with pytest.raises(FileNotFoundError, match="missing results folder .*docs/results/notebooks"):
        nd.data_folder(start=root / "notebooks")  # neither results/ nor the snapshot
    tables_at(root / nd.SNAPSHOT, nested=False)
    assert nd.data_folder(start=root / "notebooks") == root / nd.SNAPSHOT
    assert nd.describe(root / nd.SNAPSHOT, start=root / "notebooks").startswith(SNAPSHOT_LINE)
    tables_at(root / "results", nested=True)
    assert nd.data_folder(start=root / "notebooks") == root / "results"
    assert nd.describe(root / "results", start=root) == "Data: results (the pipeline's results)."
    other = tables_at(tmp_path / "elsewhere", nested=True)
    assert nd.data_folder(str(other), start=root) == other
    assert nd.describe(other, start=root) == f"Data: {other} (the pipeline's results)."
    with pytest.raises(FileNotFoundError, match="missing results folder"):
        nd.data_folder(str(tmp_path / "nowhere"), start=root)
    with pytest.raises(FileNotFoundError, match="no repository root"):
        nd.data_folder(start=tmp_path)


@pytest.mark.parametrize("nested", [True, False], ids=["results-folder", "flat-snapshot"])
def test_tables_are_read_from_either_layout(tmp_path, nested):
    folder = tables_at(tmp_path, nested)
    tables = nd.read_notebook_tables(folder, ["per_class", "bound"])
    layout = "nested" if nested else "flat"
    assert [tables[n]["where"].item() for n in ("per_class", "bound")] == [f"{layout} per_class", f"{layout} bound"]
    assert str(tables["per_class"]["class"].dtype) == "Int64"
    with pytest.raises(FileNotFoundError, match="missing table missing: neither"):
        nd.table_path(folder, "missing")


def test_a_snapshot_keeps_the_columns_the_notebooks_read(tmp_path):
    results = tmp_path / "results"
    keys = {"dataset": ["d"] * 2, "method": ["mr2"] * 2, "variant": ["default"] * 2, "seed": [0, 1]}
    frames = {
        "per_class": pd.DataFrame({**keys, "class": [0, 0], "class_name": ["a"] * 2, "accuracy": [0.5, 0.6],
                                   "gamma": [1.0, 1.1], "a": [2.0, 2.1], "spread": [0.1, 0.2], "test_a": [9.0, 9.0]}),
        "runs": pd.DataFrame({**keys, "top1": [0.5, 0.6], "config.tags.sweep": [None, None],
                              "config.method.options.c_bar": [1.0, 1.0], "config.data.root": ["/x", "/x"]}),
        "epochs": pd.DataFrame({**keys, "epoch": [1, 1], "class": [0, None], "name": ["gamma", "train_loss"],
                                "value": [1.0, 2.0]}),
        "groups": pd.DataFrame({"dataset": ["d"], "class": [0], "group": ["easy"]}),
        "bound": pd.DataFrame({**keys, "bound": [30.0, 40.0]}),
    }
    for name, frame in frames.items():
        path = results / nd.RESULTS_LAYOUT[name] / f"{name}.csv"
        path.parent.mkdir(parents=True, exist_ok=True)
        frame.to_csv(path, index=False)
    written = nd.write_snapshot(results, tmp_path / "snap")
    assert sorted(p.name for p in written) == sorted(f"{n}.csv" for n in frames)
    snap = {n: pd.read_csv(tmp_path / "snap" / f"{n}.csv") for n in frames}
    assert "test_a" not in snap["per_class"] and "spread" in snap["per_class"]
    assert list(snap["runs"].columns) == [*keys, "config.tags.sweep", "config.method.options.c_bar"]
    assert snap["epochs"]["name"].tolist() == ["gamma"]
    assert snap["bound"]["bound"].tolist() == [30.0, 40.0] and len(snap["groups"]) == 1
