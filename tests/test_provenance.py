"""Which code made a run (``mr2.common.provenance``): the commit of the checkout that holds the
package, ``+changes`` when a tracked file differs from it, ``not recorded`` outside a checkout of
its own; recorded in every run's conditions, so a resume under other code is refused, and listed
per setting in settings.csv."""

from __future__ import annotations

import shutil
import subprocess

import pandas as pd
import pytest
import yaml

from mr2.common.provenance import CHANGED, NOT_RECORDED, code_version, read_code_version
from mr2.results import verdicts as V

needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


def git(root, *args):
    return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, check=True).stdout.strip()


def checkout(tmp_path):
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q")
    git(root, "config", "user.email", "t@example.org")
    git(root, "config", "user.name", "t")
    (root / "tracked.py").write_text("x = 1\n")
    git(root, "add", "tracked.py")
    git(root, "commit", "-qm", "one")
    return root


@needs_git
def test_the_code_version_is_the_commit_and_says_when_tracked_files_differ_from_it(tmp_path):
    root = checkout(tmp_path)
    head = git(root, "rev-parse", "HEAD")
    assert read_code_version(root) == head[:12]
    (root / "untracked.csv").write_text("results\n")  # an untracked file (results, a note) does not count
    assert read_code_version(root) == head[:12]
    (root / "tracked.py").write_text("x = 2\n")
    assert read_code_version(root) == head[:12] + CHANGED
    git(root, "commit", "-qam", "two")
    assert read_code_version(root) == git(root, "rev-parse", "HEAD")[:12] != head[:12]


@needs_git
def test_no_checkout_of_its_own_records_nothing_rather_than_another_projects_commit(tmp_path):
    root = checkout(tmp_path)
    inner = root / "vendored"  # a copy of the package inside another project's repository
    inner.mkdir()
    assert read_code_version(inner) == NOT_RECORDED
    assert read_code_version(tmp_path / "nowhere") == NOT_RECORDED
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / ".git").write_text("gitdir: /does/not/exist\n")  # git cannot answer
    assert read_code_version(tmp_path / "broken") == NOT_RECORDED


def test_a_finished_run_records_the_code_that_trained_it_and_a_resume_under_other_code_is_refused(
        digits, tmp_path, monkeypatch):
    from mr2.engine import record
    from mr2.engine.train import train
    from test_safety import Stop, run_cfg, stop_after_epoch

    cfg, out = run_cfg(), tmp_path / "run"
    with pytest.raises(Stop):
        train(cfg, digits, out, log=stop_after_epoch(1))
    monkeypatch.setattr(record, "code_version", lambda: "0123456789ab+changes")
    with pytest.raises(ValueError) as refused:
        train(cfg, digits, out, log=lambda *_: None)
    line = str(refused.value)
    assert "\n" not in line and "code=0123456789ab+changes" in line and f"code={code_version()}" in line
    assert (out / "checkpoint.pt").exists()  # nothing already computed is lost
    monkeypatch.undo()
    train(cfg, digits, out, log=lambda *_: None)
    assert yaml.safe_load((out / "config.yaml").read_text())["conditions"]["code"] == code_version()


def test_settings_list_the_commits_that_trained_a_setting_in_order_and_say_when_none_was_recorded():
    runs = pd.DataFrame({"dataset": ["d", "d", "d", "e", "f"], "method": ["erm", "mr2", "dro", "erm", "erm"],
                         "variant": "default", "seed": 0,
                         V.CODE: ["bbb", "aaa", "bbb", None, "aaa+changes"]})
    settings = V.settings_table(runs).set_index("dataset")["code"]
    assert settings.to_dict() == {"d": "bbb, aaa", "e": NOT_RECORDED, "f": "aaa+changes"}
    assert V.settings_table(runs.drop(columns=V.CODE))["code"].eq(NOT_RECORDED).all()  # runs before the record
