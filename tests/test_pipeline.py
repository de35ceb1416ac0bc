"""The Snakemake pipeline: smoke run content, no-op rerun, lint, broken configs, targets, resume,
and the HTML report. The smoke workflow runs once per session (tests/conftest.py)."""

import json
import os
import re
import shlex
import signal
import subprocess

import pandas as pd
import pytest
import yaml
from conftest import copy_pipeline, pipeline_env, run_snakemake

SMOKE = ["--configfile", "config/smoke.yaml"]
METHODS = ["erm", "mr2", "mr2_uniform", "mr2_no_rep"]
FIGURES = ["per_class_sorted", "accuracy_vs_variability", "group_accuracy", "change_vs_erm",
           "margins_over_training", "sweeps"]


def test_smoke_outputs_have_the_expected_content(smoke_results):
    cfg = yaml.safe_load(open(smoke_results.parent / "config" / "smoke.yaml"))
    n_runs = (len(METHODS) + len(cfg["sweeps"]["c_bar"])) * len(cfg["seeds"])
    per_class = pd.read_csv(smoke_results / "tables" / "per_class.csv")
    assert len(per_class) == n_runs * 10
    assert set(per_class["method"]) == set(METHODS)
    assert per_class["accuracy"].between(0, 1).all() and per_class["a"].gt(0).all()
    runs = pd.read_csv(smoke_results / "tables" / "runs.csv")
    assert len(runs) == n_runs
    erm = runs[runs["method"] == "erm"]
    assert erm["top1"].min() > 0.3  # chance is 0.1: the chain really trains
    groups = pd.read_csv(smoke_results / "tables" / "groups.csv")
    assert sorted(groups["group"].value_counts().tolist()) == [3, 3, 4]
    table = pd.read_csv(smoke_results / "tables" / "results.csv")
    assert len(table) == len(METHODS) + len(cfg["sweeps"]["c_bar"])
    mr2 = table[(table["method"] == "mr2") & (table["variant"] == "default")].iloc[0]
    mine = per_class[(per_class["method"] == "mr2") & (per_class["variant"] == "default")]
    assert mr2["all_mean"] == pytest.approx(mine.groupby("seed")["accuracy"].mean().mean() * 100)
    epochs = pd.read_csv(smoke_results / "tables" / "epochs.csv")
    gamma = epochs[(epochs["method"] == "mr2") & (epochs["name"] == "gamma")]
    assert len(gamma) == len(cfg["seeds"]) * 2 * cfg["datasets"]["fashion_mnist"]["train"]["epochs"] * 10
    for name in FIGURES:
        for ext in ("png", "pdf"):
            assert (smoke_results / "figures" / f"{name}.{ext}").stat().st_size > 1000
    report = (smoke_results / "report.md").read_text()
    assert "## What we find" in report and "MR² against ERM" in report
    assert all(f"figures/{name}.png" in report for name in FIGURES)
    md = (smoke_results / "tables" / "results.md").read_text()
    assert "| fashion_mnist | mr2 | c_bar=2.0 |" in md
    run = smoke_results / "runs" / "fashion_mnist" / "mr2" / "c_bar=2.0" / "seed0"
    saved = yaml.safe_load(open(run / "config.yaml"))
    assert saved["method"]["options"]["c_bar"] == 2.0 and saved["tags"]["variant"] == "c_bar=2.0"
    assert json.loads((smoke_results / "pipeline_config.json").read_text())["seeds"] == cfg["seeds"]
    for log in (smoke_results / "logs" / "train").rglob("*.log"):
        assert "epoch 3/3" in log.read_text()


def test_second_run_is_a_no_op(smoke_workdir):
    res = run_snakemake(smoke_workdir, *SMOKE, "-n")
    assert "Nothing to be done" in res.stdout + res.stderr


def test_lint_is_clean(smoke_workdir):
    res = run_snakemake(smoke_workdir, *SMOKE, "--lint")
    assert res.returncode == 0 and "Congratulations" in res.stdout + res.stderr


def test_report_html(smoke_workdir):
    run_snakemake(smoke_workdir, *SMOKE, "--report", "results/report.html")
    html = (smoke_workdir / "results" / "report.html").read_text(errors="replace")
    assert "per_class_sorted" in html and "margins_over_training" in html


def planned_jobs(res):
    """{rule: count} from a dry run's job table."""
    text = res.stdout + res.stderr
    table = text[text.index("Job stats:"):]
    return {m.group(1): int(m.group(2)) for m in re.finditer(r"^(\w+)\s+(\d+)$", table, re.M) if m.group(1) != "total"}


def test_one_config_change_adds_only_its_runs(smoke_workdir):
    res = run_snakemake(smoke_workdir, *SMOKE, "-n", "--config", "seeds=[0,1,2]")
    jobs = planned_jobs(res)
    assert jobs["train"] == len(METHODS) + 1 and jobs["evaluate"] == len(METHODS) + 1
    assert "prepare" not in jobs


def test_one_target_path_reruns_one_run(smoke_workdir):
    target = "results/runs/fashion_mnist/mr2_uniform/default/seed0/eval/metrics.json"
    (smoke_workdir / target).unlink()
    res = run_snakemake(smoke_workdir, target, *SMOKE)
    assert (smoke_workdir / target).is_file()
    assert planned_jobs(res) == {"evaluate": 1}


def test_killed_training_job_resumes_when_the_workflow_is_rerun(smoke_workdir):
    run = "results/runs/fashion_mnist/erm/default/seed1"
    outputs = [f"{run}/{f}" for f in ("model.pt", "config.yaml", "epochs.csv")]
    for f in outputs:
        (smoke_workdir / f).unlink()
    dry = run_snakemake(smoke_workdir, outputs[0], "-n", "-p", *SMOKE)
    line = next(line for line in (dry.stdout + dry.stderr).splitlines() if "python -m mr2 train" in line)
    cmd = line[line.index("python -m mr2 train"):].split(" > ")[0]  # the rule's command, output to us
    proc = subprocess.Popen(shlex.split(cmd), cwd=smoke_workdir, stdout=subprocess.PIPE, text=True,
                            env={**pipeline_env(), "PYTHONUNBUFFERED": "1"})
    for line in proc.stdout:
        if "epoch 1/3" in line:
            os.kill(proc.pid, signal.SIGKILL)
            break
    proc.wait()
    assert (smoke_workdir / run / "checkpoint.pt").is_file() and not (smoke_workdir / outputs[0]).exists()
    run_snakemake(smoke_workdir, outputs[0], *SMOKE)
    log = (smoke_workdir / "results/logs/train/fashion_mnist/erm/default/seed1.log").read_text()
    assert "resuming" in log and "after epoch 1" in log
    assert not (smoke_workdir / run / "checkpoint.pt").exists()


def test_theory_assumptions_reach_the_theory_step(smoke_workdir, tmp_path):
    extra = tmp_path / "theory.yaml"
    extra.write_text(yaml.safe_dump({"theory": {"norm": "frobenius", "delta": 0.1}}))
    res = run_snakemake(smoke_workdir, "-n", "-p", "--forcerun", "theory_bound", *SMOKE, str(extra))
    line = next(line for line in (res.stdout + res.stderr).splitlines() if "python -m theory bound" in line)
    assert "--delta 0.1" in line and "--norm frobenius" in line and "--c " not in line  # c: the CLI's default


BROKEN = {
    "unknown method": ({"methods": ["erm", "mr3"]}, "mr3"),
    "negative lambda": ({"method_options": {"mr2": {"lam": -1.0}}}, "lam"),
    "negative lambda sweep": ({"sweeps": {"method": "mr2", "lam": [-0.5]}}, "sweeps"),
    "missing dataset root": ({"datasets": {"cifar100": {"data": {"name": "cifar100", "root": "/nonexistent/cifar"}}}},
                             "datasets.cifar100.data"),
    "unknown key": ({"epochs": 3}, "epochs"),
    "theory delta out of range": ({"theory": {"delta": 1.5}}, "delta"),
    "unknown engine key": ({"datasets": {"fashion_mnist": {"data": {"name": "fashion_mnist"},
                                                          "train": {"epoch": 3}}}}, "train.epoch"),
}


@pytest.mark.parametrize("case", BROKEN)
def test_broken_config_fails_before_any_job_naming_the_key(tmp_path, case):
    change, needle = BROKEN[case]
    workdir = copy_pipeline(tmp_path / "wd")
    cfg = yaml.safe_load(open(workdir / "config" / "smoke.yaml"))
    if "datasets" in change:
        cfg["datasets"] = change["datasets"]
    else:
        cfg.update(change)
    (workdir / "config" / "broken.yaml").write_text(yaml.safe_dump(cfg))
    res = run_snakemake(workdir, "--configfile", "config/broken.yaml", check=False)
    assert res.returncode != 0
    assert needle in res.stdout + res.stderr, (res.stdout + res.stderr)[-2000:]
    assert not (workdir / "results").exists()
