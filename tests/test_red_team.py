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
                                                                                   "2**64")])
def test_numbers_that_overflow_are_one_line_naming_the_key(digits, tmp_path, args, needle):
    res = mr2("train", "--set", "data.name=digits", "--set", "model.name=mlp", *args, "--data", str(digits),
              "--out", str(tmp_path / "run"))
    one_line_error(res, needle)
    assert not (tmp_path / "run").exists()
