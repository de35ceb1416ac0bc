"""Issue 16, the engine's side: files and configs from others are safe to use.

No code runs from a received file; a prepared file is checked against the run's config and its
checksum; a diverged run stops with one line; outputs respect the umask and stray temporaries
are cleaned; a resume is exact or refused; typos in a run config or method options are errors.
"""

import os
import pickle
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from mr2.common.io import save_text
from mr2.engine import config as run_config
from mr2.engine.checkpoint import UnsafeFileError, load_torch, save_torch
from mr2.engine.config import ConfigError
from mr2.engine.data import prepare_dataset
from mr2.engine.data.readers import read_cifar100_batch, read_cifar100_names
from mr2.engine.inference import select_device
from mr2.engine.train import CHECKPOINT, NonFiniteLossError, train
from mr2.method.losses.factory import METHODS, resolve_options

REPO = Path(__file__).resolve().parents[1]
QUICK = {"epochs": 2, "batch_size": 64, "warmup_epochs": 0, "flip": False, "crop_padding": 1}


class Touch:
    """Unpickling this runs ``touch <marker>``: what a crafted file would do."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return os.system, (f"touch {self.marker}",)


def run_cfg(**update):
    base = {"data": {"name": "digits"}, "model": {"name": "mlp"}, "method": {"name": "erm"}, "threads": 1,
            "train": QUICK}
    return run_config.deep_merge(run_config.deep_merge(run_config.DEFAULTS, base), update)


def mr2(*args: str) -> subprocess.CompletedProcess:
    """``python -m mr2 <args>`` with this repository first on the path."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-m", "mr2", *args], capture_output=True, text=True, env=env, cwd=REPO)


def assert_one_line_error(res: subprocess.CompletedProcess, *needles: str, code: int = 2) -> str:
    lines = res.stderr.strip().splitlines()
    assert res.returncode == code, (res.returncode, res.stderr[-2000:])
    assert "Traceback" not in res.stderr and len(lines) == 1 and lines[0].startswith("error: "), res.stderr[-2000:]
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    return lines[0]


class Stop(Exception):
    pass


def stop_after_epoch(n: int):
    """A ``log`` for ``train`` that interrupts it once epoch ``n`` is logged (its checkpoint is written)."""
    def log(message: str) -> None:
        if f" epoch {n}/" in message:
            raise Stop

    return log


@pytest.fixture(scope="module")
def other_digits(tmp_path_factory):
    """The digits prepared with other data settings (another split seed)."""
    path = tmp_path_factory.mktemp("data") / "digits_split1.pt"
    prepare_dataset({"name": "digits", "split_seed": 1}, path)
    return path


@pytest.fixture(scope="module")
def finished_run(digits, tmp_path_factory):
    out = tmp_path_factory.mktemp("run")
    train(run_cfg(train={"epochs": 1}), digits, out, log=lambda *_: None)
    return out


# ------------------------------------------------------------------ 1. no code runs from a received file
@pytest.mark.parametrize("victim", ["model.pt", "checkpoint.pt", "data", "weights"])
def test_a_crafted_pickle_is_refused_in_one_line_and_never_runs(victim, digits, finished_run, tmp_path):
    marker = tmp_path / "ran"
    evil = tmp_path / "evil.pt"
    torch.save({"config": Touch(marker), "state": {}}, evil)
    run_dir, data, out = tmp_path / "run", digits, tmp_path / "out"
    base = ["--set", "data.name=digits", "--set", "model.name=mlp", "--set", "train.epochs=1", "--threads", "1"]
    if victim == "model.pt":
        run_dir.mkdir()
        (run_dir / "model.pt").write_bytes(evil.read_bytes())
        named = str(run_dir / "model.pt")
        results = [mr2("evaluate", "--run", str(run_dir), "--data", str(data), "--out", str(out)),
                   mr2("errors", "--run", str(run_dir), "--data", str(data), "--out", str(out / "e.csv"))]
    elif victim == "checkpoint.pt":
        run_dir.mkdir()
        (run_dir / CHECKPOINT).write_bytes(evil.read_bytes())
        named = str(run_dir / CHECKPOINT)
        results = [mr2("train", *base, "--data", str(data), "--out", str(run_dir))]
    elif victim == "data":
        named = str(evil)
        results = [mr2("train", *base, "--data", str(evil), "--out", str(run_dir)),
                   mr2("evaluate", "--run", str(finished_run), "--data", str(evil), "--out", str(out))]
    else:
        named = str(evil)
        results = [mr2("train", *base, "--set", f"model.weights={evil}", "--data", str(data), "--out", str(run_dir))]
    for res in results:
        assert_one_line_error(res, named, "refused to load")
    assert not marker.exists()
    assert not out.exists() and (victim == "model.pt" or not (run_dir / "model.pt").exists())


def cifar_pickle(obj, path: Path) -> Path:
    """``obj`` pickled as the CIFAR python version is: GLOBAL opcodes naming numpy 1's
    ``numpy.core.multiarray._reconstruct`` for arrays (protocol 3 writes GLOBAL; numpy 2 names its
    ``numpy._core``, renamed here to the released files' module)."""
    raw = pickle.dumps(obj, protocol=3)
    path.write_bytes(raw.replace(b"numpy._core.multiarray\n_reconstruct", b"numpy.core.multiarray\n_reconstruct"))
    return path


def test_cifar_pickles_are_read_with_numpy_arrays_only(tmp_path):
    data = np.arange(3 * 3072, dtype=np.uint64).astype(np.uint8).reshape(3, 3072)
    batch = cifar_pickle({b"batch_label": b"training batch", b"data": data, b"fine_labels": [5, 0, 99],
                          b"coarse_labels": [1, 2, 3]}, tmp_path / "train")
    assert b"numpy.core.multiarray\n_reconstruct" in batch.read_bytes()
    x, y = read_cifar100_batch(batch)
    assert x.shape == (3, 3, 32, 32) and torch.equal(x.reshape(3, -1), torch.from_numpy(data))
    assert y.tolist() == [5, 0, 99]
    meta = cifar_pickle({b"fine_label_names": [b"apple", b"aquarium_fish"]}, tmp_path / "meta")
    assert read_cifar100_names(meta) == ["apple", "aquarium_fish"]

    marker = tmp_path / "ran"
    crafted = cifar_pickle({b"data": Touch(marker), b"fine_labels": [0]}, tmp_path / "test")
    with pytest.raises(UnsafeFileError, match=r"CIFAR file .*test: refused to load: the pickle names posix\.system"):
        read_cifar100_batch(crafted)
    assert not marker.exists()


# ------------------------------------------------------------------ 2. provenance
def test_training_on_a_file_prepared_with_other_data_settings_is_an_error(other_digits, tmp_path):
    with pytest.raises(ValueError, match=r"digits_split1\.pt was made with other data settings .*"
                                         r"data\.split_seed: 0 in the run's config, 1 in the file"):
        train(run_cfg(), other_digits, tmp_path / "run", log=lambda *_: None)
    res = mr2("train", "--set", "data.name=digits", "--set", "data.train_cap=20", "--data", str(other_digits),
              "--out", str(tmp_path / "run"))
    assert_one_line_error(res, str(other_digits), "data.train_cap: 20", "data.split_seed: 0")
    assert not (tmp_path / "run" / CHECKPOINT).exists()


def test_evaluate_and_errors_refuse_a_file_the_run_was_not_trained_on(finished_run, digits, other_digits, tmp_path):
    checksums = [load_torch(path)["checksum"][:12] for path in (digits, other_digits)]
    assert load_torch(finished_run / "model.pt")["data_checksum"][:12] == checksums[0]
    for step, out in (("evaluate", tmp_path / "eval"), ("errors", tmp_path / "errors.csv")):
        res = mr2(step, "--run", str(finished_run), "--data", str(other_digits), "--out", str(out), "--device", "cpu")
        assert_one_line_error(res, str(other_digits), str(finished_run / "model.pt"), *checksums, "data.split_seed")
        assert not out.exists()


def test_resume_checks_the_prepared_file_checksum(digits, tmp_path):
    cfg, out = run_cfg(), tmp_path / "run"
    with pytest.raises(Stop):
        train(cfg, digits, out, log=stop_after_epoch(1))
    ckpt = load_torch(out / CHECKPOINT)
    assert ckpt["data_checksum"] == load_torch(digits)["checksum"]
    save_torch({**ckpt, "data_checksum": "f" * 64}, out / CHECKPOINT)  # a checkpoint of another preparation
    stored = ckpt["data_checksum"][:12]
    with pytest.raises(ValueError, match=rf"{digits.name} \(checksum {stored}\) is not the prepared data file "
                                         rf"{out / CHECKPOINT} was trained on \(checksum ffffffffffff"):
        train(cfg, digits, out, log=lambda *_: None)
    save_torch({k: v for k, v in ckpt.items() if k != "data_checksum"}, out / CHECKPOINT)  # an older version's
    with pytest.raises(ValueError, match=r"is not a checkpoint of this version of mr2 \(missing data_checksum\); "
                                         "delete it to start afresh"):
        train(cfg, digits, out, log=lambda *_: None)
    assert not (out / "model.pt").exists()


# ------------------------------------------------------------------ 3. a diverged run never looks finished
def test_divergence_in_the_first_epoch_stops_in_one_line_naming_no_checkpoint(digits, tmp_path):
    """lr = 300 leaves inf in BatchNorm's running_var while the loss stays finite."""
    out = tmp_path / "run"
    res = mr2("train", "--set", "data.name=digits", "--set", "model.name=small_cnn", "--set", "model.options.width=8",
              "--set", "method.name=erm", "--set", "train.lr=300", "--set", "train.warmup_epochs=0",
              "--set", "train.epochs=2", "--set", "train.batch_size=64", "--threads", "1",
              "--data", str(digits), "--out", str(out))
    line = assert_one_line_error(res, "diverged in epoch 1", "running_var", "no checkpoint", code=1)
    assert "checkpoint.pt" not in line
    assert not (out / "model.pt").exists() and not (out / CHECKPOINT).exists()


def test_divergence_in_a_later_epoch_names_the_last_good_checkpoint(digits, tmp_path):
    """A learning rate that warms up over the whole run: good epochs, then inf in running_var."""
    cfg = run_cfg(model={"name": "small_cnn", "options": {"width": 8}},
                  train={"epochs": 6, "lr": 100.0, "warmup_epochs": 6})
    out = tmp_path / "run"
    with pytest.raises(NonFiniteLossError) as stop:
        train(cfg, digits, out, log=lambda *_: None)
    good = load_torch(out / CHECKPOINT)["epoch"]
    assert good >= 1
    assert f"diverged in epoch {good + 1}:" in str(stop.value)
    assert f"last good checkpoint, {out / CHECKPOINT} (epoch {good})" in str(stop.value)
    assert not (out / "model.pt").exists()
    state = load_torch(out / CHECKPOINT)["state"]
    assert all(torch.isfinite(t).all() for part in state.values() for t in part.values() if t.is_floating_point())


# ------------------------------------------------------------------ 4. outputs respect the umask
@pytest.mark.parametrize("umask, mode", [(0o022, 0o644), (0o027, 0o640), (0o002, 0o664)])
def test_outputs_get_the_mode_a_plain_open_gives(umask, mode, tmp_path):
    old = os.umask(umask)
    try:
        save_text("x", tmp_path / "a.txt")
        save_torch({"x": torch.ones(1)}, tmp_path / "b.pt")
    finally:
        os.umask(old)
    assert [(tmp_path / n).stat().st_mode & 0o777 for n in ("a.txt", "b.pt")] == [mode, mode]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.txt", "b.pt"]  # no temporary left


def dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_stray_temporaries_of_a_killed_write_are_cleaned_by_the_next_run(digits, tmp_path):
    run, data = tmp_path / "run", tmp_path / "data" / "digits.pt"
    run.mkdir()
    data.parent.mkdir()
    gone = [run / f".model.pt.{dead_pid()}.k1ll3d_a.tmp", run / f".{CHECKPOINT}.{dead_pid()}.k1ll3d_b.tmp",
            data.parent / f".digits.pt.{dead_pid()}.k1ll3d_c.tmp"]
    kept = [run / f".model.pt.{os.getppid()}.writing.tmp",  # a live writer's
            run / f".notes.txt.{dead_pid()}.other_target.tmp", run / f".model.pt.x.{dead_pid()}.other_target.tmp"]
    for path in gone + kept:
        path.write_text("half")
    prepare_dataset({"name": "digits"}, data)
    train(run_cfg(train={"epochs": 1}), data, run, log=lambda *_: None)
    assert [p for p in gone if p.exists()] == [] and all(p.exists() for p in kept)


# ------------------------------------------------------------------ 5. resume is exact or refused
def test_resume_with_other_threads_device_or_kernels_is_refused_naming_both(digits, tmp_path):
    cfg, out = run_cfg(), tmp_path / "run"
    with pytest.raises(Stop):
        train(cfg, digits, out, log=stop_after_epoch(1))
    try:
        with pytest.raises(ValueError, match=r"written with threads=1, this run has threads=2: .*threads: 1 in the run's config"):
            train({**cfg, "threads": 2}, digits, out, log=lambda *_: None)
    finally:
        torch.set_num_threads(1)
    ckpt = load_torch(out / CHECKPOINT)
    kernels = torch.backends.cpu.get_cpu_capability()
    cuda = {**ckpt["conditions"], "device": "cuda", "threads": None, "cpu_kernels": None}
    save_torch({**ckpt, "conditions": cuda}, out / CHECKPOINT)
    with pytest.raises(ValueError, match=rf"written with device=cuda, threads=None, cpu_kernels=None, this run has "
                                         rf"device=cpu, threads=1, cpu_kernels={kernels}: .*resume with --device cuda"):
        train(cfg, digits, out, log=lambda *_: None)
    other = "AVX512" if kernels != "AVX512" else "AVX2"  # kernels of another instruction set round otherwise
    save_torch({**ckpt, "conditions": {**ckpt["conditions"], "cpu_kernels": other}}, out / CHECKPOINT)
    with pytest.raises(ValueError, match=rf"written with cpu_kernels={other}, this run has cpu_kernels={kernels}: "
                                         rf".*resume with the CPU kernels {other} .*MR2_CPU_ISA"):
        train(cfg, digits, out, log=lambda *_: None)
    save_torch(ckpt, out / CHECKPOINT)  # the genuine checkpoint resumes
    train(cfg, digits, out, log=lambda *_: None)
    assert (out / "model.pt").exists() and not (out / CHECKPOINT).exists()


# ------------------------------------------------------------------ 6. typos are errors
@pytest.mark.parametrize("key", ["train.epochs", "train.batch_size", "train.eval_batch_size", "train.num_workers",
                                 "train.crop_padding", "train.shift", "train.upsample_factor", "seed", "threads"])
def test_integer_keys_reject_fractions_and_booleans(key):
    for value in ("2.5", "true", "'3'"):
        with pytest.raises(ConfigError, match=rf"config key '{key}' must be an integer"):
            run_config.resolve(sets=[f"{key}={value}"])


@pytest.mark.parametrize("device, ok", [("tpu", False), ("cdua", False), ("cuda:x", False), ("1", False),
                                        ("auto", True), ("cpu", True), ("cuda", True), ("cuda:1", True)])
def test_device_must_name_a_device(device, ok):
    if ok:
        assert run_config.resolve(sets=[f"device={device}"])["device"] == device
    else:
        with pytest.raises(ConfigError, match=r"config key 'device' \(--device\) must be auto, cpu, cuda or cuda:N"):
            run_config.resolve(sets=[f"device={device}"])
        with pytest.raises(ConfigError, match="must be auto, cpu, cuda or cuda:N"):
            select_device(device)


def test_malformed_yaml_names_the_key_or_file(tmp_path):
    with pytest.raises(ConfigError, match=r"--set value of config key 'train\.lr' \('\[1'\) is not valid YAML"):
        run_config.resolve(sets=["train.lr=[1"])
    bad = tmp_path / "bad.yaml"
    bad.write_text("train: {lr: [1\n")
    with pytest.raises(ConfigError, match=rf"config file {bad} is not valid YAML"):
        run_config.resolve([bad])
    with pytest.raises(ConfigError, match="'train.lr' was already set to a value"):
        run_config.resolve(sets=["train.lr=1", "train.lr.x=2"])


@pytest.mark.parametrize("key, value, needle", [
    ("train.lr", ".nan", "must be a positive number"), ("train.lr", ".inf", "must be a positive number"),
    ("train.grad_clip", "-1", "must be a positive number or null"), ("train.grad_clip", "abc", "must be a positive number or null"),
    ("train.warmup_epochs", ".inf", "must be a finite number >= 0"), ("train.momentum", ".nan", "must be a finite number >= 0"),
    ("train.weight_decay", "-0.1", "must be a finite number >= 0"), ("model.cosine_scale", "abc", "must be a positive number"),
    ("model.weights", "5", "must be a file path or null"), ("train.upsample_file", "''", "must be a file path or null")])
def test_number_and_path_keys_reject_what_would_break_training(key, value, needle):
    """A negative gradient clip would turn training into gradient ascent; nan/inf would reach the
    optimiser; a number as a file name would fail only when the file is opened."""
    with pytest.raises(ConfigError, match=re.escape(f"config key '{key}' {needle}")):
        run_config.resolve(sets=[f"{key}={value}"])
    for ok in ("train.grad_clip=null", "train.grad_clip=1.0", "model.weights=null", "model.cosine_scale=16"):
        run_config.resolve(sets=[ok])


def test_best_val_without_a_validation_split_is_refused_before_training(tmp_path):
    """select: best_val compares validation accuracies; with none, every epoch ties at 0 and the
    first epoch's weights would silently be the result."""
    from mr2.engine.data import prepare_dataset
    from mr2.engine.train import Runner

    prepare_dataset({"name": "digits", "val_fraction": 0.0}, tmp_path / "d.pt")
    cfg = run_config.resolve(sets=["data.name=digits", "data.val_fraction=0.0", "train.select=best_val", "device=cpu"])
    with pytest.raises(ConfigError, match="'train.select' is best_val, but .* has no validation split"):
        Runner(cfg, tmp_path / "d.pt", tmp_path / "run", log=lambda *_: None)
    Runner({**cfg, "train": {**cfg["train"], "select": "last"}}, tmp_path / "d.pt", tmp_path / "run", log=lambda *_: None)


def test_thread_and_slot_counts_below_one_are_refused_by_the_cli():
    for step in ("train", "evaluate"):
        res = mr2(step, "--threads", "0")
        assert res.returncode == 2 and "argument --threads: expected an integer >= 1, got '0'" in res.stderr
    res = mr2("evaluate", "--gpu-slots", "-1")
    assert res.returncode == 2 and "argument --gpu-slots: expected an integer >= 1" in res.stderr


def test_a_device_naming_one_gpu_is_refused_for_several_processes():
    from mr2.engine.distributed import World, device_for

    with pytest.raises(ConfigError, match="'device' is cuda:1, but this run has 2 processes"):
        device_for(torch.device("cuda", 1), World(rank=0, size=2))
    assert device_for(torch.device("cuda", 1), World()) == torch.device("cuda", 1)


WRONG_KIND = {bool: [1, "true"], int: [2.5, True, "3"], float: [True, "0.3", float("nan"), None], str: [3, True]}


@pytest.mark.parametrize("method", sorted(METHODS))
def test_every_method_rejects_options_of_the_wrong_kind(method):
    defaults = METHODS[method][1]
    for option, default in defaults.items():
        for value in WRONG_KIND.get(type(default), []):
            with pytest.raises(ValueError, match=rf"method '{method}': option '{option}' must be"):
                resolve_options(method, {option: value})
        if type(default) in WRONG_KIND:  # a value of the right kind passes
            assert resolve_options(method, {option: default})[option] == default
    with pytest.raises(ValueError, match=rf"method '{method}': options must be a mapping"):
        resolve_options(method, [1])


def test_cli_prints_typos_as_one_line_with_exit_code_2(digits, tmp_path):
    base = ["train", "--data", str(digits), "--out", str(tmp_path / "run"), "--set", "data.name=digits"]
    cases = [(["--set", "train.epochs=2.5"], "'train.epochs' must be an integer"),
             (["--set", "device=tpu"], "'device' (--device) must be"),
             (["--device", "cdua"], "got 'cdua'"),
             (["--set", "train.lr=[1"], "config key 'train.lr'"),
             (["--set", "method.options.lam=true"], "method 'mr2': option 'lam' must be a finite number, got True")]
    cases += [(["--set", "model.options.width=abc"], "model 'small_cnn': option 'width' must be an integer"),
              (["--set", "model.options.width=0"], "option 'width' must be at least 1")]
    for extra, needle in cases:
        assert_one_line_error(mr2(*base, *extra), needle)
    assert not (tmp_path / "run").exists()
    res = mr2("evaluate", "--run", str(tmp_path), "--data", str(digits), "--out", str(tmp_path / "e"),
              "--device", "tpu")
    assert_one_line_error(res, "got 'tpu'")


def test_a_tuning_trial_that_diverges_is_a_failed_run_scored_zero_on_validation_and_never_tested(digits, tmp_path):
    """`--on-divergence record` (the workflow's tuning trials): the run ends with exit 0 and its three
    outputs, its config saying where it diverged; its validation scores are 0 in every class; its test
    set is refused in one line. A run of the same options without it still stops with exit code 1."""
    import json

    import pandas as pd
    import yaml

    out = tmp_path / "trial"
    sets = ["--set", "data.name=digits", "--set", "model.name=small_cnn", "--set", "model.options.width=8",
            "--set", "method.name=erm", "--set", "train.lr=300", "--set", "train.warmup_epochs=0",
            "--set", "train.epochs=2", "--set", "train.batch_size=64", "--threads", "1", "--data", str(digits)]
    res = mr2("train", *sets, "--out", str(out), "--on-divergence", "record")
    assert res.returncode == 0, res.stderr
    assert {p.name for p in out.iterdir()} >= {"model.pt", "config.yaml", "epochs.csv"}
    assert not (out / CHECKPOINT).exists()
    assert yaml.safe_load((out / "config.yaml").read_text())["diverged"]["epoch"] == 1
    res = mr2("evaluate", "--run", str(out), "--data", str(digits), "--out", str(out / "eval_val"), "--split", "val")
    assert res.returncode == 0, res.stderr
    table = pd.read_csv(out / "eval_val" / "per_class.csv")
    from mr2.engine.data import load_prepared

    val = load_prepared(digits).val.y
    assert table["accuracy"].eq(0).all() and len(table) == 10 and len(val) > 0
    assert table["n_val"].tolist() == torch.bincount(val, minlength=10).tolist()
    assert json.loads((out / "eval_val" / "metrics.json").read_text())["top1"] == 0
    res = mr2("evaluate", "--run", str(out), "--data", str(digits), "--out", str(out / "eval"))
    assert_one_line_error(res, "diverged in epoch 1", "no test numbers")
    assert not (out / "eval").exists()
    res = mr2("train", *sets, "--out", str(tmp_path / "final"))
    assert_one_line_error(res, "diverged in epoch 1", code=1)
