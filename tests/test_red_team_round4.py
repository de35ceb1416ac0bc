"""Issue 58, the red team's round 4 (the probes: an evaluation's split, hostile folders, names and
files): each fault has a test that fails on the code it was found in and passes now. The output
root's guards are tests/test_output_root.py and tests/test_pipeline.py; deterministic figures
tests/test_figures.py; the scripts tests/test_scripts.py."""

import json
from pathlib import Path

import pandas as pd
import pytest

import test_safety as safety
from results_data import write_run
from test_hostile import image_folder

REPO = Path(__file__).resolve().parents[1]
mr2, one_line_error = safety.mr2, safety.assert_one_line_error


# ------------------------------------------------------------------ an evaluation knows its split (B20, B21, B29)
def test_an_evaluation_records_the_split_it_measured(digits, tmp_path):
    from mr2.engine.evaluate import evaluate
    from mr2.engine.train import train

    run = tmp_path / "run"
    train(safety.run_cfg(train={**safety.QUICK, "epochs": 1}), digits, run, log=lambda *_: None)
    for split, folder in (("test", "eval"), ("val", "eval_val")):
        evaluate(run, digits, run / folder, device="cpu", split=split)
        assert json.loads((run / folder / "metrics.json").read_text())["split"] == split
        per_class = pd.read_csv(run / folder / "per_class.csv")
        assert set(per_class["split"]) == {split} and list(per_class.columns[:5]) == [
            "dataset", "method", "variant", "seed", "split"]


def with_split(run, folder, split, recorded=True):
    """``run``'s evaluation moved into ``folder`` as one of ``split``: its ``split`` recorded (or, as
    an evaluation written before it was, only its counts named ``n_<split>``)."""
    per_class = pd.read_csv(run / "eval" / "per_class.csv").rename(columns={"n_test": f"n_{split}"})
    metrics = json.loads((run / "eval" / "metrics.json").read_text())
    metrics[f"n_{split}"] = metrics.pop("n_test")
    if recorded:
        per_class.insert(4, "split", split)
        metrics["split"] = split
    (run / "eval").rename(run / "gone")
    (run / folder).mkdir()
    per_class.to_csv(run / folder / "per_class.csv", index=False)
    (run / folder / "metrics.json").write_text(json.dumps(metrics))
    return run / folder


@pytest.mark.parametrize("recorded", [True, False], ids=["split-recorded", "older-counts-only"])
def test_tune_refuses_test_scores_naming_the_file(tmp_path, recorded):
    """B20: `mr2 tune` chose from eval_val/ folders that held test-split scores."""
    runs = [write_run(tmp_path, "d", m, v, 0) for m, v in (("erm", "default"), ("mr2", "trial0"))]
    folders = [with_split(run, "eval_val", "test", recorded) for run in runs]
    res = mr2("tune", "--runs", *map(str, runs), "--out", str(tmp_path / "tune"))
    one_line_error(res, f"{folders[0] / 'per_class.csv'} holds test-split scores, not the val split eval_val/ is for",
                   "tuning chooses on validation scores only", f"--split val --out {folders[0]}")
    assert not (tmp_path / "tune").exists()


@pytest.mark.parametrize("recorded", [True, False], ids=["split-recorded", "older-counts-only"])
def test_aggregate_refuses_validation_scores_as_test_scores_naming_the_file(tmp_path, recorded):
    """B21: `mr2 aggregate` tabled a validation evaluation in eval/ as test accuracy."""
    good = write_run(tmp_path, "d", "erm", "default", 0)
    bad = write_run(tmp_path, "d", "erm", "default", 1)
    folder = with_split(bad, "eval", "val", recorded)
    res = mr2("aggregate", "--runs", str(good), str(bad), "--out", str(tmp_path / "tables"))
    one_line_error(res, f"{folder / 'per_class.csv'} holds val-split scores, not the test split eval/ is for",
                   "tables hold test scores")
    assert not (tmp_path / "tables").exists()


def test_an_evaluation_of_the_right_split_is_tabled_without_its_split_column(tmp_path):
    """The split is checked, then dropped: a table holds one split; evaluations written before the
    split was recorded (no `split`, `n_test` only) are read as the folder says."""
    from mr2.results.tables import aggregate

    old = write_run(tmp_path, "d", "erm", "default", 0)
    new = write_run(tmp_path, "d", "erm", "default", 1)
    with_split(new, "eval", "test")
    tables = aggregate([old, new])
    assert "split" not in tables["per_class"] and "split" not in tables["runs"]
    assert len(tables["runs"]) == 2 and tables["per_class"]["n_test"].eq(10).all()


def test_an_image_folder_with_both_val_and_test_is_refused_as_ambiguous(tmp_path):
    """B29: with train/, val/ and test/, val/ was taken as the test split and test/ ignored."""
    root = image_folder(tmp_path / "set", per_split=(("train", 3), ("val", 2), ("test", 2)))
    res = mr2("prepare", "--set", "data.name=image_folder", "--set", f"data.root={root}", "--set", "data.image_size=4",
              "--out", str(tmp_path / "d.pt"))
    one_line_error(res, f"image folder {root} has both val/ and test/: which is the test split is ambiguous",
                   f"merge {root}/val into {root}/train")
    assert not (tmp_path / "d.pt").exists()
    (root / "val").rename(tmp_path / "val")  # test/ alone is the test split
    assert mr2("prepare", "--set", "data.name=image_folder", "--set", f"data.root={root}", "--set",
               "data.image_size=4", "--set", "data.val_fraction=0", "--out", str(tmp_path / "d.pt")).returncode == 0


# ------------------------------------------------------------------ files cut short (N12)
def test_a_truncated_metrics_json_is_one_line_naming_it(tmp_path):
    run = write_run(tmp_path, "d", "erm", "default", 0)
    metrics = run / "eval" / "metrics.json"
    metrics.write_text(metrics.read_text()[:40])
    res = mr2("aggregate", "--runs", str(run), "--out", str(tmp_path / "tables"))
    one_line_error(res, f"{metrics} is not valid JSON (", "damaged or cut short")


# ------------------------------------------------------------------ runs of two CPU vendors are never tabled together
def with_vendor(run, vendor):
    import yaml

    cfg = yaml.safe_load((run / "config.yaml").read_text())
    cfg["conditions"] = {"device": "cpu", "cpu_vendor": vendor}
    (run / "config.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
    return run


def test_aggregate_refuses_runs_of_two_cpu_vendors_naming_one_of_each(tmp_path):
    """Issue 58, item 5: an Intel Xeon gives other numbers than an AMD EPYC under the same cap; a run
    set of both would pair and table them together."""
    amd = with_vendor(write_run(tmp_path, "d", "erm", "default", 0), "AuthenticAMD")
    intel = with_vendor(write_run(tmp_path, "d", "mr2", "default", 0), "GenuineIntel")
    older = write_run(tmp_path, "d", "erm", "default", 1)  # records no vendor
    res = mr2("aggregate", "--runs", str(amd), str(older), str(intel), "--out", str(tmp_path / "tables"))
    one_line_error(res, f"runs of two CPU vendors would be tabled together: {amd} ran on AuthenticAMD, {intel} on "
                        "GenuineIntel")
    assert not (tmp_path / "tables").exists()
    assert mr2("aggregate", "--runs", str(amd), str(older), "--out", str(tmp_path / "tables")).returncode == 0


# ------------------------------------------------------------------ the rest of the list
def test_an_unknown_kernel_choice_is_one_line_and_exit_code_2():
    """B14: MR2_CPU_ISA=junk gave a 10-line traceback with exit code 1, the code of a diverged run."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "PYTHONPATH": str(REPO), "MR2_CPU_ISA": "junk"}
    for args in (["--version"], ["aggregate", "--runs", "x", "--out", "y"]):
        res = subprocess.run([sys.executable, "-m", "mr2", *args], capture_output=True, text=True, env=env, cwd=REPO)
        one_line_error(res, "environment variable MR2_CPU_ISA='junk': must be one of ('avx2', 'native')")
    engine = subprocess.run([sys.executable, "-c", "import mr2.engine"], capture_output=True, text=True, env=env)
    assert engine.returncode != 0 and "MR2_CPU_ISA='junk'" in engine.stderr  # the engine never runs uncapped


@pytest.mark.parametrize("root", ["rtnl\n", "results\n", "a/..\n"])
def test_an_output_root_ending_in_a_newline_is_refused_naming_the_key(root):
    """N8: the schema's pattern ended in `$`, which lets a final newline in."""
    import yaml

    from mr2.pipeline.config import PipelineConfigError, checked, load_schemas

    config = yaml.safe_load((REPO / "config" / "smoke.yaml").read_text())
    with pytest.raises(PipelineConfigError, match="config key 'output_root'"):
        checked({**config, "output_root": root}, load_schemas(REPO / "workflow" / "schemas"))


def snapshot_page(tmp_path):
    from test_readme import one_row_tables

    tables = one_row_tables(tmp_path / "out" / "tables")
    page = tmp_path / "docs" / "results.md"
    page.parent.mkdir()
    page.write_text("# Results\n\n<!-- results:x -->\n<!-- /results:x -->\n")
    return tables, page


def readme_cli(tables, page, *extra):
    return mr2("readme", "--tables", str(tables), "--name", "x", "--readme", str(page), *extra)


def test_readme_refuses_tables_made_with_another_config_than_the_one_named(tmp_path):
    """B17: `mr2 readme --config config/config.yaml` credited another config's tables to it."""
    tables, page = snapshot_page(tmp_path)
    (tables.parent / "pipeline_config.json").write_text(json.dumps(
        {"methods": ["erm", "mr2"], "seeds": [0, 1], "datasets": {"fm": {"data": {"name": "fashion_mnist"}}}}))
    named = tmp_path / "named.yaml"
    named.write_text("methods: [erm, mr2, mr2_no_rep]\nseeds: [0, 1]\ndatasets:\n  fashion_mnist: {data: {name: fashion_mnist}}\n")
    before = page.read_text()
    res = readme_cli(tables, page, "--config", str(named))
    one_line_error(res, f"--config {named} is not the config {tables} was made with: {tables.parent / 'pipeline_config.json'} "
                        "records other values of datasets.fashion_mnist, methods")
    assert page.read_text() == before and not (tmp_path / "docs" / "results" / "x").exists()
    named.write_text("methods: [erm, mr2]\nseeds: [0, 1]\n")  # what it states, the run holds
    assert readme_cli(tables, page, "--config", str(named)).returncode == 0


def test_readme_refuses_a_symbolic_link_instead_of_copying_its_target(tmp_path):
    """B18: `tune/fm/tuning.md -> /etc/hostname` became a regular file holding the host's name in the
    snapshot, which is committed."""
    tables, page = snapshot_page(tmp_path)
    secret = tmp_path / "secret"
    secret.write_text("the host's name")
    tune = tables.parent / "tune" / "fm"
    tune.mkdir(parents=True)
    (tune / "tuning.csv").write_text("trial,score\n0,1\n")
    (tune / "tuning.md").symlink_to(secret)
    before = page.read_text()
    one_line_error(readme_cli(tables, page), f"{tune / 'tuning.md'} is a symbolic link")
    assert page.read_text() == before and not (tmp_path / "docs" / "results" / "x").exists()
    (tune / "tuning.md").unlink()
    (tables.parent / "tune" / "linked").symlink_to(tune)  # a linked dataset folder too
    one_line_error(readme_cli(tables, page), f"{tables.parent / 'tune' / 'linked'} is a symbolic link")
    (tables.parent / "tune" / "linked").unlink()
    (tables / "comparisons.csv").symlink_to(secret)  # and a table
    one_line_error(readme_cli(tables, page), f"{tables / 'comparisons.csv'} is a symbolic link")
    (tables / "comparisons.csv").unlink()
    assert readme_cli(tables, page).returncode == 0
    assert (tmp_path / "docs" / "results" / "x" / "tune" / "fm" / "tuning.csv").is_file()


def test_a_results_table_holding_another_blocks_marker_is_refused_before_anything_is_written(tmp_path):
    """B30: a results.md with a `<!-- verdicts -->` line was pasted into the page, then refused, and the
    page stayed blocked for every later update."""
    tables, page = snapshot_page(tmp_path)
    (tables / "results.md").write_text((tables / "results.md").read_text() + "<!-- verdicts -->\n")
    before = page.read_text()
    one_line_error(readme_cli(tables, page), f"{tables / 'results.md'} holds the marker line <!-- verdicts -->",
                   "nothing was written")
    assert page.read_text() == before and not (tmp_path / "docs" / "results" / "x").exists()
