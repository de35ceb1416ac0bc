"""One output root holds one config's results, one workflow at a time writes it, and no other file's keys
leak into a config given with --configfile (mr2.pipeline.root, mr2.pipeline.configfiles; the workflow
around them: tests/test_pipeline.py)."""

import errno
import json
import os
import signal
import subprocess
import sys

import pytest
import yaml

from mr2.pipeline import root
from mr2.pipeline.config import PipelineConfigError
from mr2.pipeline.configfiles import check_not_merged, leaked_keys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CONFIG = {"methods": ["erm", "mr2"], "seeds": (0, 1), "output_root": "results"}
#: holds the output root of pipeline_config.json argv[1] for a config until it is killed
HOLDER = """import sys, time
from mr2.pipeline.root import hold
hold(sys.argv[1], {"seeds": [7]}, "theirs.yaml")
print("held", flush=True)
time.sleep(600)
"""


def record(tmp_path, config):
    path = tmp_path / "out" / "pipeline_config.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(config, sort_keys=True, indent=2))
    return path


def test_an_output_root_of_this_config_or_of_none_is_this_configs(tmp_path):
    root.check_owner(tmp_path / "out" / "pipeline_config.json", CONFIG, "mine.yaml")  # no record yet
    root.check_owner(record(tmp_path, CONFIG), CONFIG, "mine.yaml")  # tuples recorded as lists: the same config


def test_another_configs_record_is_refused_naming_both_configs_and_the_keys_they_differ_in(tmp_path):
    path = record(tmp_path, {**CONFIG, "methods": ["erm", "mr2_uniform"], "seeds": [0, 1]})
    with pytest.raises(PipelineConfigError) as info:
        root.check_owner(path, CONFIG, "mine.yaml")
    line = str(info.value)
    assert "\n" not in line and f"output root {path.parent} holds the results of another config (digest " in line
    assert "than this workflow's (mine.yaml, digest " in line and "they differ in methods:" in line
    assert f"delete {path} to rebuild" in line and "own output_root" in line
    # the lock's record names the config that wrote the root, when it is the recorded one
    theirs = {"methods": ["erm", "mr2_uniform"], "seeds": [0, 1], "output_root": "results"}
    (path.parent / root.LOCK).write_text(json.dumps({"pid": 1, "host": "h", "workdir": "/elsewhere",
                                                    "config": "theirs.yaml", "digest": root.config_digest(theirs)}))
    with pytest.raises(PipelineConfigError, match=r"another config \(theirs.yaml from /elsewhere, digest "):
        root.check_owner(path, CONFIG, "mine.yaml")


@pytest.mark.parametrize("text", ["", '{"seeds": [0', "[1, 2]", "\xff"])
def test_a_damaged_record_is_refused_naming_it(tmp_path, text):
    path = tmp_path / "pipeline_config.json"
    path.write_bytes(text.encode("latin-1"))
    with pytest.raises(PipelineConfigError, match=rf"^{path} is not a pipeline config \(.*\): delete it to rebuild"):
        root.check_owner(path, CONFIG, "mine.yaml")


def start_holder(tmp_path):
    target = tmp_path / "out" / "pipeline_config.json"
    proc = subprocess.Popen([sys.executable, "-c", HOLDER, str(target)], cwd=tmp_path, stdout=subprocess.PIPE,
                            text=True, env={**os.environ, "PYTHONPATH": REPO})
    assert proc.stdout.readline().strip() == "held"
    return proc, target


def test_a_second_workflow_is_refused_naming_the_holder_and_a_killed_one_blocks_nothing(tmp_path):
    proc, target = start_holder(tmp_path)
    try:
        with pytest.raises(root.OutputRootBusy) as info:
            root.hold(target, CONFIG, "mine.yaml")
        line = str(info.value)
        assert "\n" not in line and f"output root {target.parent} is being written by another workflow (pid {proc.pid}" in line
        assert f"working directory {tmp_path}, config theirs.yaml; lock {target.parent / root.LOCK}" in line
    finally:
        os.kill(proc.pid, signal.SIGKILL)  # a crash: no release, no cleanup
        proc.wait()
    lock = root.hold(target, CONFIG, "mine.yaml")
    try:
        held = json.loads(lock.read_text())
        assert held["pid"] == os.getpid() and held["config"] == "mine.yaml" and "released" not in held
        assert held["digest"] == root.config_digest(root.as_recorded(CONFIG))
        assert root.hold(target, CONFIG, "mine.yaml") == lock  # this process holds it already
    finally:
        root.release(target)
    released = json.loads(lock.read_text())
    assert released["released"] >= released["start"] and released["config"] == "mine.yaml"


def test_without_flock_the_record_decides_and_a_dead_holder_is_stale(tmp_path, monkeypatch):
    def no_flock(fd, operation):
        raise OSError(errno.ENOLCK, "No locks available")

    monkeypatch.setattr(root.fcntl, "flock", no_flock)
    target = tmp_path / "out" / "pipeline_config.json"
    target.parent.mkdir()
    lock = target.parent / root.LOCK
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    here = {"host": root.socket.gethostname(), "start": 0, "workdir": "/w", "config": "theirs.yaml"}
    lock.write_text(json.dumps({**here, "pid": os.getppid()}))  # a live process on this host
    with pytest.raises(root.OutputRootBusy, match=f"pid {os.getppid()} on host"):
        root.hold(target, CONFIG, "mine.yaml")
    lock.write_text(json.dumps({**here, "host": "another-host", "pid": int(gone.stdout)}))  # cannot be checked
    with pytest.raises(root.OutputRootBusy, match="on host another-host"):
        root.hold(target, CONFIG, "mine.yaml")
    lock.write_text(json.dumps({**here, "pid": int(gone.stdout)}))  # its process has ended: stale
    try:
        assert json.loads(root.hold(target, CONFIG, "mine.yaml").read_text())["pid"] == os.getpid()
    finally:
        root.release(target)
    assert root.stale(json.loads(lock.read_text()))  # released


def test_keys_a_loaded_file_adds_under_the_given_config_are_named():
    default = {"datasets": {"fashion_mnist": {"data": {"name": "fashion_mnist"}, "train": {"augment": "none"}}},
               "methods": ["erm"], "seeds": [0]}
    given = {"datasets": {"fashion_mnist": {"data": {"name": "fashion_mnist", "train_cap": 10}, "train": {"lr": 1}}},
             "methods": ["mr2"]}
    assert leaked_keys(default, given) == ["datasets.fashion_mnist.train.augment", "seeds"]
    assert leaked_keys(default, {**given, "datasets": {"cifar": {}}, "seeds": [1]}) == ["datasets.fashion_mnist"]
    assert leaked_keys(default, default) == []


def test_a_configfile_merged_under_the_users_is_refused_unless_replaced_or_the_same(tmp_path):
    default, mine = tmp_path / "default.yaml", tmp_path / "mine.yaml"
    default.write_text(yaml.safe_dump({"train": {"augment": "none", "epochs": 3}, "seeds": [0]}))
    given = {"train": {"epochs": 5}, "seeds": [1]}
    mine.write_text(yaml.safe_dump(given))
    with pytest.raises(PipelineConfigError) as info:
        check_not_merged([mine, default], [mine], given, replaced=False)
    line = str(info.value)
    assert f"config file {default} (a `configfile:` of the workflow) is merged under --configfile " in line
    assert "its keys train.augment would change your runs" in line and "--replace-workflow-config" in line
    check_not_merged([mine, default], [mine], given, replaced=True)  # Snakemake dropped the directive's file
    check_not_merged([default], [], given, replaced=False)  # no --configfile: the default is the config
    check_not_merged([mine, mine], [mine], given, replaced=False)  # the same file twice
    check_not_merged([mine, default], [mine], {**given, "train": {"epochs": 5, "augment": "flip"}}, replaced=False)
