"""Issue 58, item 2: the final runs of a tuned config rest on the tuning's record and nothing else. An
edited or replaced chosen.yaml, or one that no longer matches the tuning.csv beside it, is refused in
one line naming both files (red team round 4, B6); a damaged one is one line naming it (B8); every
tuning record is a target, so a deleted one is made again (B7); the reference cannot follow a searched
method (B4, tests/test_controls.py); ``mr2 tune`` refuses trials of two datasets before it writes (B19).
"""

import json
import os
import time

import numpy as np
import pandas as pd
import pytest
import yaml

from conftest import REPO, run_snakemake, workdir_with_configs
from mr2.common.io import save_csv
from mr2.common.tuning import option_column, trial_index
from mr2.pipeline import paths
from mr2.pipeline import runs as plan
from mr2.pipeline.config import PipelineConfigError, checked
from mr2.pipeline.paths import EVAL_VAL_FILES, RUN_FILES
from mr2.results import tuning as T

from test_controls import REFERENCE_10, SCHEMA, SCHEMAS, validation_runs
from test_safety import assert_one_line_error, mr2

#: a config that searches mr2 on fashion_mnist (what read_chosen asks of a record: that dataset, that method)
RAW = yaml.safe_load((REPO / "config" / "smoke-tuned.yaml").read_text())
CONFIG = checked({**RAW, "tune": {"space": {"mr2": {"c_bar": [0.5, 4.0]}}, "seeds": [7]}, "methods": ["erm", "mr2"]},
                 SCHEMAS)


@pytest.fixture
def tuned(tmp_path):
    """A tune folder as the tune step writes it (the 'hard' rule picks mr2's trial 1)."""
    folder = tmp_path / "tune" / "fashion_mnist"
    per_class, runs = validation_runs()
    T.write_tuning(per_class, runs, folder, "hard", "erm")
    return folder


def refused(folder, *needles):
    with pytest.raises(PipelineConfigError) as error:
        plan.read_chosen(CONFIG, "fashion_mnist", folder / "chosen.yaml")
    line = str(error.value)
    assert "\n" not in line and str(folder / "chosen.yaml") in line, line
    for needle in needles:
        assert needle in line, (needle, line)
    return line


def test_the_final_runs_read_a_choice_that_matches_its_trials(tuned):
    record = plan.read_chosen(CONFIG, "fashion_mnist", tuned / "chosen.yaml")
    assert record["methods"] == {"mr2": {"c_bar": 1.5, "train.lr": 0.02}} and record["dataset"] == "fashion_mnist"


def rewrite(folder, change):
    record = yaml.safe_load((folder / "chosen.yaml").read_text())
    change(record)
    (folder / "chosen.yaml").write_text(yaml.safe_dump(record))


def _tamper_option(folder):  # the red team's probe: lam 0.53 -> 0.9; here c_bar 1.5 -> 0.9
    rewrite(folder, lambda record: record["methods"]["mr2"].update(c_bar=0.9))


def _add_method(folder):
    rewrite(folder, lambda record: record["methods"].update(focal={"gamma": 2.0}))


def _tamper_trials(folder):
    trials = pd.read_csv(folder / "tuning.csv")
    trials.loc[1, "hard"] += 0.5
    save_csv(trials, folder / "tuning.csv")


def _move_the_choice(folder):
    """tuning.csv marks another trial chosen and chosen.yaml's digest is made to fit: the options differ."""
    trials = pd.read_csv(folder / "tuning.csv")
    trials["chosen"] = trials["trial"].eq(2)
    save_csv(trials, folder / "tuning.csv")
    rewrite(folder, lambda record: record.update({T.TRIALS_DIGEST: T.file_sha256(folder / "tuning.csv")}))


def _drop_digest(folder):  # a record written before chosen.yaml named its tuning.csv
    rewrite(folder, lambda record: record.pop(T.TRIALS_DIGEST))


@pytest.mark.parametrize("damage, needle", [
    (_tamper_option, "not those of the trials tuning.csv marks 'chosen'"),
    (_add_method, "not those of the trials tuning.csv marks 'chosen'"),
    (_move_the_choice, "not those of the trials tuning.csv marks 'chosen'"),
    (_tamper_trials, "'tuning_csv_sha256' is not that file's SHA-256"),
    (lambda folder: (folder / "tuning.csv").unlink(), "'tuning_csv_sha256' is not that file's SHA-256"),
    (_drop_digest, "'tuning_csv_sha256' is not that file's SHA-256"),
], ids=["B6-option-edited", "method-added", "choice-moved", "trials-edited", "trials-deleted", "no-digest"])
def test_b6_a_choice_that_does_not_match_its_trials_is_refused_naming_both_files(tuned, damage, needle):
    damage(tuned)
    line = refused(tuned, str(tuned / "tuning.csv"), needle)
    assert f"delete {tuned / 'chosen.yaml'}" in line  # the way out: the tune step chooses again


@pytest.mark.parametrize("text, needle", [
    ("dataset: fashion_mnist\nmethods: {}\n", "no options for 'mr2' (searched in config key 'tune.space.mr2')"),
    ("dataset: fashion_mnist\nmethods: {mr2: 0.5}\n", "no options for 'mr2'"),
    ("methods: [\n", "not a tuning record that can be read"),
    ("- mr2\n", "not a tuning record (a mapping with 'methods')"),
    ("", "not a tuning record (a mapping with 'methods')"),
    ("dataset: mnist1d\nmethods: {mr2: {c_bar: 1.0}}\n", "the choice of dataset 'mnist1d', not of 'fashion_mnist'"),
    ("methods: !!python/object/apply:os.system [\"touch {pwned}\"]\n", "not a tuning record that can be read"),
    ("methods: \xff\n", "not a tuning record"),
], ids=["B8-no-method-entry", "options-not-a-mapping", "B8-invalid-yaml", "a-list", "empty", "another-dataset",
        "B8-python-tag", "not-utf8"])
def test_b8_a_damaged_choice_is_one_line_naming_the_file(tuned, text, needle):
    pwned = tuned / "PWNED"
    text = text.replace("{pwned}", str(pwned))
    raw = text.encode("latin-1") if "\xff" in text else text.encode()
    (tuned / "chosen.yaml").write_bytes(raw)
    refused(tuned, needle)
    assert not pwned.exists()  # no code runs from the record


def test_a_missing_choice_is_one_line_naming_it(tuned):
    (tuned / "chosen.yaml").unlink()
    refused(tuned, "not a tuning record that can be read")


# ----------------------------------------------------------------------------- B19: mr2 tune writes all or nothing
def tune_run(root, dataset, method, variant, accuracy, options=None, seed=100):
    """A run folder as training and ``mr2 evaluate --split val`` leave it for the tune step."""
    run = root / dataset / method / variant / f"seed{seed}"
    tags = {"variant": variant, "dataset_key": dataset}
    if options is not None:
        tags.update(trial=trial_index(variant), searched=sorted(options))
    cfg = {"seed": seed, "tags": tags, "data": {"name": "fashion_mnist"},
           "method": {"name": method, "options": options or {}}, "train": {"epochs": 1}}
    (run / "eval_val").mkdir(parents=True)
    (run / "config.yaml").write_text(yaml.safe_dump(cfg))
    save_csv(pd.DataFrame({"epoch": [1], "class": [None], "name": ["train_loss"], "value": [0.5]}), run / "epochs.csv")
    keys = {"dataset": dataset, "method": method, "variant": variant, "seed": seed}
    save_csv(pd.DataFrame({**keys, "class": np.arange(len(accuracy)), "accuracy": accuracy}),
             run / "eval_val" / "per_class.csv")
    (run / "eval_val" / "metrics.json").write_text(json.dumps({**keys, "top1": float(np.mean(accuracy)),
                                                               "n_val": 10 * len(accuracy)}))
    return run


def tune_runs(root, dataset):
    return [tune_run(root, dataset, "erm", "default", REFERENCE_10)] + [
        tune_run(root, dataset, "mr2", f"trial{i}", REFERENCE_10 + 0.01 * i, {"c_bar": 0.5 + i}) for i in range(2)]


def mr2_cli(*args):
    return mr2(*map(str, args))


def test_b19_mr2_tune_refuses_trials_of_two_datasets_before_writing_anything(tmp_path):
    out = tmp_path / "tune" / "fm"
    fm = tune_runs(tmp_path / "runs", "fm")
    done = mr2_cli("tune", "--runs", *fm, "--out", out)
    assert done.returncode == 0, done.stderr
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    assert {"tuning.csv", "chosen.yaml", "budget.csv", "tuning.md", "tuning.png", "tuning.pdf",
            "reference_groups.csv"} <= set(before)
    both = mr2_cli("tune", "--runs", *fm, *tune_runs(tmp_path / "runs", "fm2"), "--out", out)
    assert_one_line_error(both, "tune: the trials given belong to 2 datasets (['fm', 'fm2']); tune one at a time")
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before  # every old file kept, byte for byte


# ----------------------------------------------------------------------------- the workflow
def rule_all_inputs(dry_run_output):
    """The input files of the `all` job of a dry run."""
    lines = dry_run_output.splitlines()
    start = next(i for i, line in enumerate(lines) if line.strip() == "rule all:")
    inputs = next(line for line in lines[start:] if line.strip().startswith("input:"))
    return {p.strip() for p in inputs.split(":", 1)[1].split(",")}


TUNING_RECORDS = ("chosen.yaml", "tuning.csv", "tuning.md", "tuning.png", "tuning.pdf", "budget.csv",
                  "reference_groups.csv")


@pytest.mark.slow
def test_b7_every_tuning_record_is_a_target_of_the_workflow(tmp_path):
    """The default target asks for every file the tune step writes, so a deleted one is made again
    (config/tuned-controls.yaml: its dry run passes too)."""
    work = workdir_with_configs(tmp_path / "w")
    dry = run_snakemake(work, "-n", "--configfile", "config/tuned-controls.yaml")
    targets = rule_all_inputs(dry.stdout)
    assert {f"results/tune/fashion_mnist/{name}" for name in TUNING_RECORDS} <= targets
    assert not any("fashion_mnist.x4" in t for t in targets if "/tune/" in t)  # a check takes its dataset's choice


def stage_as_if_tuned(work, raw):
    """``work``'s results as the tune step's chain leaves them for config ``raw``, oldest first: the
    prepared data, each trial's and the reference's run and validation files (empty: a dry run reads
    none), then a tune folder written by ``write_tuning`` from validation scores of mr2's and focal's
    trials (``validation_runs``)."""
    config = checked(raw, SCHEMAS)
    found = paths.patterns("results")
    data = {"dataset": "fashion_mnist", "data_hash": plan.data_hash(config, "fashion_mnist")}
    runs = [plan.run_folder(config, plan.run_hash(config, SCHEMA, r["dataset"], r["method"], r["variant"]), **r)
            for r in plan.trial_runs(config, "fashion_mnist")]
    stages = [[found["DATA_CONFIG"].format(**data)], [found["DATA"].format(**data)], [f"{r}/run.yaml" for r in runs],
              [f"{r}/{name}" for r in runs for name in RUN_FILES], [f"{r}/{name}" for r in runs for name in EVAL_VAL_FILES]]
    now = time.time() - 100
    for age, stage in enumerate(stages):
        for name in stage:
            (work / name).parent.mkdir(parents=True, exist_ok=True)
            (work / name).touch()
            os.utime(work / name, (now + age, now + age))
    per_class, scores = validation_runs()
    mr2_rows, mr2_runs = per_class["method"].eq("mr2"), scores["method"].eq("mr2")
    focal = scores[mr2_runs].drop(columns=[c for c in scores if c.startswith("config.")]).assign(
        method="focal", **{T.SEARCHED: json.dumps(["gamma"]), option_column("gamma"): [1.0, 2.0, 3.0]})
    per_class = pd.concat([per_class, per_class[mr2_rows].assign(method="focal")], ignore_index=True)
    T.write_tuning(per_class, pd.concat([scores, focal], ignore_index=True), work / "results/tune/fashion_mnist")
    return work / "results" / "tune" / "fashion_mnist"


@pytest.mark.slow
def test_the_workflow_refuses_an_edited_or_damaged_choice_and_remakes_a_deleted_record(tmp_path):
    """config/smoke-tuned.yaml after its tune step; then the red team's probes as a user meets them."""
    work = workdir_with_configs(tmp_path / "w")
    config = ("--configfile", "config/smoke-tuned.yaml")
    folder = stage_as_if_tuned(work, yaml.safe_load((work / "config" / "smoke-tuned.yaml").read_text()))
    genuine = (folder / "chosen.yaml").read_text()
    assert "rule train:" in run_snakemake(work, "-n", *config).stdout  # the genuine choice plans the final runs
    rewrite(folder, lambda record: record["methods"]["mr2"].update(c_bar=0.9))  # B6: an option edited
    res = run_snakemake(work, "-n", *config, check=False)
    text = res.stdout + res.stderr
    assert res.returncode != 0 and ("results/tune/fashion_mnist/chosen.yaml does not match "
                                    "results/tune/fashion_mnist/tuning.csv") in text
    (folder / "chosen.yaml").write_text("dataset: fashion_mnist\nmethods: {}\n")  # B8: the method entry gone
    res = run_snakemake(work, "-n", *config, check=False)
    text = res.stdout + res.stderr
    assert res.returncode != 0 and "no options for 'mr2'" in text and "KeyError" not in text
    (folder / "chosen.yaml").write_text(genuine)
    for name in ("tuning.md", "tuning.png", "reference_groups.csv"):  # B7
        (folder / name).unlink()
    res = run_snakemake(work, "-n", *config)
    assert "checkpoint tune:" in res.stdout or "rule tune:" in res.stdout
