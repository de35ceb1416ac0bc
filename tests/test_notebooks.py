"""The notebooks: committed executed on the committed snapshots (``mr2.results.notebook_data``), so a
reader who just opened the repository sees their figures and answers. What per-class tables decide
stands on the tuned Fashion-MNIST run set (16 seeds); only the bound table and the per-epoch log come
from the smoke-sized run, the one committed run set that kept them, and the notebooks say which data
each part reads. Their text outputs are what they produce now; the numbers of their answers are
recomputed here from the snapshots' CSVs; they run headless from a repository's notebooks/ folder with
no environment variable, on the repository's results/ when a run made one (the smoke run here)."""

import math
import re
import shutil
from pathlib import Path

import nbformat
import numpy as np
import pandas as pd
import pytest
from scipy import stats

from mr2.results import notebook_data as nd
from mr2.results.plotting import display_name
from mr2.results.statistics import t_interval

REPO = Path(__file__).resolve().parents[1]
NOTEBOOKS = REPO / "notebooks"
EVIDENCE, SMOKE = REPO / nd.EVIDENCE_SNAPSHOT, REPO / nd.SMOKE_SNAPSHOT
#: per notebook, each part's name and the snapshot it reads: its first cell prints a line per part,
#: its answer opens each part with one
PARTS = {
    "bound_tightness": {"first": [("Part 1, the whole bound", SMOKE), ("Part 2, without Λ", EVIDENCE)],
                        "answer": [("Part 1, the whole bound", SMOKE), ("Part 2, without Λ", EVIDENCE)]},
    "margins": {"first": [("Final margins", EVIDENCE), ("Per epoch", SMOKE)],
                "answer": [("Corollary 1 on the final margins", EVIDENCE), ("Longer training", EVIDENCE),
                           ("Per epoch", SMOKE)]},
}
WHAT = {EVIDENCE: "the committed tuned Fashion-MNIST run set", SMOKE: "the committed smoke-sized run"}


def data_lines(text: str, parts) -> None:
    """The lines of ``text`` that name their data are, in order, ``parts``: each part's name, then
    "Data: <snapshot>, <what it is>"."""
    lines = [line for line in text.splitlines() if " Data: " in line]
    assert len(lines) == len(parts), lines
    for line, (part, folder) in zip(lines, parts):
        assert line.startswith(part) and f"Data: {folder.relative_to(REPO).as_posix()}, {WHAT[folder]}" in line, line


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


def answer(nb):
    """The text the notebook's last cell printed: its generated answer."""
    return "".join(o.get("text", "") for o in code_cells(nb)[-1].outputs if o.output_type == "stream")


def flat(text: str) -> str:
    return " ".join(text.split())


def test_every_notebook_is_tested():
    assert sorted(p.stem for p in NOTEBOOKS.glob("*.ipynb")) == sorted(nd.NOTEBOOKS) == sorted(PARTS)


@pytest.mark.parametrize("name", nd.NOTEBOOKS)
def test_committed_executed_on_the_snapshots(name):
    """Every code cell ran, in order, without an error; the first says which snapshot each part read
    (the tuned run set for the per-class tables, the smoke run for what only it kept), and the answer
    says it again before each part; the figures and tables are there."""
    nb = committed(name)
    nbformat.validate(nb)
    cells = code_cells(nb)
    assert [c.execution_count for c in cells] == list(range(1, len(cells) + 1))
    assert not [o for c in cells for o in c.outputs if o.output_type == "error"]
    assert "MR2_RESULTS" in cells[0].source  # parameterised by the results folder
    data_lines(cells[0].outputs[0].text, PARTS[name]["first"])
    data_lines(answer(nb), PARTS[name]["answer"])
    outputs = [o for c in cells for o in c.outputs]
    assert len([o for o in outputs if "image/png" in o.get("data", {})]) >= 4
    assert len([o for o in outputs if "text/html" in o.get("data", {})]) >= 3
    assert len(answer(nb).splitlines()) >= 6


# ----------------------------------------------------------------------------- the answers, recomputed
def tuned():
    """The tuned run set's per-class table (default variants) with each class's group in its dataset."""
    per_class = pd.read_csv(EVIDENCE / "per_class.csv")
    groups = pd.read_csv(EVIDENCE / "groups.csv")
    return per_class[per_class["variant"] == "default"].merge(groups, on=["dataset", "class"]), groups


def interval(values, digits: int) -> str:
    """``mean [lo, hi]`` with a 95 % t-interval, computed here with scipy (not the library's t_interval)."""
    v = np.asarray(values, dtype=float)
    half = stats.t.ppf(0.975, len(v) - 1) * v.std(ddof=1) / math.sqrt(len(v))
    return f"{v.mean():.{digits}f} [{v.mean() - half:.{digits}f}, {v.mean() + half:.{digits}f}]"


def runs_of(per_class, dataset, method):
    part = per_class[(per_class["dataset"] == dataset) & (per_class["method"] == method)]
    return [run.sort_values("class") for _, run in part.groupby("seed")]


def test_the_margins_answer_is_corollary_1_on_the_16_seeds():
    """Per method with class-wise margins: the exponent e of γ_k ∝ a_k^e (ordinary least squares by hand,
    per seed) with its interval, the largest deviation from c̄·K·a_k^{1/3}/Σ_j a_j^{1/3}; MR²'s spread
    of γ and a; and the hard classes' mean γ_k over the easy classes' per seed, a word only when its
    interval excludes 1."""
    per_class, _ = tuned()
    text = flat(answer(committed("margins")))
    assert "fashion_mnist (16 seeds): the final margins grow as γ_k ∝ a_k^e" in text
    for method in ("mr2", "mr2_no_rep"):
        slopes, worst = [], 0.0
        for run in runs_of(per_class, "fashion_mnist", method):
            x, y = np.log(run["a"].to_numpy()), np.log(run["gamma"].to_numpy())
            slopes.append(((x - x.mean()) * (y - y.mean())).sum() / ((x - x.mean()) ** 2).sum())
            root = run["a"].to_numpy() ** (1 / 3)
            corollary = run["gamma"].mean() * len(root) * root / root.sum()
            worst = max(worst, np.abs(run["gamma"].to_numpy() / corollary - 1).max())
        assert len(slopes) == 16
        assert f"{display_name(method)} e = {interval(slopes, 3)}" in text
        assert f"every γ_k within {100 * worst:.2f} % of Corollary 1's" in text
        lo = float(interval(slopes, 9).split("[")[1].split(",")[0])
        hi = float(interval(slopes, 9).split(", ")[1].rstrip("]"))
        word = "1/3 inside the interval" if lo <= 1 / 3 <= hi else ("flatter" if hi < 1 / 3 else "steeper")
        assert f"{interval(slopes, 3)} ({word}" in text
    mr2 = runs_of(per_class, "fashion_mnist", "mr2")
    gamma = [r["gamma"].max() / r["gamma"].min() for r in mr2]
    a = [r["a"].max() / r["a"].min() for r in mr2]
    assert f"γ_max/γ_min = {interval(gamma, 3)} where a_k spans a_max/a_min = {interval(a, 3)}" in text
    ratio = [r[r["group"] == "hard"]["gamma"].mean() / r[r["group"] == "easy"]["gamma"].mean() for r in mr2]
    lo, hi = (float(v) for v in interval(ratio, 9).split("[")[1].rstrip("]").split(", "))
    assert hi < 1  # on this run set the hard classes get the smaller margins
    assert f"the hard classes' mean γ_k is {interval(ratio, 3)} times the easy classes'" in text
    assert f"{interval(ratio, 3)} times the easy classes' (their a_k: " in text and "smaller: the margins favour" in text


def test_the_margins_answer_compares_20_with_80_epochs_on_the_same_seeds():
    """Each group's mean γ_k of MR² after 20 epochs (seeds 0-2 of the 16) and after 80 (the convergence
    check's runs of the same seeds), each with its interval over the three seeds."""
    per_class, _ = tuned()
    groups = per_class[per_class["dataset"] == "fashion_mnist"][["class", "group"]].drop_duplicates()
    text = flat(answer(committed("margins")))
    mr2 = per_class[per_class["method"] == "mr2"]
    seeds = sorted(set(mr2[mr2["dataset"] == "fashion_mnist"]["seed"]) & set(mr2[mr2["dataset"] == "fashion_mnist.x4"]["seed"]))
    assert seeds == [0, 1, 2]
    assert "fashion_mnist: MR²'s margins γ_k from epoch 20 to epoch 80" in text
    for group in ("easy", "medium", "hard"):
        means = []
        for dataset in ("fashion_mnist", "fashion_mnist.x4"):
            part = mr2[(mr2["dataset"] == dataset) & mr2["seed"].isin(seeds)].drop(columns="group")
            part = part.merge(groups, on="class")  # the 20-epoch setting's groups for both
            means.append(part[part["group"] == group].groupby("seed")["gamma"].mean())
        assert f"{group} classes {interval(means[0], 3)} → {interval(means[1], 3)}" in text


def test_the_bound_answer_compares_complexity_terms_without_lambda():
    """At equal Λ and N each method's complexity term over ERM's is sqrt(Σ(a_k+1)/γ_k² ÷ ERM's) per seed;
    Corollary 1's γ against uniform γ at the same c̄ is sqrt((Σ b_k^{1/3})³ / (K² Σ b_k)), b = a + 1
    (Corollary 1's minimum over the uniform sum), whose range over runs the answer gives."""
    per_class, _ = tuned()
    text = flat(answer(committed("bound_tightness")))
    sums = {m: np.array([((r["a"] + 1) / r["gamma"] ** 2).sum() for r in runs_of(per_class, "fashion_mnist", m)])
            for m in ("erm", "mr2", "mr2_uniform", "mr2_no_rep")}
    assert "fashion_mnist (16 seeds): at equal Λ and N, the complexity term over ERM's (c̄ = 1) is" in text
    for method in ("mr2", "mr2_uniform", "mr2_no_rep"):
        assert f"{display_name(method)} (c̄ = 0.302) {interval(np.sqrt(sums[method] / sums['erm']), 2)}, larger" in text
    ratios = []
    for method in ("erm", "mr2", "mr2_uniform", "mr2_no_rep"):
        for run in runs_of(per_class, "fashion_mnist", method):
            b = run["a"].to_numpy() + 1
            ratios.append(math.sqrt(np.cbrt(b).sum() ** 3 / (len(b) ** 2 * b.sum())))
    assert f"Corollary 1's γ gives a complexity term {min(ratios):.3f} to {max(ratios):.3f} times uniform γ's" in text


def test_the_bound_answer_of_the_smoke_run_is_its_bound_tables():
    """Part 1 stands on the smoke snapshot's bound table: on how many runs the bound holds and is
    vacuous, and the median bound ÷ test error."""
    bound = pd.read_csv(SMOKE / "bound.csv")
    text = flat(answer(committed("bound_tightness")))
    n, vacuous = len(bound), int((bound["bound"] > 1).sum())
    holds = int((bound["bound"] >= bound["test_error"]).sum())
    assert f"Proposition 1 holds on {holds} and is vacuous (above 1, more than any error rate) on {vacuous} of {n}" in text
    assert f"the bound is {float((bound['bound'] / bound['test_error']).median()):.3g} times the test error" in text


def test_the_theory_page_quotes_only_numbers_the_notebooks_show():
    """Every decimal number of docs/theory.md's notebook section (45.5, 0.330 [0.328, 0.331], +0.77 ...)
    is in the committed notebooks' text outputs, which the tests above recompute."""
    page = (REPO / "docs" / "theory.md").read_text(encoding="utf-8")
    section = page[page.index("## Notebooks (`notebooks/`)"):]
    shown = " ".join(t for name in nd.NOTEBOOKS for cell in text_outputs(committed(name)) for t in cell)
    quoted = re.findall(r"(?<![\w.])\d+\.\d+", section)
    assert len(quoted) >= 20
    assert [number for number in quoted if number not in shown] == []


# ----------------------------------------------------------------------------- re-executed
def repository(root: Path, results: Path | None = None) -> Path:
    """A repository layout at ``root``: pyproject.toml, notebooks/, the committed snapshots, and
    results/ linked to ``results`` when given."""
    root.mkdir(parents=True, exist_ok=True)
    shutil.copy2(REPO / "pyproject.toml", root / "pyproject.toml")
    shutil.copytree(NOTEBOOKS, root / "notebooks")
    for snapshot in nd.SNAPSHOTS:
        shutil.copytree(REPO / snapshot, root / snapshot)
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


@pytest.fixture(scope="module")
def smoke_repository(smoke_results, tmp_path_factory):
    """A repository layout whose results/ links to the smoke run's."""
    return repository(tmp_path_factory.mktemp("repo"), smoke_results)


@pytest.mark.slow
@pytest.mark.parametrize("name", nd.NOTEBOOKS)
def test_runs_from_notebooks_on_the_runs_results(name, smoke_repository, monkeypatch):
    """Where a run made results/, every part reads it (not the snapshots), with no environment variable."""
    monkeypatch.delenv("MR2_RESULTS", raising=False)
    nb = nd.execute(smoke_repository / "notebooks" / f"{name}.ipynb")
    outputs = [o for c in code_cells(nb) for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    lines = code_cells(nb)[0].outputs[0].text.splitlines()
    assert len(lines) == 2 and all(line.endswith("Data: results (the pipeline's results).") for line in lines)
    images = [o for o in outputs if "image/png" in o.get("data", {})]
    tables = [o for o in outputs if "text/html" in o.get("data", {})]
    assert len(images) >= 4 and len(tables) >= 3  # every figure and table cell produced its output


@pytest.mark.slow
def test_bound_notebook_answers_how_tight_the_bound_is(smoke_repository, smoke_results, monkeypatch):
    """On a run's results/, its last cell states, from the numbers, MR²'s bound ÷ test error (mean over
    seeds with its interval) and whether its bound is vacuous, on how many runs the bound holds and is
    vacuous, the median tightness, and the bound across the smoke run's c̄ sweep (1 and 2)."""
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
    """On a run's results/, its last cell states each group's mean γ_k after the first and the last epoch,
    each with an interval, recomputed here from the per-epoch log, and names the classes with the
    largest final γ_k."""
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
def tables_at(folder: Path, nested: bool, names=tuple(nd.RESULTS_LAYOUT)) -> Path:
    """A results folder (tables/, theory/) or a flat snapshot, each table of ``names`` a one-row CSV
    naming its place."""
    for name in names:
        sub = nd.RESULTS_LAYOUT[name]
        path = folder / sub / f"{name}.csv" if nested else folder / f"{name}.csv"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"where,class\n{'nested' if nested else 'flat'} {name},1\n")
    return folder


def test_data_folder_prefers_the_override_then_results_then_the_richest_snapshot_with_the_tables(tmp_path):
    root = tmp_path / "repo"
    (root / "notebooks").mkdir(parents=True)
    (root / "pyproject.toml").write_text("")
    with pytest.raises(FileNotFoundError, match="missing results folder .*no committed snapshot holds"):
        nd.data_folder(start=root / "notebooks")  # neither results/ nor a snapshot
    tables_at(root / nd.SMOKE_SNAPSHOT, nested=False)  # every table
    tables_at(root / nd.EVIDENCE_SNAPSHOT, nested=False, names=("per_class", "groups", "convergence"))
    start = root / "notebooks"
    assert nd.data_folder(start=start, tables=["per_class", "groups"]) == root / nd.EVIDENCE_SNAPSHOT
    assert nd.data_folder(start=start, tables=["per_class", "epochs"]) == root / nd.SMOKE_SNAPSHOT
    assert nd.data_folder(start=start, tables=["bound"]) == root / nd.SMOKE_SNAPSHOT
    with pytest.raises(FileNotFoundError, match=r"holds the tables \['nothing'\]"):
        nd.data_folder(start=start, tables=["nothing"])
    for snapshot, line in ((nd.EVIDENCE_SNAPSHOT, "the committed tuned Fashion-MNIST run set"),
                           (nd.SMOKE_SNAPSHOT, "the committed smoke-sized run")):
        assert nd.describe(root / snapshot, start=start).startswith(f"Data: {snapshot}, {line}")
    tables_at(root / "results", nested=True)
    assert nd.data_folder(start=start, tables=["per_class"]) == root / "results"
    assert nd.data_folder(start=start, tables=["bound"]) == root / "results"
    assert nd.describe(root / "results", start=root) == "Data: results (the pipeline's results)."
    other = tables_at(tmp_path / "elsewhere", nested=True)
    assert nd.data_folder(str(other), start=root, tables=["epochs"]) == other
    assert nd.describe(other, start=root) == f"Data: {other} (the pipeline's results)."
    with pytest.raises(FileNotFoundError, match="missing results folder"):
        nd.data_folder(str(tmp_path / "nowhere"), start=root)
    with pytest.raises(FileNotFoundError, match="no repository root"):
        nd.data_folder(start=tmp_path)


def test_the_committed_snapshots_hold_what_the_notebooks_read():
    """The tuned run set holds the per-class tables (and no per-epoch log or bound table, which is why the
    smoke run is read for those); the smoke snapshot holds every table."""
    root = REPO / "notebooks"
    assert nd.data_folder(start=root, tables=["per_class", "groups", "convergence"]) == EVIDENCE
    assert nd.data_folder(start=root, tables=["bound", "per_class", "runs"]) == SMOKE
    assert nd.data_folder(start=root, tables=["epochs", "per_class", "groups"]) == SMOKE
    assert nd._table(EVIDENCE, "epochs") is None and nd._table(EVIDENCE, "bound") is None


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


# ----------------------------------------------------------------------------- the notebooks' helpers
def test_check_epochs_lays_a_convergence_checks_two_runs_out_as_two_epochs():
    """Each seed that ran both: the setting's final values at its epochs, the check's at the check's
    (per method: a method may train its own epochs), under the setting's name; a seed of one side only,
    another variant and a row without epochs are left out."""
    rows = []
    for dataset, seeds in (("d", (0, 1, 2)), ("d.x4", (0, 1, 5))):
        for method in ("erm", "mr2"):
            for seed in seeds:
                for k in (0, 1):
                    rows.append({"dataset": dataset, "method": method, "variant": "default", "seed": seed, "class": k,
                                 "gamma": 10 * seed + k + (0.5 if dataset == "d.x4" else 0.0), "a": 100.0 + k})
    rows.append({**rows[0], "variant": "lam=0", "gamma": -1.0})
    per_class = pd.DataFrame(rows)
    convergence = pd.DataFrame({"dataset": ["d", "d", "d"], "check": ["d.x4"] * 3, "method": ["erm", "mr2", "mr2"],
                                "variant": ["default", "default", "lam=0"], "epochs": [20, 10, None],
                                "check_epochs": [80, 40, 40]})
    log = nd.check_epochs(per_class, convergence)
    assert list(log.columns) == nd.EPOCH_COLUMNS and set(log["dataset"]) == {"d"} and set(log["seed"]) == {0, 1}
    assert set(log["variant"]) == {"default"}
    epochs = log.groupby("method")["epoch"].unique().map(sorted).to_dict()
    assert epochs == {"erm": [20, 80], "mr2": [10, 40]}
    gamma = log[(log["name"] == "gamma") & (log["method"] == "mr2")].set_index(["epoch", "seed", "class"])["value"]
    assert gamma[(10, 1, 1)] == 11.0 and gamma[(40, 1, 1)] == 11.5
    assert set(log["name"]) == {"gamma", "a"} and len(log) == 2 * 2 * 2 * 2 * 2  # methods, epochs, seeds, classes, names
    assert nd.check_epochs(per_class, convergence.iloc[:0]).empty


def planted(method, a, gamma, seed=0, dataset="d"):
    k = len(a)
    return pd.DataFrame({"dataset": dataset, "method": method, "variant": "default", "seed": seed, "class": range(k),
                         "a": a, "gamma": gamma})


def test_margin_terms_of_planted_margins():
    """Corollary 1's γ on a_k: exponent 1/3, no deviation, and a complexity ratio of 1 against itself;
    equal margins: exponent 0, deviated by as much as Corollary 1's γ differ from c̄; γ ∝ a_k^{1/2}:
    exponent 1/2. The margin sum is Σ (a_k + 1)/γ_k² with a bias and Σ a_k/γ_k² without."""
    from theory.trained import margin_terms

    a = np.array([1.0, 8.0, 27.0, 64.0])
    c_bar = 0.5
    cube = c_bar * len(a) * np.cbrt(a) / np.cbrt(a).sum()
    half = c_bar * len(a) * np.sqrt(a) / np.sqrt(a).sum()
    per_class = pd.concat([planted("mr2", a, cube), planted("mr2_uniform", a, np.full(4, c_bar)),
                           planted("half", a, half)])
    terms = margin_terms(per_class).set_index("method")
    assert terms.loc["mr2", "exponent"] == pytest.approx(1 / 3) and terms.loc["mr2", "deviation"] == pytest.approx(0, abs=1e-12)
    assert terms.loc["mr2_uniform", "exponent"] == 0.0 and terms.loc["half", "exponent"] == pytest.approx(0.5)
    assert terms.loc["mr2_uniform", "deviation"] == pytest.approx(np.abs(c_bar / cube - 1).max())
    assert terms["c_bar"].tolist() == pytest.approx([c_bar] * 3)
    assert terms.loc["mr2", "margin_sum"] == pytest.approx(((a + 1) / cube**2).sum())
    assert margin_terms(per_class, bias=False).set_index("method").loc["mr2", "margin_sum"] == pytest.approx((a / cube**2).sum())
    b = a + 1
    corollary = math.sqrt(np.cbrt(b).sum() ** 3 / (len(b) ** 2 * b.sum()))
    assert terms["complexity_ratio"].tolist() == pytest.approx([corollary] * 3)
    assert terms.loc["mr2_uniform", "complexity_ratio_trained"] == pytest.approx(1.0)
    assert terms.loc["mr2", "gamma_spread"] == pytest.approx(4.0) and terms.loc["mr2", "a_spread"] == pytest.approx(64.0)
    with pytest.raises(ValueError, match="positive"):
        margin_terms(planted("mr2", a, -cube))


def test_margin_terms_agree_with_the_bound_table():
    """On runs that carry Λ and a training risk, the complexity ratios of theory.pipeline.bound_table
    (from Λ, N and the configured c̄) and those of margin_terms (from the per-class table alone) are one."""
    from theory.pipeline import bound_table
    from theory.trained import margin_terms

    gen = np.random.default_rng(0)
    per_class, runs = [], []
    for seed in range(3):
        a = gen.uniform(1, 30, 5)
        for method, gamma, c_bar in (("mr2", 0.7 * 5 * np.cbrt(a) / np.cbrt(a).sum(), 0.7), ("erm", np.ones(5), None)):
            per_class.append(planted(method, a, gamma, seed))
            runs.append({"dataset": "d", "method": method, "variant": "default", "seed": seed, "train_margin_ce": 0.3,
                         "train_error": 0.1, "n_train": 500, "num_classes": 5, "top1": 0.8, "head_bias": True,
                         "head_max_row_norm": gen.uniform(1, 3), "config.method.options.c_bar": c_bar})
    per_class, runs = pd.concat(per_class, ignore_index=True), pd.DataFrame(runs)
    table, terms = bound_table(runs, per_class), margin_terms(per_class)
    for column in ("complexity_ratio", "complexity_ratio_trained"):
        assert terms[column].tolist() == pytest.approx(table[column].tolist())
    assert terms["c_bar"].tolist() == pytest.approx(table["c_bar"].tolist())
    assert terms["margin_sum"].tolist() == pytest.approx(table["margin_sum"].tolist())


def test_corollary_and_complexity_sentences_say_what_planted_runs_hold():
    """Three seeds of Corollary 1's γ and of equal margins: e = 0.333 with 1/3 inside its interval (zero
    width at 1/3), MR²'s spread, the hard/easy ratio "smaller" when the hard classes have the smaller
    a_k, and the complexity term over ERM's."""
    from theory.answers import complexity_sentences, corollary_sentences
    from theory.trained import margin_terms

    rows = []
    for seed in range(3):
        a = np.array([2.0, 3.0, 9.0, 10.0]) + 0.1 * seed
        rows += [planted("erm", 10 * a, np.ones(4), seed),
                 planted("mr2", a, 0.5 * 4 * np.cbrt(a) / np.cbrt(a).sum(), seed)]
    per_class = pd.concat(rows, ignore_index=True)
    groups = pd.DataFrame({"dataset": "d", "class": range(4), "group": ["hard", "hard", "easy", "easy"]})
    terms = margin_terms(per_class)
    text = flat("\n".join(corollary_sentences(terms, per_class, groups)))
    assert "d (3 seeds): the final margins grow as γ_k ∝ a_k^e with MR² e = 0.333 [0.333, 0.333] (1/3 inside the interval)" in text
    assert "equal margins, e = 0: ERM (up to" in text
    mr2 = terms[terms["method"] == "mr2"]
    assert f"γ_max/γ_min = {interval(mr2['gamma_spread'], 3)}" in text
    ratios = [np.cbrt(a[:2]).mean() / np.cbrt(a[2:]).mean() for a in (np.array([2.0, 3.0, 9.0, 10.0]) + 0.1 * s for s in range(3))]
    assert f"the hard classes' mean γ_k is {interval(ratios, 3)} times the easy classes'" in text
    assert "smaller: the margins favour the easy classes" in text
    erm, own = terms[terms["method"] == "erm"]["margin_sum"].to_numpy(), mr2["margin_sum"].to_numpy()
    said = flat("\n".join(complexity_sentences(terms)))
    assert f"MR² (c̄ = 0.5) {interval(np.sqrt(own / erm), 2)}" in said and "over ERM's (c̄ = 1)" in said
