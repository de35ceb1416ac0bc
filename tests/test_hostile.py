"""Issue 27: hostile and careless inputs, round two.

No script from a config or a CSV in the report; no silent leak between the splits of an image folder;
names anchored to the whole string; spreadsheet formulas and math-text markup in class names made
harmless; byte-identical artefacts across reruns and resumes; one-line errors for a damaged
checkpoint, bad seeds, a full disk, a bad report config and an empty validation split.
"""

import errno
import hashlib
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import torch

from mr2.common import io
from mr2.engine import config as run_config
from mr2.engine.checkpoint import load_torch, save_torch
from mr2.engine.evaluate import evaluate
from mr2.engine.train import CHECKPOINT, TIMINGS, train

import test_safety as safety

REPO = Path(__file__).resolve().parents[1]
QUICK = {"epochs": 2, "batch_size": 64, "warmup_epochs": 0, "flip": False, "crop_padding": 1}


def run_cfg(**update):
    """test_safety's quick digits run, with MR² as its method unless ``update`` names another."""
    return safety.run_cfg(**{"method": {"name": "mr2"}, **update})


mr2, one_line_error, Stop, stop_after_epoch = safety.mr2, safety.assert_one_line_error, safety.Stop, safety.stop_after_epoch


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# ------------------------------------------------------------------ byte-identical artefacts
RECORD = ["model.pt", "config.yaml", "epochs.csv", "eval/per_class.csv", "eval/confusion.csv", "eval/metrics.json"]


def test_reruns_and_a_resumed_run_give_byte_identical_artefacts(digits, tmp_path):
    cfg = run_cfg()
    for name in ("a", "b"):
        train(cfg, digits, tmp_path / name, log=lambda *_: None)
    with pytest.raises(Stop):
        train(cfg, digits, tmp_path / "resumed", log=stop_after_epoch(1))
    assert (tmp_path / "resumed" / CHECKPOINT).is_file() and not (tmp_path / "resumed" / "model.pt").exists()
    # the checkpoint of an interrupted run is the same bytes as that of another run stopped there
    with pytest.raises(Stop):
        train(cfg, digits, tmp_path / "resumed2", log=stop_after_epoch(1))
    assert sha256(tmp_path / "resumed" / CHECKPOINT) == sha256(tmp_path / "resumed2" / CHECKPOINT)
    train(cfg, digits, tmp_path / "resumed", log=lambda *_: None)
    for name in ("a", "b", "resumed"):
        evaluate(tmp_path / name, digits, tmp_path / name / "eval", device="cpu")
    sums = {name: {f: sha256(tmp_path / name / f) for f in RECORD} for name in ("a", "b", "resumed")}
    assert sums["a"] == sums["b"] == sums["resumed"]
    # the wall-clock seconds are kept, beside the outputs of record: one row per epoch, the resumed
    # run's first epoch from before the interruption
    for name in ("a", "resumed"):
        timings = pd.read_csv(tmp_path / name / TIMINGS)
        assert list(timings["epoch"]) == [1, 2] and (timings["seconds"] > 0).all()
    assert "seconds" not in set(pd.read_csv(tmp_path / "a" / "epochs.csv")["name"])


def test_torch_files_do_not_depend_on_the_temporary_file_name(tmp_path):
    obj = {"w": torch.arange(6.0).reshape(2, 3), "epoch": 3}
    save_torch(obj, tmp_path / "one.pt")
    save_torch(obj, tmp_path / "two.pt")
    assert sha256(tmp_path / "one.pt") == sha256(tmp_path / "two.pt")
    assert torch.equal(load_torch(tmp_path / "two.pt")["w"], obj["w"])


# ------------------------------------------------------------------ one line, never a traceback
@pytest.fixture
def interrupted(digits, tmp_path):
    cfg, out = run_cfg(), tmp_path / "run"
    with pytest.raises(Stop):
        train(cfg, digits, out, log=stop_after_epoch(1))
    return cfg, out, load_torch(out / CHECKPOINT)


def damage_shape(ckpt):
    state = {part: dict(tensors) for part, tensors in ckpt["state"].items()}
    name = next(iter(state["model"]))
    state["model"][name] = torch.zeros(3)
    return {**ckpt, "state": state}


def damage_values(ckpt):
    state = {part: {k: v.clone() for k, v in tensors.items()} for part, tensors in ckpt["state"].items()}
    name = next(k for k, v in state["model"].items() if v.is_floating_point())
    state["model"][name].fill_(float("nan"))
    return {**ckpt, "state": state}


@pytest.mark.parametrize("damage", [damage_shape, damage_values,
                                    lambda c: {**c, "state": {"model": {}}},
                                    lambda c: {**c, "optimizer": {"state": {}, "param_groups": []}},
                                    lambda c: {**c, "epoch": "1"},
                                    lambda c: {**c, "best": {"val_acc": 0.5, "epoch": 1, "state": {"model": {}}}}],
                         ids=["misshapen", "nan", "missing", "optimizer", "epoch", "best"])
def test_a_damaged_checkpoint_of_the_same_config_is_one_line_naming_it(interrupted, digits, damage):
    cfg, out, ckpt = interrupted
    save_torch(damage(ckpt), out / CHECKPOINT)
    cfg_file = out.parent / "cfg.yaml"
    io.save_yaml(cfg, cfg_file)
    res = mr2("train", "--config", str(cfg_file), "--data", str(digits), "--out", str(out))
    line = one_line_error(res, str(out / CHECKPOINT), "damaged", code=2)
    assert "diverged" not in line
    assert not (out / "model.pt").exists()


def test_a_full_disk_is_one_line_naming_the_file(monkeypatch, tmp_path):
    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(io.DiskFullError, match=rf"the disk is full: could not write {tmp_path / 'a.csv'}"):
        io.save_csv(pd.DataFrame({"x": [1]}), tmp_path / "a.csv")
    assert list(tmp_path.iterdir()) == []  # nor a temporary left behind
    monkeypatch.undo()
    monkeypatch.setattr(torch, "save", full)  # the disk fills while a model is written
    with pytest.raises(io.DiskFullError, match=rf"the disk is full: could not write {tmp_path / 'model.pt'}"):
        save_torch({"w": torch.ones(3)}, tmp_path / "model.pt")
    assert list(tmp_path.iterdir()) == []
    monkeypatch.undo()
    other = OSError(errno.EACCES, "Permission denied")
    monkeypatch.setattr(os, "fsync", lambda *a: (_ for _ in ()).throw(other))
    with pytest.raises(OSError) as err:
        io.save_text("x", tmp_path / "b.txt")
    assert err.value is other  # other errors pass through unchanged


def test_cli_reports_a_full_disk_in_one_line(tmp_path):
    """The CLI turns a DiskFullError into one line and exit code 2 (ENOSPC raised in the writer)."""
    code = ("import errno, os, sys; from mr2 import cli; "
            "os.fsync = lambda fd: (_ for _ in ()).throw(OSError(errno.ENOSPC, 'No space left on device')); "
            f"sys.exit(cli.main(['configure', '--run', 'method: {{name: erm}}', '--out', {str(tmp_path / 'r.yaml')!r}]))")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": str(REPO)}, cwd=REPO)
    one_line_error(res, "disk is full", str(tmp_path / "r.yaml"))


def test_report_with_a_config_that_is_not_yaml_is_one_line(tmp_path):
    bad = tmp_path / "pipeline.yaml"
    bad.write_text("datasets: [a, b\nmethods: {")
    res = mr2("report", "--tables", str(tmp_path / "tables"), "--figures", str(tmp_path), "--captions", str(tmp_path),
              "--config", str(bad), "--out", str(tmp_path / "report.md"))
    one_line_error(res, str(bad), "not valid YAML")


def test_best_val_refusal_names_train_cap_when_the_cap_empties_validation(tmp_path):
    from mr2.engine.data import prepare_dataset
    from mr2.engine.train import Runner

    data = {"name": "digits", "train_cap": 1, "val_fraction": 0.2}
    prepare_dataset(data, tmp_path / "d.pt")
    cfg = run_config.resolve(sets=[f"data.{k}={v}" for k, v in data.items()] + ["train.select=best_val", "device=cpu"])
    with pytest.raises(run_config.ConfigError) as err:
        Runner(cfg, tmp_path / "d.pt", tmp_path / "run", log=lambda *_: None)
    assert "data.train_cap 1" in str(err.value) and "val_fraction 0)" not in str(err.value)
    assert "data.val_fraction 0.2 of at most 1 training samples per class" in str(err.value)


@pytest.mark.parametrize("value", [2**64, 2**70])
def test_a_run_seed_beyond_64_bits_is_refused_naming_the_key(value):
    with pytest.raises(run_config.ConfigError, match=rf"config key 'seed' must be below 2\*\*64, got {value}"):
        run_config.resolve(sets=[f"seed={value}"])
    run_config.resolve(sets=[f"seed={2**64 - 1}"])  # the largest seed torch takes
    torch.Generator().manual_seed(2**64 - 1)


# ------------------------------------------------------------------ hostile strings through the results chain
SCRIPT = "fm<img src=x onerror=alert(1)>"
FORMULA = '=HYPERLINK("http://evil.example","x")'
MATH = ["$\\frac{", "$\\frac{$", "a$b", "$x$", "@SUM(A1)", "-2+3", "+1", "\tTAB"]


def hostile_runs(root):
    """Fake run folders (tests/results_data.py's formats) whose dataset is ``SCRIPT`` and whose class
    names are a spreadsheet formula and math-text markup."""
    from results_data import write_run

    names = [FORMULA, *MATH]
    runs = []
    for method in ("erm", "mr2"):
        for seed in (0, 1, 2):
            run = write_run(root, SCRIPT, method, "default", seed, k=len(names), dataset_key="fmx")
            per_class = pd.read_csv(run / "eval" / "per_class.csv")
            per_class["class_name"] = names
            per_class.to_csv(run / "eval" / "per_class.csv", index=False)  # as a stranger's file, unneutralised
            cfg = run / "config.yaml"
            cfg.write_text(cfg.read_text().replace("dataset_key: fmx", f"dataset_key: '{SCRIPT}'"))
            runs.append(str(run))
    return runs


def test_spreadsheet_formulas_are_neutralised_in_every_csv_and_numbers_kept(tmp_path):
    names = [FORMULA, *MATH, "plain", "-0.5", "1e-3"]
    expected = ["'" + FORMULA, "$\\frac{", "$\\frac{$", "a$b", "$x$", "'@SUM(A1)", "'-2+3", "+1", "'\tTAB",
                "plain", "-0.5", "1e-3"]
    frame = pd.DataFrame({"class_name": names, "value": range(len(names))})
    io.save_csv(frame, tmp_path / "t.csv")
    back = pd.read_csv(tmp_path / "t.csv", dtype={"class_name": str}, keep_default_na=False)
    assert list(back["class_name"]) == expected
    assert list(back["value"]) == list(range(len(names)))
    assert list(frame["class_name"]) == names  # the caller's frame is left as it was
    assert io.spreadsheet_safe("\rCR") == "'\rCR" and io.spreadsheet_safe(3) == 3


def test_hostile_names_are_inert_in_tables_figures_report_and_page(tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    from mr2.results import tables as results
    from mr2.results.figures.render import make_figures
    from mr2.results.groups import difficulty_table
    from mr2.results.report import write_report

    runs = hostile_runs(tmp_path)
    t = results.aggregate(runs)
    assert set(t["runs"]["dataset"]) == {SCRIPT}
    t["groups"] = difficulty_table(t["per_class"], reference="erm")
    out = tmp_path / "tables"
    results.write_tables(t, out)
    # every CSV the results layer writes: no cell a spreadsheet would run
    for csv in out.glob("*.csv"):
        cells = pd.read_csv(csv, dtype=str, keep_default_na=False).to_numpy().ravel()
        assert not [c for c in cells if c[:1] in ("=", "@", "\t", "\r") or c.startswith("-2+")], csv
    per_class = pd.read_csv(out / "per_class.csv")
    assert "'" + FORMULA in set(per_class["class_name"])
    table = results.results_table(t["per_class"], t["runs"], t["groups"], reference="erm")
    results.write_results_table(table, out / "results.csv", out / "results.md", reference="erm")
    # figures with math-text markup in class and dataset names are written
    figures = make_figures(results.read_tables(out, ("per_class", "runs", "epochs", "groups")), tmp_path / "figures")
    assert all(p.is_file() for paths in figures.values() for p in paths)
    from mr2.results.premise_figures import write_analysis

    write_analysis(results.read_tables(out, ("per_class", "runs", "epochs", "groups")), tmp_path / "analysis")
    config = {"datasets": {SCRIPT: {"data": {"name": "</code></pre><script>alert(2)</script>"}}},
              "note": "x\n```\n<script>alert(3)</script>\n````\n<b>bold</b>"}
    md_path, page = tmp_path / "report.md", tmp_path / "report_page.html"
    figs = {p.stem: str(p.relative_to(tmp_path)) for p in sorted((tmp_path / "figures").glob("*.png"))}
    body = write_report(results.read_tables(out, ("per_class", "runs", "groups")),
                        (out / "results.md").read_text(encoding="utf-8"), figs, md_path, REPO / "workflow" / "report",
                        config, analysis=tmp_path / "analysis", html_out=page)
    html = page.read_text(encoding="utf-8")
    for live in ("<script", "<img src=x", "onerror=alert(1)>", "<b>"):
        assert live not in html and live not in body.split("## Configuration")[0], live
    assert "fm&lt;img src=x onerror=alert(1)&gt;" in html  # shown, as text
    assert "&lt;script&gt;alert(3)&lt;/script&gt;" in html  # the config stays in its code block
    assert "Does the premise hold?" in body and (tmp_path / "analysis" / "premise_margins.png").is_file()


# ------------------------------------------------------------------ image folders: no silent leak
def image_folder(root, classes=("alpha", "beta"), per_split=(("train", 3), ("val", 2))):
    """root/<split>/<class>/<i>.png, tiny solid images."""
    from PIL import Image

    for split, n in per_split:
        for c, name in enumerate(classes):
            (root / split / name).mkdir(parents=True, exist_ok=True)
            for i in range(n):
                blue = 90 if split == "train" else 91  # no evaluation image a copy of a training image
                Image.new("RGB", (6, 5), (40 * c, 10 * i, blue)).save(root / split / name / f"{i}.png")
    return root


def prepare_folder(root, out):
    from mr2.engine.data import prepare_dataset

    return prepare_dataset({"name": "image_folder", "root": str(root), "image_size": 4, "val_fraction": 0.0}, out)


@pytest.mark.parametrize("link, target, needle", [
    ("train/all", ".", "class folder {root}/train/all resolves to"),
    ("val/alpha2", "../train/alpha", "class folder {root}/val/alpha2 resolves to"),
    ("train/loop", "loop", "{root}/train/loop is a symlink loop"),
    ("train/alpha/again.png", "../beta/0.png", "{root}/train/alpha/again.png and {root}/train/beta/0.png are the same image"),
    ("val/alpha/leak.png", "../../train/alpha/1.png", "{root}/train/alpha/1.png and {root}/val/alpha/leak.png are the same image file"),
    ("train/beta/sub", "..", None),  # a symlinked sub-folder is not followed: nothing counted twice
], ids=["class-is-split", "val-class-in-train", "loop", "image-twice", "image-in-two-splits", "subfolder-link"])
def test_image_folder_links_that_would_leak_are_refused_naming_the_path(tmp_path, link, target, needle):
    root = image_folder(tmp_path / "set")
    os.symlink(target, root / link)
    if link == "val/alpha2":
        (root / "train" / "alpha2").mkdir()  # the class exists in training: only the link is wrong
        (root / "train" / "alpha2" / "x.png").write_bytes((root / "train" / "beta" / "2.png").read_bytes())
    if needle is None:
        prepare_folder(root, tmp_path / "d.pt")
        data = load_torch(tmp_path / "d.pt")
        assert len(data["splits"]["train"]["paths"]) == 6
        return
    res = mr2("prepare", "--set", "data.name=image_folder", "--set", f"data.root={root}", "--set", "data.image_size=4",
              "--set", "data.val_fraction=0.0", "--out", str(tmp_path / "d.pt"))
    one_line_error(res, needle.format(root=root))
    assert not (tmp_path / "d.pt").exists()


def test_a_file_that_is_no_image_is_found_by_prepare_naming_it(tmp_path):
    root = image_folder(tmp_path / "set")
    bad = root / "val" / "beta" / "notes.png"
    bad.write_text("not an image\n" * 50)
    res = mr2("prepare", "--set", "data.name=image_folder", "--set", f"data.root={root}", "--set", "data.image_size=4",
              "--out", str(tmp_path / "d.pt"))
    one_line_error(res, str(bad), "not a readable image")
    assert not (tmp_path / "d.pt").exists()
    bad.unlink()
    prepare_folder(root, tmp_path / "d.pt")  # the same set without it prepares
