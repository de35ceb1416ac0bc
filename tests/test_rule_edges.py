"""Edges of the rules that decide what a run is and what a tuning chooses, each a test that fails
when its rule is broken: the convergence check of a method with its own epochs, a trial's score, the
search's draws, a trial index outside the budget, the run hash and threads, the output root after `..`,
an indented README marker, the epochs of a setting on a tie, a sweep of the reference in paired()."""

import copy
from pathlib import Path

import pandas as pd
import pytest
import yaml

from mr2.common.io import block_lines
from mr2.common.tuning import trial_options
from mr2.pipeline.config import CONFIG_SCHEMA, PipelineConfigError, checked, load_schemas
from mr2.pipeline.runs import run_config, run_hash
from mr2.results.regimes import block_epochs
from mr2.results.tables import paired
from mr2.results.tuning import trial_table

REPO = Path(__file__).resolve().parents[1]
SCHEMAS = load_schemas(REPO / "workflow" / "schemas")
SCHEMA = SCHEMAS[CONFIG_SCHEMA]


def config(**change):
    raw = yaml.safe_load((REPO / "config" / "smoke-tuned.yaml").read_text())
    raw.update(copy.deepcopy(change))
    return checked(raw, SCHEMAS)


def first_trials(cfg):
    tune = cfg["tune"]
    chosen = {m: trial_options(space, tune["trials"], tune["seed"], m)[0] for m, space in tune["space"].items()}
    return lambda dataset: {"methods": chosen}


def test_a_method_with_its_own_epochs_is_checked_at_factor_times_its_own_epochs():
    raw = yaml.safe_load((REPO / "config" / "smoke-tuned.yaml").read_text())
    raw["datasets"]["fashion_mnist"]["method_epochs"] = {"focal": 3}
    cfg = checked(raw, SCHEMAS)
    factor = cfg["convergence"]["factor"]
    chosen = first_trials(cfg)
    focal = run_config(cfg, SCHEMA, f"fashion_mnist.x{factor}", "focal", "default", 0, chosen)
    erm = run_config(cfg, SCHEMA, f"fashion_mnist.x{factor}", "erm", "default", 0, chosen)
    assert focal["train"]["epochs"] == factor * 3
    assert erm["train"]["epochs"] == factor * raw["datasets"]["fashion_mnist"]["train"]["epochs"]


def test_a_trial_scores_the_mean_over_its_seeds_not_the_best():
    rows, runs = [], []
    for method, variant, seed, acc in [("erm", "default", 7, 0.5), ("erm", "default", 8, 0.5),
                                       ("mr2", "trial0", 7, 0.9), ("mr2", "trial0", 8, 0.3)]:
        for c in range(3):
            rows.append({"dataset": "d", "method": method, "variant": variant, "seed": seed, "class": c,
                         "accuracy": acc + 0.01 * c})
        runs.append({"dataset": "d", "method": method, "variant": variant, "seed": seed,
                     "config.tags.searched": '["lam"]' if variant != "default" else None,
                     "config.method.options.lam": 0.1})
    table = trial_table(pd.DataFrame(rows), pd.DataFrame(runs))
    assert table["n_seeds"].tolist() == [2]
    assert table["all"].iloc[0] == pytest.approx(100 * (0.91 + 0.31) / 2)  # the mean of 91 and 31, not the best


def test_the_draws_do_not_depend_on_the_order_of_keys():
    a = trial_options({"c_bar": [0.1, 4.0], "lam": [0.01, 1.0]}, 8, 0, "mr2")
    b = trial_options({"lam": [0.01, 1.0], "c_bar": [0.1, 4.0]}, 8, 0, "mr2")
    assert a == b and len({tuple(sorted(x.items())) for x in a}) == 8


def test_a_trial_index_outside_the_budget_is_an_error_naming_tune():
    cfg = config()
    run_config(cfg, SCHEMA, "fashion_mnist", "mr2", f"trial{cfg['tune']['trials'] - 1}", 7)
    with pytest.raises(PipelineConfigError, match="config key 'tune'"):
        run_config(cfg, SCHEMA, "fashion_mnist", "mr2", f"trial{cfg['tune']['trials']}", 7)


def test_the_run_hash_changes_with_threads():
    one, two = config(threads=1), config(threads=2)
    assert run_hash(one, SCHEMA, "fashion_mnist", "erm", "default") != run_hash(two, SCHEMA, "fashion_mnist", "erm",
                                                                                  "default")


def test_the_output_root_is_checked_after_resolving_dotdot(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "afile").write_text("x")
    with pytest.raises(PipelineConfigError, match="output_root"):
        config(output_root="sub/../afile")  # an existing file once `..` is resolved
    depth = len(tmp_path.resolve().parts)
    with pytest.raises(PipelineConfigError, match="output_root"):
        config(output_root="/".join([".."] * depth))  # the file system's root once resolved


def test_an_indented_readme_marker_is_no_block_edge():
    text = "a\n<!-- x -->\n    <!-- /x -->\nin a code sample\n<!-- /x -->\n"
    assert block_lines(text, "<!-- x -->", "<!-- /x -->") == (1, 4)


def test_a_tie_between_two_epoch_counts_takes_the_fewest():
    assert block_epochs(pd.Series({"erm": 40, "mr2": 20})) == 20
    assert block_epochs(pd.Series({"erm": 40, "mr2": 20, "dro": 40})) == 40


def test_a_sweep_of_the_reference_keeps_its_variants_apart_in_paired():
    per_run = pd.DataFrame([
        {"dataset": "d", "method": "erm", "variant": v, "seed": s, "hard": acc}
        for v, accs in (("default", (0.50, 0.52, 0.51)), ("lr=0.1", (0.60, 0.61, 0.62)))
        for s, acc in enumerate(accs)] + [
        {"dataset": "d", "method": "mr2", "variant": "default", "seed": s, "hard": a}
        for s, a in enumerate((0.55, 0.56, 0.57))])
    d = paired(per_run, "d", "mr2", "erm", "hard")
    assert d["diff"] == pytest.approx(100 * (0.56 - 0.51))  # against ERM's default variant only
    swept = paired(per_run, "d", "erm", "erm", "hard", variant="lr=0.1")
    assert swept["diff"] == pytest.approx(100 * (0.61 - 0.51))
