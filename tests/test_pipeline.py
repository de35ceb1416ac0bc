"""The Snakemake pipeline: smoke run content, no-op rerun, lint, broken and malicious configs,
typed --config values, targets, resume, GPU resources, use as a module, and the HTML report. The
smoke workflow runs once per session (tests/conftest.py), from a working directory other than the
repository's (snakemake -s <repo>/Snakefile)."""

import contextlib
import json
import os
import re
import shlex
import signal
import subprocess
import sys

import pandas as pd
import pytest
import yaml

from mr2.engine import config as run_config
from mr2.results.figures.registry import FigureOptions, config_figures, figure_options
from conftest import REPO, pipeline_env, read_run_folders, run_folders, run_snakemake, workdir_with_configs

SMOKE = ["--configfile", "config/smoke.yaml"]
METHODS = ["erm", "mr2", "mr2_uniform", "mr2_no_rep"]
#: the figures the smoke config draws, as the registry reads it (no regimes figure: it runs one regime)
FIGURES = config_figures(yaml.safe_load((REPO / "config" / "smoke.yaml").read_text()))


@pytest.mark.slow
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
    assert report.index("## Verdict") < report.index("## Results")  # the report opens with the verdict
    comparisons = pd.read_csv(smoke_results / "tables" / "comparisons.csv")
    assert set(comparisons["kind"]) == {"reference", "ablation"} and comparisons["mde"].gt(0).all()
    assert all(f"figures/{name}.png" in report for name in FIGURES)
    assert not (smoke_results / "figures" / "regimes.png").exists() and "`config/regimes.yaml`" in report
    md = (smoke_results / "tables" / "results.md").read_text()
    assert "| fashion_mnist | mr2 | c_bar=2.0 |" in md
    folders = read_run_folders(smoke_results / "run_folders.tsv")
    assert len(folders) == n_runs and set(runs["run_dir"]) == set(folders.values())
    run = smoke_results.parent / folders["fashion_mnist", "mr2", "c_bar=2.0", 0]
    saved = yaml.safe_load(open(run / "config.yaml"))
    assert saved["method"]["options"]["c_bar"] == 2.0 and saved["tags"]["variant"] == "c_bar=2.0"
    assert json.loads((smoke_results / "pipeline_config.json").read_text())["seeds"] == cfg["seeds"]
    for log in (smoke_results / "logs" / "train").rglob("*.log"):
        assert "epoch 3/3" in log.read_text()
    for rule in ("train", "evaluate"):  # Snakemake's measurement of each model job
        benchmarks = list((smoke_results / "benchmarks" / rule).rglob("*.tsv"))
        assert len(benchmarks) == n_runs
        assert all(pd.read_csv(b, sep="\t")["s"].iloc[0] > 0 for b in benchmarks)


@pytest.mark.slow
def test_second_run_is_a_no_op(smoke_workdir):
    res = run_snakemake(smoke_workdir, *SMOKE, "-n")
    assert "Nothing to be done" in res.stdout + res.stderr


@pytest.mark.slow
def test_lint_is_clean(smoke_workdir):
    res = run_snakemake(smoke_workdir, *SMOKE, "--lint")
    assert res.returncode == 0 and "Congratulations" in res.stdout + res.stderr


def embedded_pages(html):
    """The HTML files Snakemake's report embeds (base64 data URIs), decoded."""
    import base64

    return [base64.b64decode(m).decode(errors="replace")
            for m in re.findall(r"data:text/html;[^\"']*base64,([A-Za-z0-9+/=]+)", html)]


@pytest.mark.slow
def test_report_html_holds_the_findings_and_the_results_table(smoke_workdir):
    run_snakemake(smoke_workdir, *SMOKE, "--report", "results/report.html")
    html = (smoke_workdir / "results" / "report.html").read_text(errors="replace")
    assert "per_class_sorted" in html and "margins_over_training" in html
    pages = [page for page in embedded_pages(html) if "MR² replication report" in page]
    assert len(pages) == 1, "the report page is not in the HTML report"
    page = pages[0]
    table = pd.read_csv(smoke_workdir / "results" / "tables" / "results.csv")
    erm = table[table["method"] == "erm"].iloc[0]
    assert "What we find" in page and "MR² against ERM" in page and "<table>" in page
    assert f"{erm['all_mean']:.1f} ± {erm['all_std']:.1f}" in page  # the results table's numbers
    assert page.count("data:image/png;base64,") >= len(FIGURES)  # every figure inside the page


def planned_jobs(res):
    """{rule: count} from a dry run's job table."""
    text = res.stdout + res.stderr
    table = text[text.index("Job stats:"):]
    return {m.group(1): int(m.group(2)) for m in re.finditer(r"^(\w+)\s+(\d+)$", table, re.M) if m.group(1) != "total"}


@pytest.mark.slow
def test_config_overrides_a_dataset_of_the_embedded_default(tmp_path):
    """`--config datasets=...` is merged into the embedded default (no --configfile): the rest of
    the default stays, and the dataset gets the overridden key."""
    workdir = workdir_with_configs(tmp_path / "wd")
    update = "datasets={fashion_mnist: {data: {name: fashion_mnist, train_cap: 500}}}"
    assert planned_jobs(run_snakemake(workdir, "-n", "--config", update)) == planned_jobs(run_snakemake(workdir, "-n"))
    run_snakemake(workdir, "results/pipeline_config.json", "--config", update)
    config = json.loads((workdir / "results" / "pipeline_config.json").read_text())
    assert config["datasets"]["fashion_mnist"]["data"]["train_cap"] == 500
    assert config["methods"] == ["erm", "mr2", "mr2_uniform", "mr2_no_rep"] and config["seeds"] == [0, 1, 2]


@pytest.mark.slow
def test_unquoted_amp_off_in_a_config_file_means_off(tmp_path):
    """YAML 1.1 (Snakemake's reader) turns `amp: off` into false; the pipeline and the engine read it as off."""
    workdir = workdir_with_configs(tmp_path / "wd")
    (workdir / "config" / "off.yaml").write_text((workdir / "config" / "smoke.yaml").read_text() + "\nrun:\n  amp: off\n")
    run = run_folders(workdir, "--configfile", "config/off.yaml")["fashion_mnist", "erm", "default", 0] + "/run.yaml"
    run_snakemake(workdir, run, "--configfile", "config/off.yaml")
    assert yaml.safe_load((workdir / run).read_text())["amp"] == "off"
    assert run_config.resolve(sets=["amp=off"])["amp"] == "off"


@pytest.mark.slow
def test_the_margin_figures_follow_mr2_whatever_method_is_swept(tmp_path):
    """Sweeping a baseline's option (here focal's gamma) keeps the figures and the premise analysis
    on MR²'s margins; the sweeps figure draws the swept method."""
    workdir = workdir_with_configs(tmp_path / "wd")
    smoke = yaml.safe_load((workdir / "config" / "smoke.yaml").read_text())
    for name, methods, sweeps in (("focal", ["erm", "mr2", "focal"], {"method": "focal", "gamma": [1.0]}),
                                  ("uniform", ["erm", "mr2_uniform"], {})):
        (workdir / "config" / f"{name}.yaml").write_text(yaml.safe_dump({**smoke, "methods": methods, "sweeps": sweeps}))
    res = run_snakemake(workdir, "-n", "-p", "--configfile", "config/focal.yaml")
    (figures,) = jobs_of(res.stdout, "figures")
    (analysis,) = jobs_of(res.stdout, "analysis")
    (report,) = jobs_of(res.stdout, "report")
    # the figures and the report read their methods from the pipeline config as run, as the analysis does
    assert "--config results/pipeline_config.json" in figures and "--config results/pipeline_config.json" in report
    assert figure_options(yaml.safe_load((workdir / "config" / "focal.yaml").read_text())) == \
        FigureOptions("erm", "mr2", "focal")
    assert "--method mr2" in analysis
    res = run_snakemake(workdir, "-n", "-p", "--configfile", "config/uniform.yaml")
    assert "--method mr2_uniform" in jobs_of(res.stdout, "analysis")[0]


@pytest.mark.slow
@pytest.mark.parametrize("target, needle", [
    ("results/runs/fashion_mnist/mr2/c_bar=0.5/0123abcd/seed0/eval/metrics.json",
     "the target's variant 'c_bar=0.5' is neither 'default' nor one of config key 'sweeps' (c_bar=2.0)"),
    ("results/runs/other/erm/default/0123abcd/seed0/eval/metrics.json",
     "the target's dataset 'other' is not in config key 'datasets' (fashion_mnist)"),
    ("results/runs/fashion_mnist/erm/default/0123abcd/seed0/eval/metrics.json",
     "the target's run folder '0123abcd' (fashion_mnist/erm/default) holds other settings than this config's")])
def test_a_target_outside_the_config_is_refused_naming_the_key(tmp_path, target, needle):
    res = run_snakemake(workdir_with_configs(tmp_path / "wd"), *SMOKE, "-n", target, check=False)
    assert res.returncode != 0 and needle in res.stdout + res.stderr and "KeyError" not in res.stdout + res.stderr


@contextlib.contextmanager
def handed_over(workdir):
    """The output root ``workdir/results`` handed to another config for a while: its
    pipeline_config.json moved aside (a rename keeps its time), put back after."""
    recorded = workdir / "results" / "pipeline_config.json"
    aside = recorded.with_name("pipeline_config.aside")
    os.replace(recorded, aside)
    try:
        yield
    finally:
        os.replace(aside, recorded)


@pytest.mark.slow
def test_one_config_change_adds_only_its_runs(smoke_workdir):
    with handed_over(smoke_workdir):  # the output root holds one config's results: smoke's until handed over
        res = run_snakemake(smoke_workdir, *SMOKE, "-n", "--config", "seeds=[0,1,2]")
    jobs = planned_jobs(res)
    assert jobs["train"] == len(METHODS) + 1 and jobs["evaluate"] == len(METHODS) + 1
    assert "prepare" not in jobs


@pytest.mark.slow
def test_one_target_path_reruns_one_run(smoke_workdir):
    target = run_folders(smoke_workdir, *SMOKE)["fashion_mnist", "mr2_uniform", "default", 0] + "/eval/metrics.json"
    (smoke_workdir / target).unlink()
    res = run_snakemake(smoke_workdir, target, *SMOKE)
    assert (smoke_workdir / target).is_file()
    assert planned_jobs(res) == {"evaluate": 1}


@pytest.mark.slow
def test_killed_training_job_resumes_when_the_workflow_is_rerun(smoke_workdir):
    run = run_folders(smoke_workdir, *SMOKE)["fashion_mnist", "erm", "default", 1]
    outputs = [f"{run}/{f}" for f in ("model.pt", "config.yaml", "epochs.csv")]
    for f in outputs:
        (smoke_workdir / f).unlink()
    dry = run_snakemake(smoke_workdir, outputs[0], "-n", "-p", *SMOKE)
    line = next(line for line in (dry.stdout + dry.stderr).splitlines() if " train --config " in line)
    cmd = shlex.split(line[line.index("python -m mr2 train"):].split(" > ")[0])  # the rule's command, output to us
    proc = subprocess.Popen(cmd, cwd=smoke_workdir, stdout=subprocess.PIPE, text=True,
                            env={**pipeline_env(), "PYTHONUNBUFFERED": "1"})
    for line in proc.stdout:
        if "epoch 1/3" in line:
            os.kill(proc.pid, signal.SIGKILL)
            break
    proc.wait()
    assert (smoke_workdir / run / "checkpoint.pt").is_file() and not (smoke_workdir / outputs[0]).exists()
    run_snakemake(smoke_workdir, outputs[0], *SMOKE)
    log = (smoke_workdir / (run.replace("results/runs/", "results/logs/train/") + ".log")).read_text()
    assert "resuming" in log and "after epoch 1" in log
    assert not (smoke_workdir / run / "checkpoint.pt").exists()
    # a finished run trained again by the workflow: Snakemake removes the job's outputs first, so
    # `mr2 train` (which refuses a folder holding a finished run without --force) trains it
    before = (smoke_workdir / outputs[0]).read_bytes()
    run_snakemake(smoke_workdir, outputs[0], "--forcerun", "train", *SMOKE)
    assert (smoke_workdir / outputs[0]).read_bytes() == before  # and the same bytes again


@pytest.mark.slow
def test_theory_assumptions_reach_the_theory_step(smoke_workdir, tmp_path):
    extra = tmp_path / "theory.yaml"
    extra.write_text(yaml.safe_dump({"theory": {"norm": "frobenius", "delta": 0.1}}))
    with handed_over(smoke_workdir):
        res = run_snakemake(smoke_workdir, "-n", "-p", "--forcerun", "theory_bound", *SMOKE, str(extra))
    line = next(line for line in (res.stdout + res.stderr).splitlines() if "python -m theory bound" in line)
    assert "--delta 0.1" in line and "--norm frobenius" in line and "--c " not in line  # c: the CLI's default


def with_change(workdir, change, name="broken.yaml"):
    """config/<name>: the smoke config with ``change`` applied (``datasets`` replaced as a whole)."""
    cfg = yaml.safe_load(open(workdir / "config" / "smoke.yaml"))
    cfg.update(change)
    (workdir / "config" / name).write_text(yaml.safe_dump(cfg))
    return ["--configfile", f"config/{name}"]


FM = {"name": "fashion_mnist", "train_cap": 100, "test_cap": 100}
# each fails when the workflow is parsed: before any job, nothing written
BROKEN = {
    "unknown method": ({"methods": ["erm", "mr3"]}, "mr3"),
    "negative lambda": ({"method_options": {"mr2": {"lam": -1.0}}}, "lam"),
    "boolean lambda": ({"method_options": {"mr2": {"lam": True}}}, "lam"),
    "negative lambda sweep": ({"sweeps": {"method": "mr2", "lam": [-0.5]}}, "sweeps"),
    "unknown key": ({"epochs": 3}, "epochs"),
    "theory delta out of range": ({"theory": {"delta": 1.5}}, "delta"),
    "unknown engine key": ({"datasets": {"fashion_mnist": {"data": FM, "train": {"epoch": 3}}}}, "epoch"),
    "fractional epochs": ({"datasets": {"fashion_mnist": {"data": FM, "train": {"epochs": 2.5}}}}, "epochs"),
    "unknown device": ({"device": "tpu"}, "device"),
    "misspelt device": ({"device": "cdua"}, "device"),
    "options of a method not run": ({"method_options": {"mr_2": {"lam": 0.3}}}, "mr_2"),
    "options of a method not in methods": ({"method_options": {"focal": {"gamma": 1.0}}}, "method_options.focal"),
    "swept option the method lacks": ({"sweeps": {"method": "mr2", "gamma": [1.0]}}, "sweeps.gamma"),
    "shared GPU without one GPU": ({"gpus": 0, "runs_per_gpu": 4}, "runs_per_gpu"),
    "fractional seed": ({"seeds": [0, 1.0]}, "seeds"),
    "seed beyond 64 bits": ({"seeds": [0, 2**64]}, "seeds"),
}
# names that would become shell words or paths outside results/
MALICIOUS = {
    "dataset key runs a command": ({"datasets": {"fm$(touch PWNED)": {"data": FM}}}, "datasets"),
    "dataset key leaves results/": ({"datasets": {"../../../escaped": {"data": FM}}}, "datasets"),
    "sweep method runs a command": ({"sweeps": {"method": "mr2$(touch PWNED)", "c_bar": [2.0]}}, "sweeps"),
    "sweep value runs a command": ({"sweeps": {"method": "mr2", "statistic": ["a$(touch PWNED)"]}}, "statistic"),
    "sweep option leaves results/": ({"sweeps": {"method": "mr2", "../x": [1.0]}}, "sweeps"),
    "reference runs a command": ({"reference": "erm;touch PWNED"}, "reference"),
    "dataset key ends in a newline": ({"datasets": {"fm\n": {"data": FM}}}, "datasets"),
    "output root leaves the folder": ({"output_root": "../escaped"}, "output_root"),
    "output root runs a command": ({"output_root": "out$(touch PWNED)"}, "output_root"),
}


def nothing_written(workdir):
    written = [p for p in workdir.rglob("*") if p.is_file() and ".snakemake" not in p.parts
               and p.parent.name != "config"]
    assert not written and not (workdir / "results").exists() and not (workdir.parent / "escaped").exists(), written


@pytest.mark.slow
@pytest.mark.parametrize("case", [*BROKEN, *MALICIOUS])
@pytest.mark.parametrize("dry", [True, False], ids=["dry-run", "real-run"])
def test_bad_config_fails_when_parsed_naming_the_key(tmp_path, case, dry):
    change, needle = {**BROKEN, **MALICIOUS}[case]
    workdir = workdir_with_configs(tmp_path / "wd")
    res = run_snakemake(workdir, *with_change(workdir, change), *(["-n"] if dry else []), check=False)
    out = res.stdout + res.stderr
    assert res.returncode != 0 and needle in out, out[-2000:]
    assert "Traceback" not in out
    nothing_written(workdir)


@pytest.mark.slow
def test_missing_dataset_fails_in_its_config_job_naming_it(tmp_path):
    workdir = workdir_with_configs(tmp_path / "wd")
    change = {"datasets": {"cifar100": {"data": {"name": "cifar100", "root": "/nonexistent/cifar"}}}}
    args = with_change(workdir, change)
    assert "data_config" in run_snakemake(workdir, *args, "-n").stdout  # a dry run needs no data
    res = run_snakemake(workdir, *args, check=False)
    assert res.returncode != 0
    (log,) = (workdir / "results" / "logs" / "data_config" / "cifar100").glob("*.log")
    log = log.read_text()
    assert "/nonexistent/cifar" in log and len(log.strip().splitlines()) == 1 and "Traceback" not in log
    assert not list((workdir / "results" / "data").rglob("*.pt"))
    assert not list((workdir / "results").rglob("model.pt"))


@pytest.mark.slow
@pytest.mark.parametrize("args", [
    ["--config", "method_options={mr2: {lam: 0.3}}"],
    ["--config", "sweeps={method: mr2, lam: [0.5]}"],
    ["--config", "seeds=[0,1]", "threads=1"],
], ids=["nested options", "nested sweep", "list"])
def test_values_given_with_config_are_typed(tmp_path, args):
    workdir = workdir_with_configs(tmp_path / "wd")
    res = run_snakemake(workdir, *SMOKE, "-n", "-p", *args)
    assert res.returncode == 0
    if "lam: [0.5]" in args[1]:
        assert re.search(r"results/runs/fashion_mnist/mr2/lam=0\.5/[0-9a-f]{8}/seed1/run\.yaml", res.stdout)
    if "lam: 0.3" in args[1]:
        run = run_folders(workdir, *SMOKE, *args)["fashion_mnist", "mr2", "default", 0] + "/run.yaml"
        run_snakemake(workdir, run, *SMOKE, *args)
        written = yaml.safe_load((workdir / run).read_text())
        assert written["method"]["options"]["lam"] == 0.3 and written["method"]["options"]["c_bar"] == 1.0


@pytest.mark.slow
def test_yaml_1_1_numbers_in_a_file_are_numbers(tmp_path):
    workdir = workdir_with_configs(tmp_path / "wd")
    text = (workdir / "config" / "smoke.yaml").read_text() + "method_options: {mr2: {lam: 1e-2}}\n"
    text = text.replace("warmup_epochs: 0}", "warmup_epochs: 0, weight_decay: 5e-4}")
    (workdir / "config" / "typed.yaml").write_text(text)
    run = run_folders(workdir, "--configfile", "config/typed.yaml")["fashion_mnist", "mr2", "default", 0] + "/run.yaml"
    run_snakemake(workdir, run, "--configfile", "config/typed.yaml")
    written = yaml.safe_load((workdir / run).read_text())
    assert written["method"]["options"]["lam"] == 0.01 and written["train"]["weight_decay"] == 0.0005


def test_every_path_and_name_in_shell_commands_is_quoted():
    """Each {input}, {output}, {params}, {log} and {wildcards} of a shell command carries :q (threads are ints)."""
    for path in (REPO / "workflow" / "rules").glob("*.smk"):
        for field in re.findall(r"\{((?:input|output|params|log|wildcards)[^}]*)\}", path.read_text()):
            assert field.endswith(":q"), f"{path.name}: {{{field}}} is not quoted"


def rule_texts():
    """{rule name: its text} of every rule in workflow/rules/*.smk."""
    text = "".join(p.read_text() for p in (REPO / "workflow" / "rules").glob("*.smk"))
    return {m.group(1): m.group(0) for m in re.finditer(r"^rule (\w+):\n(?:(?:    .*)?\n)*", text, re.M)}


def test_cpu_only_steps_stay_off_the_cluster():
    """Under the SLURM profile the table, figure, analysis, theory, report and config steps run where
    Snakemake runs (each rule's `localrule: True`, which renamed rules of a module keep; no
    `localrules:` by name), and the profile names no empty account."""
    rules = rule_texts()
    local = {name for name, text in rules.items() if "\n    localrule: True\n" in text}
    assert "localrules" not in "".join(p.read_text() for p in (REPO / "workflow" / "rules").glob("*.smk"))
    assert {"aggregate", "results_table", "figures", "analysis", "theory_bound", "report", "pipeline_config",
            "run_config", "data_config"} <= local
    assert {"train", "evaluate", "prepare", "jtt_stage1"}.isdisjoint(local)
    profile = yaml.safe_load((REPO / "profiles" / "slurm" / "config.yaml").read_text())
    assert "slurm_account" not in profile.get("default-resources", {})


@pytest.mark.slow
def test_runs_per_gpu_declares_gpu_slots_and_claims_a_device(tmp_path):
    workdir = workdir_with_configs(tmp_path / "wd")
    res = run_snakemake(workdir, *SMOKE, "-n", "-p", "--config", "gpus=1", "runs_per_gpu=4", "device=auto",
                        "--resources", "gpu_slot=8")
    jobs = res.stdout.split("\n\n")
    for rule in ("train", "evaluate"):
        mine = [job for job in jobs if re.search(rf"^(local)?rule {rule}:", job.strip(), re.M)]
        # gpu_slot limits how many share a machine's GPUs; gpu=1 gets each job a GPU under SLURM
        assert mine and all(re.search(r"resources: .*\bgpu_slot=1\b", job) and re.search(r"resources: .*\bgpu=1\b", job)
                            for job in mine)
    assert "--gpu-slots 4 --lock-dir results/.gpu_locks" in res.stdout
    plain = run_snakemake(workdir, *SMOKE, "-n", "--config", "gpus=1", "--resources", "gpu=1")
    assert "gpu=1" in plain.stdout and "gpu_slot" not in plain.stdout


def jobs_of(stdout, rule):
    """The text of each job of ``rule`` in a dry run's output (from its `rule` line to the next job's)."""
    return [job for job in re.split(r"\n(?=\[|(?:local)?rule \w+:)", stdout) if re.match(rf"(local)?rule {rule}:", job)]


@pytest.mark.slow
def test_gpu_jobs_spread_over_the_gpus_of_a_machine(tmp_path):
    """`gpus: 1`: every model job claims a whole GPU (--gpu-slots 1), so the jobs that
    `--resources gpu=<G>` lets run at once are on G different GPUs, not all on GPU 0. `gpus: 2`: a
    training job is torchrun under `mr2 on-gpus 2` (two GPUs no other job holds) and declares gpu=2;
    evaluation is one process on one claimed GPU and declares gpu=1."""
    workdir = workdir_with_configs(tmp_path / "wd")
    one = run_snakemake(workdir, *SMOKE, "-n", "-p", "--config", "gpus=1", "device=cuda", "--resources", "gpu=4")
    for rule in ("train", "evaluate"):
        mine = jobs_of(one.stdout, rule)
        assert mine and all("gpu=1" in job and "--device cuda --gpu-slots 1 --lock-dir results/.gpu_locks" in job
                            for job in mine)
    two = run_snakemake(workdir, *SMOKE, "-n", "-p", "--config", "gpus=2", "device=cuda", "--resources", "gpu=4")
    train, evaluate = jobs_of(two.stdout, "train"), jobs_of(two.stdout, "evaluate")
    assert train and all("gpu=2" in job and "python -m mr2 on-gpus 2 --lock-dir results/.gpu_locks -- python -m "
                         "torch.distributed.run --standalone --nproc_per_node=2 -m mr2 train" in job
                         and "--gpu-slots" not in job for job in train)
    assert evaluate and all("gpu=1" in job and "--gpu-slots 1 --lock-dir" in job for job in evaluate)
    cpu = run_snakemake(workdir, *SMOKE, "-n", "-p")
    assert "--gpu-slots" not in cpu.stdout and "on-gpus" not in cpu.stdout


def test_a_jobs_command_does_not_depend_on_snakemakes_threads(tmp_path):
    """Issue 41: a profile's `set-threads: train: 4` once reached `mr2 train --threads 4` and the CPU
    results differed from a local run's. The job reserves the cores it is given, and runs the same
    command: the engine takes the threads from the run's run.yaml (tests/test_red_team.py)."""
    workdir = workdir_with_configs(tmp_path / "wd")
    rules = ("train", "evaluate")
    plain = run_snakemake(workdir, *SMOKE, "-n", "-p")
    more = run_snakemake(workdir, *SMOKE, "-n", "-p", "--set-threads", *(f"{rule}=2" for rule in rules))  # --cores 2: at most 2
    for rule in rules:
        jobs = {name: jobs_of(res.stdout, rule) for name, res in (("plain", plain), ("more", more))}
        assert jobs["more"] and all(re.search(r"^    threads: 2$", job, re.M) for job in jobs["more"])
        commands = {name: sorted(line for job in found for line in job.splitlines() if "python -m mr2" in line)
                    for name, found in jobs.items()}
        assert commands["plain"] and commands["plain"] == commands["more"]


def touched_workdir(path):
    """A working directory in which every output the smoke config plans exists (empty) and is up to
    date, without running a job: the workflow's plan, for tests of what it plans next."""
    workdir = workdir_with_configs(path)
    plan = run_snakemake(workdir, *SMOKE, "-n").stdout
    run_snakemake(workdir, "results/pipeline_config.json", *SMOKE)  # the config's record, as the workflow writes it
    for line in re.findall(r"^    output: (.*)$", plan, re.M):
        for name in line.split(", "):
            if name.endswith("pipeline_config.json"):
                continue
            (workdir / name).parent.mkdir(parents=True, exist_ok=True)
            (workdir / name).touch()
    run_snakemake(workdir, *SMOKE, "--touch")  # every output up to date, in the order of the jobs
    assert "Nothing to be done" in run_snakemake(workdir, *SMOKE, "-n").stdout
    return workdir


def test_an_output_no_later_step_reads_is_made_again_when_deleted(tmp_path):
    """Issue 41: an interrupted results step deletes its outputs, and `rule all` asked only for the
    report and run_folders.tsv, so a PDF, settings.csv or an analysis table that no later step reads
    was never made again ("Nothing to be done"). Every output of the results steps is a target: with
    every planned output present and up to date, deleting one plans its step again."""
    workdir = touched_workdir(tmp_path / "wd")
    gone = {"aggregate": "results/tables/groups.csv", "results_table": "results/tables/settings.csv",
            "figures": "results/figures/tradeoff.pdf", "analysis": "results/analysis/decomposition.csv",
            "theory_bound": "results/theory/bound.csv"}
    for path in gone.values():
        (workdir / path).unlink()
    again = run_snakemake(workdir, *SMOKE, "-n").stdout
    for rule, path in gone.items():
        job = jobs_of(again, rule)
        assert len(job) == 1 and re.search(rf"reason: Missing output files: .*{re.escape(path)}", job[0]), rule


def test_an_output_root_holding_another_configs_results_is_refused_naming_both(tmp_path):
    """Issues 41 and 58 (N15/B12): two working directories writing to one output_root, one config after
    the other, ended with "Nothing to be done" while the tables, figures and report were the other
    config's (Snakemake's records of what ran are per working directory). The output root's
    pipeline_config.json records its config: a workflow of another config is refused when it is
    parsed, a dry run too, in one line naming both configs and the keys they differ in; the output
    root, once handed over (that file deleted), rebuilds every results step from the new config."""
    workdir = touched_workdir(tmp_path / "wd")
    recorded = workdir / "results" / "pipeline_config.json"
    before = recorded.read_bytes()
    other = workdir_with_configs(tmp_path / "other")
    for dry in (["-n"], []):
        res = run_snakemake(other, *SMOKE, *dry, "--config", "seeds=[0,1,2]", f"output_root={recorded.parent}",
                            check=False)
        out = res.stdout + res.stderr
        line = next(line for line in out.splitlines() if "holds the results of another config" in line)
        assert res.returncode != 0 and "Nothing to be done" not in out
        assert f"output root {recorded.parent} holds the results of another config (config/smoke.yaml from {workdir}" in line
        assert "than this workflow's (config/smoke.yaml --config output_root, seeds" in line
        assert "they differ in output_root, seeds:" in line and f"delete {recorded}" in line
    assert recorded.read_bytes() == before and not (other / "results").exists()
    recorded.unlink()  # handed over: every results step is planned again, from the new config
    res = run_snakemake(other, *SMOKE, "-n", "--config", "seeds=[0,1,2]", f"output_root={recorded.parent}")
    assert {"pipeline_config", "aggregate", "results_table", "figures", "report"} <= set(planned_jobs(res))


def test_two_workflows_never_write_one_output_root_at_once(tmp_path):
    """Issue 58 (B12): two workflows started on one output root both trained the same runs and wrote
    the same log files. The first holds a lock under the output root until its Snakemake process ends;
    the second is refused before any job, naming the holder; a holder killed leaves nothing blocking."""
    workdir = workdir_with_configs(tmp_path / "wd")
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(workdir / "results" / "pipeline_config.json")],
                              cwd=tmp_path, stdout=subprocess.PIPE, text=True,
                              env={**pipeline_env(), "PYTHONPATH": str(REPO)})
    try:
        assert holder.stdout.readline().strip() == "held"
        res = run_snakemake(workdir, "results/run_folders.tsv", *SMOKE, check=False)
        out = res.stdout + res.stderr
        assert res.returncode != 0 and not (workdir / "results" / "run_folders.tsv").exists()
        assert f"output root results is being written by another workflow (pid {holder.pid} on host" in out
        assert f"working directory {tmp_path}, config elsewhere.yaml" in out
    finally:
        holder.kill()
        holder.wait()
    run_snakemake(workdir, "results/run_folders.tsv", *SMOKE)  # the killed holder's lock went with it
    assert (workdir / "results" / "run_folders.tsv").is_file()


#: a workflow elsewhere holding the output root of pipeline_config.json argv[1] until it is killed
HOLD = """import sys, time
from mr2.pipeline.root import hold
hold(sys.argv[1], {"seeds": [9]}, "elsewhere.yaml")
print("held", flush=True)
time.sleep(600)
"""


def write_module_workflow(workdir, configfile="config/smoke.yaml", prefix=None):
    """``workdir/Snakefile``: a workflow that uses this one as the module ``mr2`` (rules renamed
    ``mr2_*``) with ``configfile`` and, when given, the module's ``prefix:``."""
    prefix_lines = f'    prefix:\n        "{prefix}"\n' if prefix else ""
    (workdir / "Snakefile").write_text(f"""configfile: "{configfile}"


module mr2:
    snakefile:
        "{REPO / 'Snakefile'}"
    config:
        config
{prefix_lines}

use rule * from mr2 as mr2_*
""")


@pytest.mark.slow
def test_the_workflow_works_as_a_snakemake_module(tmp_path):
    workdir = workdir_with_configs(tmp_path / "wd")
    write_module_workflow(workdir)
    direct = planned_jobs(run_snakemake(workdir, *SMOKE, "-n"))
    res = run_snakemake(workdir, "-n", snakefile=workdir / "Snakefile")
    as_module = planned_jobs(res)
    assert as_module == {f"mr2_{rule}": n for rule, n in direct.items()}
    run = run_folders(workdir, *SMOKE)["fashion_mnist", "mr2", "c_bar=2.0", 0] + "/run.yaml"
    run_snakemake(workdir, run, snakefile=workdir / "Snakefile")
    assert yaml.safe_load((workdir / run).read_text())["tags"]["sweep"] == "c_bar"


def test_a_module_never_merges_the_projects_default_under_a_configfile(tmp_path):
    """Issue 58 (item 7): a project as snakedeploy writes it (`configfile: "config/config.yaml"`, a copy
    of the default, and the module) run with `--configfile config/smoke.yaml` got the default merged under
    smoke: its `train.augment: none` changed every run and its hash. That merge is refused when the
    workflow is parsed, naming the key; with Snakemake's --replace-workflow-config the module plans
    exactly smoke's runs, as the workflow run directly does."""
    workdir = workdir_with_configs(tmp_path / "wd")
    write_module_workflow(workdir, configfile="config/config.yaml")
    res = run_snakemake(workdir, *SMOKE, "-n", snakefile=workdir / "Snakefile", check=False)
    out = res.stdout + res.stderr
    assert res.returncode != 0 and "config file config/config.yaml (a `configfile:` of the workflow) is merged " \
        "under --configfile config/smoke.yaml: its keys datasets.fashion_mnist.train.augment would change your runs" in out
    replaced = run_snakemake(workdir, *SMOKE, "--replace-workflow-config", "-n", snakefile=workdir / "Snakefile")
    direct = run_snakemake(workdir_with_configs(tmp_path / "direct"), *SMOKE, "-n")
    assert planned_paths(replaced) == {f"mr2_{rule}": paths for rule, paths in planned_paths(direct).items()}


def planned_paths(res):
    """Every output, log and benchmark path of a dry run's jobs, by rule: {rule: set of paths}."""
    paths = {}
    for job in re.split(r"\n(?=\[|(?:local)?rule \w+:)", res.stdout + res.stderr):
        rule = re.match(r"(?:local)?rule (\w+):", job)
        if rule:
            for field in re.findall(r"^    (?:output|log|benchmark): (.*)$", job, re.M):
                paths.setdefault(rule.group(1), set()).update(field.split(", "))
    return paths


#: the jobs of one run or one dataset (the rest are the config's views of its runs: tables, report)
RUN_RULES = {"run_config", "data_config", "prepare", "train", "evaluate", "jtt_stage1", "jtt_errors"}


@pytest.mark.slow
def test_the_shipped_configs_share_no_run_path_and_one_ablation_reuses_its_folders(tmp_path):
    """config/config.yaml and config/smoke.yaml both name their dataset fashion_mnist: in one working
    directory no run, prepared dataset, log or benchmark of one is a path of the other's, and smoke
    after a (faked) default plans all of its own runs and none of the default's files. A config that
    selects some runs of another (`--config 'methods=[erm,mr2_uniform]' 'seeds=[0]'`) names the same folders."""
    workdir = workdir_with_configs(tmp_path / "wd")
    default = planned_paths(run_snakemake(workdir, "-n"))
    smoke = planned_paths(run_snakemake(workdir, *SMOKE, "-n"))
    default_runs = set().union(*(default[r] for r in RUN_RULES & set(default)))
    smoke_runs = set().union(*(smoke[r] for r in RUN_RULES & set(smoke)))
    assert len(default["train"]) > 0 and len(smoke["train"]) > 0
    assert not default_runs & smoke_runs, sorted(default_runs & smoke_runs)[:5]
    folders = run_folders(workdir, *SMOKE)
    # (another config: its own output root; the folders' names under it are the same)
    run_snakemake(workdir, "subset/run_folders.tsv", *SMOKE, "--config", "methods=[erm,mr2_uniform]", "seeds=[0]",
                  "output_root=subset")
    one = read_run_folders(workdir / "subset" / "run_folders.tsv")
    assert len(one) == 3 and one == {(d, m, v, seed): folders[d, m, v, seed] for d, m, v, seed in one}
    for path in default_runs | set().union(*default.values()):  # the default's runs have run: their files exist
        if path.endswith("pipeline_config.json"):  # (not its record: the output root is smoke's to take)
            continue
        (workdir / path).parent.mkdir(parents=True, exist_ok=True)
        (workdir / path).touch()
    # (files without Snakemake's metadata: --forcerun makes smoke's tables ask for all of its runs)
    after = run_snakemake(workdir, *SMOKE, "-n", "--forcerun", "aggregate")
    assert planned_paths(after)["train"] == smoke["train"]  # all of smoke's runs, still to train
    assert not set().union(*planned_paths(after).values()) & default_runs


@pytest.mark.slow
def test_output_root_moves_every_path(tmp_path):
    """Every output, log, benchmark and path argument of a command is under `output_root`, relative or absolute."""
    workdir = workdir_with_configs(tmp_path / "wd")
    for root in ("elsewhere/out", str(tmp_path / "abs")):
        res = run_snakemake(workdir, *SMOKE, "-n", "-p", "--config", f"output_root={root}", "gpus=1", "device=cuda")
        paths = set().union(*planned_paths(res).values())
        assert paths and all(p.startswith(f"{root}/") for p in paths), sorted(p for p in paths if not p.startswith(root))
        commands = [line for line in res.stdout.splitlines() if "python -m " in line]
        assert commands and not [c for c in commands if re.search(r"(?<![\w/])results/", c)]
        assert f"--lock-dir {root}/.gpu_locks" in res.stdout


@pytest.mark.slow
def test_the_workflow_works_as_a_module_with_a_prefix(tmp_path):
    """`module mr2: ... prefix: "sub"`: every path of every job, and every path its command reads or
    writes (the aggregated runs, the GPU locks), is under sub/; a real run writes nothing elsewhere
    and never reads the working directory's results/."""
    workdir = workdir_with_configs(tmp_path / "wd")
    small = with_change(workdir, {"methods": ["erm", "mr2"], "sweeps": {"method": "mr2"}}, name="small.yaml")
    write_module_workflow(workdir, small[1], prefix="sub")
    res = run_snakemake(workdir, "-n", "-p", "--config", "gpus=1", "device=cuda", snakefile=workdir / "Snakefile")
    paths = set().union(*planned_paths(res).values())
    assert paths and all(p.startswith("sub/results/") for p in paths)
    (aggregate,) = [line for line in res.stdout.splitlines() if "mr2 aggregate --runs" in line]
    runs = aggregate.split("--runs ")[1].split(" --reference")[0].split()
    assert len(runs) == 4 and all(r.startswith("sub/results/runs/") for r in runs)
    assert "--lock-dir sub/results/.gpu_locks" in res.stdout and "--lock-dir results/" not in res.stdout
    (workdir / "results" / "runs").mkdir(parents=True)  # a decoy: another workflow's results/
    run_snakemake(workdir, snakefile=workdir / "Snakefile")
    assert (workdir / "sub" / "results" / "report.md").is_file()
    assert [p.name for p in (workdir / "results").rglob("*")] == ["runs"]
    tables = pd.read_csv(workdir / "sub" / "results" / "tables" / "runs.csv")
    assert len(tables) == 4 and tables["run_dir"].str.startswith("sub/results/runs/").all()


@pytest.mark.slow
def test_both_entries_plan_the_same_jobs(tmp_path):
    """The top-level Snakefile includes workflow/Snakefile (the catalog's entry): the same jobs, the same
    default target (`all`), from either."""
    workdir = workdir_with_configs(tmp_path / "wd")
    top = run_snakemake(workdir, *SMOKE, "-n")
    catalog = run_snakemake(workdir, *SMOKE, "-n", snakefile=REPO / "workflow" / "Snakefile")
    assert planned_jobs(top) == planned_jobs(catalog) and planned_paths(top) == planned_paths(catalog)
    assert planned_jobs(top)["all"] == 1 and planned_jobs(top)["report"] == 1
    meta = yaml.safe_load((REPO / ".snakemake-workflow-catalog.yml").read_text())
    assert meta["usage"]["software-stack-deployment"]["conda"] and list((REPO / "workflow" / "envs").glob("*.yml"))


def git_clone_of_the_repository(dest):
    """A `git clone` of this repository's committed state (what a user deploys), or a skip outside git."""
    if not (REPO / ".git").exists():
        pytest.skip("the repository is not a git checkout")
    subprocess.run(["git", "clone", "-q", str(REPO), str(dest)], check=True, capture_output=True)
    return dest, subprocess.run(["git", "-C", str(dest), "rev-parse", "HEAD"], capture_output=True, text=True,
                                check=True).stdout.strip()


@pytest.mark.slow
@pytest.mark.parametrize("source", ["folder", "git"])
def test_a_clone_deploys_as_a_module_the_catalogs_way(tmp_path, source):
    """A project whose Snakefile is `module mr2: snakefile: <clone>/workflow/Snakefile` (a folder) or
    `"git+file://<clone>/workflow/Snakefile@<commit>"` (read from git, as snakedeploy's github(...) is)
    and `use rule * from mr2` parses without mr2 on PYTHONPATH (the schemas and mr2.pipeline come from
    the module's own source) and plans the repository's jobs, every command running the deployed mr2:
    the clone itself, or that commit's tree under .snakemake/mr2-source/."""
    clone, commit = git_clone_of_the_repository(tmp_path / "clone")
    project = workdir_with_configs(tmp_path / "project")
    entry = clone / "workflow" / "Snakefile" if source == "folder" else f"git+file://{clone}/workflow/Snakefile@{commit}"
    (project / "Snakefile").write_text(
        f'configfile: "config/smoke.yaml"\n\n\nmodule mr2:\n    snakefile:\n        "{entry}"\n'
        "    config:\n        config\n\n\nuse rule * from mr2\n"
    )
    env = {key: value for key, value in pipeline_env().items() if key != "PYTHONPATH"}
    cmd = [sys.executable, "-m", "snakemake", "-s", str(project / "Snakefile"), "--cores", "1", "-n", "-p"]
    res = subprocess.run(cmd, cwd=project, capture_output=True, text=True, env=env)
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-3000:]
    direct = run_snakemake(workdir_with_configs(tmp_path / "direct"), *SMOKE, "-n")
    assert planned_jobs(res) == planned_jobs(direct) and planned_paths(res) == planned_paths(direct)
    deployed = clone if source == "folder" else project / ".snakemake" / "mr2-source" / commit
    assert (deployed / "mr2" / "pipeline" / "config.py").is_file()
    prefixes = re.findall(r"PYTHONPATH=(\S*?)\$\{PYTHONPATH", res.stdout)
    assert len(prefixes) == res.stdout.count("python -m ") > 30 and set(prefixes) == {str(deployed)}, set(prefixes)


def test_snakefiles_pass_snakefmt():
    pytest.importorskip("snakefmt", reason="snakefmt is not installed (pip install -r requirements.txt)")
    import sys

    files = [REPO / "Snakefile", REPO / "workflow"]
    res = subprocess.run([sys.executable, "-m", "snakefmt", "--check", *map(str, files)], cwd=REPO,
                         capture_output=True, text=True)
    assert res.returncode == 0, res.stdout + res.stderr


@pytest.mark.slow
@pytest.mark.parametrize("target", [
    "results/runs/fashion_mnist/erm/default/{hash}/seedabc/eval/metrics.json",
    "results/runs/fashion_mnist/mr3/default/{hash}/seed0/eval/metrics.json",
    "results/runs/fashion_mnist/erm/default/nohash/seed0/eval/metrics.json",
    "results/runs/fashion_mnist/erm/default/{hash}/seed0/../../x/eval/metrics.json",
], ids=["seed", "method", "hash", "dots"])
def test_a_target_no_pattern_matches_has_no_rule(tmp_path, target):
    """A target that no path of the config can be fails before any job with Snakemake's "no rule to
    produce" message, not a traceback."""
    workdir = workdir_with_configs(tmp_path / "wd")
    erm = run_folders(workdir, *SMOKE)["fashion_mnist", "erm", "default", 0]
    target = target.format(hash=erm.split("/")[-2])
    res = run_snakemake(workdir, *SMOKE, "-n", target, check=False)
    out = res.stdout + res.stderr
    assert res.returncode != 0 and "No rule to produce" in out and "Traceback" not in out, out[-2000:]


@pytest.mark.slow
def test_slurm_profile_settings_apply_to_renamed_rules_and_shared_gpus_get_a_gpu(tmp_path):
    """With the SLURM profile, a module's `mr2_*` rules get the same per-rule resources as the
    workflow's own; with runs_per_gpu each model job still asks SLURM for a GPU (gpu=1); no job is
    sent to a partition by name, and none asks for more threads than the config's."""
    profile = yaml.safe_load((REPO / "profiles" / "slurm" / "config.yaml").read_text())
    own = {k: v for k, v in profile["set-resources"].items() if not k.startswith("mr2_")}
    assert own and all(profile["set-resources"][f"mr2_{k}"] == v for k, v in own.items())
    assert "set-threads" not in profile and "cpus_per_task" not in str(profile)
    workdir = workdir_with_configs(tmp_path / "wd")
    write_module_workflow(workdir)
    args = ["-n", "--profile", str(REPO / "profiles" / "slurm"), "--config", "gpus=1", "runs_per_gpu=2", "threads=2"]
    for snakefile, name in ((workdir / "Snakefile", "mr2_{}"), (REPO / "Snakefile", "{}")):
        res = run_snakemake(workdir, *args, *([] if name == "mr2_{}" else SMOKE), snakefile=snakefile)
        assert "slurm_partition" not in res.stdout
        for rule, wanted in (("prepare", {"runtime": "30", "mem_mb": "2000"}), ("evaluate", {"runtime": "30"}),
                             ("train", {"runtime": "240", "gpu": "1", "gpu_slot": "1"})):
            mine = jobs_of(res.stdout, name.format(rule))
            assert mine, (rule, name)
            for job in mine:
                resources = dict(re.findall(r"(\w+)=([^,\n]+)", re.search(r"resources: (.*)", job).group(1)))
                assert {k: resources.get(k) for k in wanted} == wanted, (rule, resources)
                assert re.search(r"threads: 2\b", job) or rule == "prepare", job


#: peak memory (Snakemake's max_rss, MB) of the cluster jobs on CPU: {rule: [(input MB, peak MB), ...]},
#: config/smoke.yaml (1.6 MB of prepared data) and the full Fashion-MNIST (56 MB), mr2 and erm
MEASURED = {"train": [(1.6, 1013.9), (56.0, 1069.7)], "evaluate": [(1.6, 886.9), (56.0, 1262.7)],
            "prepare": [(0.0, 805.9), (0.0, 873.0)]}


def profile_memory(rule, input_mb, attempt=1):
    """The profile's mem_mb of a ``rule`` job with ``input_mb`` of input, evaluated as Snakemake does."""
    expression = yaml.safe_load((REPO / "profiles" / "slurm" / "config.yaml").read_text())["set-resources"][rule]["mem_mb"]
    return eval(str(expression), {"input": type("Input", (), {"size_mb": input_mb})(), "attempt": attempt})


@pytest.mark.parametrize("rule", sorted(MEASURED))
def test_slurm_memory_covers_the_measured_peaks_with_headroom(rule):
    """Each cluster job asks at least 1.5x the peak measured for its rule at that input size, not more
    than 4x at the larger one (a job that asks 16 GB to use 1 queues longer), and twice as much on a retry."""
    for input_mb, peak in MEASURED[rule]:
        asked = profile_memory(rule, input_mb)
        assert isinstance(asked, int) and asked >= 1.5 * peak, (rule, input_mb, asked)
        assert profile_memory(rule, input_mb, attempt=2) == 2 * asked
    input_mb, peak = MEASURED[rule][-1]
    assert profile_memory(rule, input_mb) <= 4 * peak
    same_code = {"train": ["jtt_stage1"], "evaluate": ["evaluate_val", "jtt_errors"], "prepare": []}[rule]
    assert all(profile_memory(other, input_mb) == profile_memory(rule, input_mb) for other in same_code)


def test_slurm_partitions_send_only_gpu_jobs_to_the_gpu_partition():
    """The plugin's own choice over profiles/slurm/partitions.yaml: a job that declares a GPU goes to the
    GPU partition, any other job to the one without GPUs."""
    partitions = pytest.importorskip("snakemake_executor_plugin_slurm.partitions")
    import logging

    profile = yaml.safe_load((REPO / "profiles" / "slurm" / "config.yaml").read_text())
    found = partitions.read_partition_file(REPO / "profiles" / "slurm" / profile["slurm-partition-config"])

    class Job:
        def __init__(self, **resources):
            self.resources, self.threads, self.name = resources, 1, "train"

    choose = lambda job: partitions.get_best_partition(found, job, logging.getLogger("test"))  # noqa: E731
    assert choose(Job(mem_mb=2000, runtime=240)) == "cpu"
    assert choose(Job(mem_mb=2000, runtime=240, gpu=1)) == "gpu"
    assert choose(Job(mem_mb=2000, runtime=240, gpu=1, gpu_slot=1)) == "gpu"
