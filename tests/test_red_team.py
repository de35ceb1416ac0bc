"""Issue 41, the engine, data and report side: a run's bytes depend on its run.yaml alone; finished
work is never lost or credited to another config; the red team's hostile inputs (script through the
report's pasted sections, images shared by training and evaluation, classes left without training
samples, a full disk, a read-only or misnamed output, overflowing numbers) are one line of error.
"""

import hashlib
import os
from pathlib import Path

import pytest
import yaml

from mr2.common import io

import test_safety as safety

REPO = Path(__file__).resolve().parents[1]
mr2, one_line_error = safety.mr2, safety.assert_one_line_error
RECORD = ("model.pt", "config.yaml", "epochs.csv")


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def mr2_env(*args: str, **env: str):
    """``mr2(*args)`` with extra environment variables."""
    import subprocess
    import sys

    return subprocess.run([sys.executable, "-m", "mr2", *args], capture_output=True, text=True, cwd=REPO,
                          env={**os.environ, "PYTHONPATH": str(REPO), **env})


# ------------------------------------------------------------------ 1. a run's bytes depend on its run.yaml only
def test_the_threads_of_a_run_come_from_its_config_whatever_the_command_says(digits, tmp_path):
    cfg_file = tmp_path / "run.yaml"
    io.save_yaml(safety.run_cfg(), cfg_file)  # threads: 1, as the pipeline's run.yaml holds it
    train = ["train", "--config", str(cfg_file), "--data", str(digits), "--device", "cpu", "--out"]
    # torch's own default differs between the two processes; the run's config decides
    assert mr2_env(*train, str(tmp_path / "a"), OMP_NUM_THREADS="2").returncode == 0
    assert mr2_env(*train, str(tmp_path / "b"), "--threads", "1", OMP_NUM_THREADS="1").returncode == 0
    assert [sha256(tmp_path / "a" / f) for f in RECORD] == [sha256(tmp_path / "b" / f) for f in RECORD]
    # a command that asks for other threads than the run's config is refused before anything is written
    line = one_line_error(mr2(*train, str(tmp_path / "c"), "--threads", "2"), "--threads 2 differs from config key "
                          "'threads' (1) of the run's config")
    assert "drop --threads" in line and not (tmp_path / "c").exists()
    for step, out in (("evaluate", tmp_path / "e"), ("errors", tmp_path / "e.csv")):
        res = mr2(step, "--run", str(tmp_path / "a"), "--data", str(digits), "--out", str(out), "--device", "cpu",
                  "--threads", "3")
        one_line_error(res, "--threads 3 differs from config key 'threads' (1)", str(tmp_path / "a" / "model.pt"))
        assert not out.exists()
    # where the config leaves the threads unset, --threads sets them and the run records them
    io.save_yaml({**safety.run_cfg(), "threads": None}, cfg_file)
    assert mr2(*train, str(tmp_path / "d"), "--threads", "2").returncode == 0
    assert yaml.safe_load((tmp_path / "d" / "config.yaml").read_text())["threads"] == 2


@pytest.mark.parametrize("args, needle", [(["--threads", "99999999999"], "--threads must be an integer in [1, 4096], "
                                                                         "got 99999999999"),
                                          (["--set", "threads=99999999999"], "config key 'threads' must be an integer "
                                                                             "in [1, 4096]"),
                                          (["--set", "seed=18446744073709551616"], "config key 'seed' must be below "
                                                                                   "2**64"),
                                          (["--set", "train.crop_padding=99999999999999"],
                                           "config key 'train.crop_padding' (99999999999999) exceeds the images' "
                                           "side (8 pixels")])
def test_numbers_that_overflow_are_one_line_naming_the_key(digits, tmp_path, args, needle):
    res = mr2("train", "--set", "data.name=digits", "--set", "model.name=mlp", *args, "--data", str(digits),
              "--out", str(tmp_path / "run"))
    one_line_error(res, needle)
    assert not (tmp_path / "run" / "checkpoint.pt").exists()


@pytest.mark.parametrize("sets, needle", [
    (["data.name=planted", "data.options.seed=18446744073709551616"], "option 'seed' must be below 2**64"),
    (["data.name=planted", "data.options.dim=99999999999999999999"], "ask for 2e+24 numbers, more than 2.15e+09 (8 GiB"),
    (["data.name=digits", "data.train_cap=18446744073709551616"], "config key 'train_cap' must be None or a positive "
                                                                  "int below 2**63")])
def test_data_options_that_overflow_are_one_line_naming_the_key(tmp_path, sets, needle):
    res = mr2("prepare", *[w for s in sets for w in ("--set", s)], "--out", str(tmp_path / "d.pt"))
    one_line_error(res, needle)
    assert not (tmp_path / "d.pt").exists()


# ------------------------------------------------------------------ 2. finished work is never lost or misattributed
def test_training_into_a_finished_run_is_refused_unless_forced_and_force_drops_its_evaluations(digits, tmp_path):
    cfg_file, run = tmp_path / "run.yaml", tmp_path / "run"
    io.save_yaml(safety.run_cfg(), cfg_file)
    train = ["train", "--config", str(cfg_file), "--data", str(digits), "--device", "cpu", "--out", str(run)]
    assert mr2(*train).returncode == 0
    for split in ("test", "val"):
        folder = run / ("eval" if split == "test" else "eval_val")
        assert mr2("evaluate", "--run", str(run), "--data", str(digits), "--out", str(folder), "--device", "cpu",
                   "--split", split).returncode == 0
    before = {f: sha256(run / f) for f in (*RECORD, "eval/per_class.csv", "eval_val/per_class.csv")}
    # another config into the finished folder: refused, the run and its evaluations untouched
    io.save_yaml(safety.run_cfg(seed=7), cfg_file)
    one_line_error(mr2(*train), f"{run} holds a finished run (model.pt)", "--force")
    assert {f: sha256(run / f) for f in before} == before
    # --force with a refused data file: the finished run is still whole (nothing removed before the checks)
    one_line_error(mr2(*train[:4], str(tmp_path / "none.pt"), *train[5:], "--force"), str(tmp_path / "none.pt"))
    assert {f: sha256(run / f) for f in before} == before
    # --force: the new run, and no evaluation of the old model left to be credited to it
    assert mr2(*train, "--force").returncode == 0
    assert not (run / "eval").exists() and not (run / "eval_val").exists()
    assert yaml.safe_load((run / "config.yaml").read_text())["seed"] == 7 and sha256(run / "model.pt") != before["model.pt"]
    res = mr2("aggregate", "--runs", str(run), "--out", str(tmp_path / "tables"))
    one_line_error(res, f"missing run output {run / 'eval' / 'per_class.csv'}")


def test_a_full_disk_while_training_is_one_line_and_exit_code_2(digits, tmp_path):
    """The disk fills while the first checkpoint is written (its temporary is /dev/full): torch reports
    the failed write as its own RuntimeError; the step says the disk is full, exit code 2 (not the
    code of a diverged run), and leaves no model.pt."""
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full on this system")
    cfg_file, run = tmp_path / "run.yaml", tmp_path / "run"
    io.save_yaml(safety.run_cfg(), cfg_file)
    code = ("import os, sys, tempfile\n"
            "real = tempfile.mkstemp\n"
            "def full(*args, prefix=None, **kwargs):\n"
            "    fd, name = real(*args, prefix=prefix, **kwargs)\n"
            "    if prefix and prefix.startswith('.checkpoint.pt.'):\n"
            "        os.unlink(name)\n"
            "        os.symlink('/dev/full', name)  # every byte written to it: ENOSPC\n"
            "    return fd, name\n"
            "tempfile.mkstemp = full\n"
            "from mr2 import cli\n"
            "sys.exit(cli.main(sys.argv[1:]))\n")
    import subprocess
    import sys

    res = subprocess.run([sys.executable, "-c", code, "train", "--config", str(cfg_file), "--data", str(digits),
                          "--device", "cpu", "--out", str(run)], capture_output=True, text=True, cwd=REPO,
                         env={**os.environ, "PYTHONPATH": str(REPO)})
    one_line_error(res, f"the disk is full: could not write {run / 'checkpoint.pt'}", code=2)
    assert not (run / "model.pt").exists() and not [p for p in run.iterdir() if p.name.endswith(".tmp")]


def test_an_output_that_cannot_be_written_is_one_line_before_any_work(digits, tmp_path):
    cfg_file = tmp_path / "run.yaml"
    io.save_yaml(safety.run_cfg(), cfg_file)
    a_file = tmp_path / "notes.txt"
    a_file.write_text("keep me\n")
    train = ["train", "--config", str(cfg_file), "--data", str(digits), "--device", "cpu", "--out"]
    one_line_error(mr2(*train, str(a_file)), f"the run folder {a_file} is a file, not a folder")
    one_line_error(mr2(*train, str(a_file / "run")), f"cannot write the run folder {a_file / 'run'}")
    assert a_file.read_text() == "keep me\n"
    assert mr2(*train, str(tmp_path / "run")).returncode == 0
    res = mr2("evaluate", "--run", str(tmp_path / "run"), "--data", str(digits), "--out", str(a_file), "--device", "cpu")
    one_line_error(res, f"the evaluation folder {a_file} is a file, not a folder")
    # a read-only folder (as root, who may write anyway, the file system's refusal is played)
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o555)
    try:
        play = os.access(locked, os.W_OK)
        code = ("import errno, os, sys, tempfile\n"
                "real = tempfile.mkstemp\n"
                "def read_only(*args, dir=None, **kwargs):\n"
                f"    if {play} and dir is not None and str(dir).startswith({str(locked)!r}):\n"
                "        raise OSError(errno.EROFS, 'Read-only file system', str(dir))\n"
                "    return real(*args, dir=dir, **kwargs)\n"
                "tempfile.mkstemp = read_only\n"
                "from mr2 import cli\n"
                "sys.exit(cli.main(sys.argv[1:]))\n")
        import subprocess
        import sys

        res = subprocess.run([sys.executable, "-c", code, *train, str(locked / "run")], capture_output=True, text=True,
                             cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)})
        line = one_line_error(res, f"cannot write the run folder {locked / 'run'}")
        assert "Permission denied" in line or "Read-only file system" in line
        assert not (locked / "run" / "checkpoint.pt").exists()
    finally:
        locked.chmod(0o755)


def test_aggregate_refuses_an_output_root_built_from_another_config(tmp_path):
    from results_data import write_run

    run = write_run(tmp_path / "runs", "d", "erm", "default", 0)
    recorded = tmp_path / "pipeline_config.json"
    recorded.write_text('{"seeds": [0, 1], "output_root": "results"}\n')
    mine = io.config_digest({"output_root": "results", "seeds": [0, 1]})
    other = io.config_digest({"output_root": "results", "seeds": [0, 1, 2]})
    args = ["aggregate", "--runs", str(run), "--out", str(tmp_path / "tables"), "--pipeline-config", str(recorded)]
    line = one_line_error(mr2(*args, "--config-digest", other), f"{recorded} records another pipeline config "
                          f"(digest {mine[:12]}) than this run's ({other[:12]})")
    assert "own output_root" in line and not (tmp_path / "tables").exists()
    one_line_error(mr2(*args), "--pipeline-config and --config-digest go together")
    assert mr2(*args, "--config-digest", mine).returncode == 0 and (tmp_path / "tables" / "runs.csv").is_file()


@pytest.mark.parametrize("text, needle", [("data: [a, b\n", "is not valid YAML"), ("- 1\n", "is damaged"),
                                          ("data: {name: d}\nseed: 0\n", "is damaged: not a run's config as 'mr2 "
                                                                         "train' writes it (it has no key 'method')"),
                                          ("", "is damaged")])
def test_a_damaged_run_config_in_aggregate_is_one_line_naming_it(tmp_path, text, needle):
    from results_data import write_run

    runs = [write_run(tmp_path / "runs", "d", "erm", "default", seed) for seed in (0, 1)]
    (runs[1] / "config.yaml").write_text(text)
    res = mr2("aggregate", "--runs", *map(str, runs), "--out", str(tmp_path / "tables"))
    one_line_error(res, str(runs[1] / "config.yaml"), needle)
    assert not (tmp_path / "tables").exists()


# ------------------------------------------------------------------ 3. the red team's list
def test_script_in_the_theory_section_or_the_pasted_results_table_is_inert(tmp_path):
    """A dataset named ``fm<img src=x onerror=alert(1)>`` reached the report through the theory step's
    section (written raw by theory/pipeline.py), and a results.md holding a tag or a javascript: link
    was pasted as it was: every name is escaped where it is written, pasted Markdown keeps no tag, and
    the page renders no raw HTML and no link that runs code."""
    import matplotlib

    matplotlib.use("Agg")
    import test_hostile as hostile
    from mr2.results import tables as results
    from mr2.results.groups import difficulty_table
    from mr2.results.report import write_report
    from theory.answers import bound_markdown
    from theory.pipeline import bound_table

    import torch
    from test_theory_pipeline import fake_runs

    runs, per_class = fake_runs(torch.Generator().manual_seed(0), [("mr2", "default", 1.5, None)])
    section = bound_markdown(bound_table(runs.assign(dataset=hostile.SCRIPT), per_class.assign(dataset=hostile.SCRIPT)))
    t = results.aggregate(hostile.hostile_runs(tmp_path))
    t["groups"] = difficulty_table(t["per_class"], reference="erm")
    assert "<img" not in section and "fm&lt;img src=x onerror=alert(1)&gt;" in section
    pasted = ("| a | b |\n|---|---|\n| <script>alert(5)</script> | [see](javascript:alert(6)) |\n\n"
              "<img src=x onerror=alert(7)> [also](JaVa\tScRiPt:alert(8)) [paper](https://openreview.net)\n")
    md_path, page = tmp_path / "report.md", tmp_path / "report_page.html"
    body = write_report(t, pasted, {}, md_path, REPO / "workflow" / "report", {"seeds": [0]}, html_out=page,
                        sections=[section + "\n<script>alert(9)</script>\n"])
    html = page.read_text(encoding="utf-8")
    for live in ("<script", "<img src=x", "javascript:", "JaVa"):
        assert live not in html, live
    assert "<script" not in body and "<img" not in body  # the Markdown report, too
    assert "&lt;script&gt;alert(5)&lt;/script&gt;" in html and "&lt;script&gt;alert(9)" in html  # shown as text
    assert 'href="https://openreview.net"' in html and "Theory: Proposition 1" in html
    assert "fm&lt;img src=x onerror=alert(1)&gt;" in html


@pytest.mark.parametrize("share", ["hard link", "copy"])
def test_an_image_shared_by_training_and_evaluation_is_refused_naming_both(tmp_path, share):
    """Issue 41: a hard link (the same inode under two names) or a byte-identical copy of a training
    image in the evaluation folder was accepted: a test image trained on."""
    import shutil

    from test_hostile import image_folder

    root = image_folder(tmp_path / "set")
    source, leak = root / "train" / "beta" / "2.png", root / "val" / "alpha" / "leak.png"
    os.link(source, leak) if share == "hard link" else shutil.copyfile(source, leak)
    res = mr2("prepare", "--set", "data.name=image_folder", "--set", f"data.root={root}", "--set", "data.image_size=4",
              "--out", str(tmp_path / "d.pt"))
    needle = "are the same image file" if share == "hard link" else "hold the same bytes (a copy)"
    one_line_error(res, f"{source} and {leak} {needle}", "the training and the evaluation split")
    assert not (tmp_path / "d.pt").exists()
    leak.unlink()
    assert mr2("prepare", "--set", "data.name=image_folder", "--set", f"data.root={root}", "--set",
               "data.image_size=4", "--out", str(tmp_path / "d.pt")).returncode == 0


@pytest.mark.parametrize("sets, needles", [
    (["data.name=digits", "data.imbalance.ratio=1e9"],
     ["dataset config key 'imbalance.ratio' 1e+09 leaves class(es) ['3', '4', '5', '6', '7', '8', '9'] without "
      "training samples", "lower data.imbalance.ratio"]),
    (["data.name=mnist1d", "data.options.num_samples=100", "data.options.train_split=0.05"],
     ["data.options.num_samples 100 and data.options.train_split 0.05 leave class(es)", "without training samples"]),
    (["data.name=mnist1d", "data.options.num_samples=10"],
     ["data.options.num_samples 10 and data.options.train_split 0.8 leave class(es)"]),
    (["data.name=mnist1d", "data.options.num_samples=99999999999999999999"],
     ["option 'num_samples' (data.options.num_samples) must be in [10, 1000000]"]),
], ids=["imbalance", "mnist1d-split", "mnist1d-samples", "mnist1d-overflow"])
def test_a_class_left_without_training_samples_is_refused_at_prepare_naming_class_and_key(tmp_path, sets, needles):
    """Issue 41: imbalance.ratio 1e9 left seven classes of digits without a training sample, and the
    results still gave verdicts; MNIST-1D's options could empty classes of its training split."""
    res = mr2("prepare", *[w for s in sets for w in ("--set", s)], "--out", str(tmp_path / "d.pt"))
    one_line_error(res, *needles)
    assert not (tmp_path / "d.pt").exists()
    ok = [s for s in sets if "ratio" not in s and "options" not in s] + (["data.imbalance.ratio=100"] if
                                                                        "imbalance" in str(sets) else [])
    assert mr2("prepare", *[w for s in ok for w in ("--set", s)], "--out", str(tmp_path / "d.pt")).returncode == 0


def test_a_stray_png_in_the_figures_folder_is_named_by_the_report_step(tmp_path):
    """It was 'caption .../notes.rst not found; give --captions the workflow's report folder': the wrong
    hint (the captions folder is right, the PNG is not the pipeline's)."""
    from results_data import write_run

    runs = [str(write_run(tmp_path / "runs", "toy", m, "default", s)) for m in ("erm", "mr2") for s in (0, 1, 2)]
    tables, figures = tmp_path / "tables", tmp_path / "figures"
    assert mr2("aggregate", "--runs", *runs, "--out", str(tables)).returncode == 0
    assert mr2("table", "--tables", str(tables)).returncode == 0
    figures.mkdir()
    (figures / "notes.png").write_bytes(b"\x89PNG\r\n\x1a\n")
    report = ["report", "--tables", str(tables), "--figures", str(figures), "--config", str(REPO / "config" / "smoke.yaml"),
              "--out", str(tmp_path / "report.md")]
    line = one_line_error(mr2(*report, "--captions", str(REPO / "workflow" / "report")),
                          f"{figures / 'notes.png'} is no figure of the pipeline", f"remove it from {figures}")
    assert "give --captions" not in line and not (tmp_path / "report.md").exists()
    # a wrong captions folder is still named as such
    one_line_error(mr2(*report, "--captions", str(tmp_path)), "give --captions the workflow's report folder")
    (figures / "notes.png").unlink()
    assert mr2(*report, "--captions", str(REPO / "workflow" / "report")).returncode == 0


def test_every_step_names_an_out_that_is_a_file_or_a_folder_in_one_line(tmp_path):
    from results_data import write_run

    a_file, a_folder = tmp_path / "notes.txt", tmp_path / "folder"
    a_file.write_text("keep me\n")
    a_folder.mkdir()
    run = str(write_run(tmp_path / "runs", "toy", "erm", "default", 0))
    cases = [(["aggregate", "--runs", run, "--out", str(a_file)], f"cannot write {a_file / 'per_class.csv'}: {a_file} "
                                                                   "is a file, not a folder"),
             (["prepare", "--set", "data.name=digits", "--out", str(a_folder)], f"cannot write {a_folder}: it is a "
                                                                                 "folder; give a file name"),
             (["configure", "--run", "method: {name: erm}", "--out", str(a_file / "x" / "run.yaml")],
              f"{a_file} is a file, not a folder")]
    for args, needle in cases:
        one_line_error(mr2(*args), needle)
    assert a_file.read_text() == "keep me\n" and list(a_folder.iterdir()) == []
