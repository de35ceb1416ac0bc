"""Several runs per GPU: each run claims a slot on the least busy GPU and holds it for its lifetime
(mr2.engine.gpus). Tested with pretend GPUs: the slots are file locks, no CUDA is needed."""

import subprocess
import sys
import time

import pytest

from mr2.engine import gpus

REPO = __import__("pathlib").Path(__file__).resolve().parents[1]

HOLDER = """
import sys, time
from mr2.engine.gpus import claim_slot
gpu = claim_slot(int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], wait=0.05, log=lambda m: print(m, flush=True))
print("gpu", gpu, flush=True)
time.sleep(60)
"""


def start_holder(lock_dir, num_gpus, runs_per_gpu):
    return subprocess.Popen([sys.executable, "-c", HOLDER, str(num_gpus), str(runs_per_gpu), str(lock_dir)],
                            stdout=subprocess.PIPE, text=True, cwd=REPO)


def claimed(proc):
    """The GPU a holder process reports, or None when it says it waits."""
    line = proc.stdout.readline().strip()
    return int(line.split()[1]) if line.startswith("gpu ") else None


def test_runs_spread_over_the_gpus_and_wait_when_every_slot_is_held(tmp_path):
    procs = []
    try:
        got = []
        for _ in range(4):  # 2 GPUs x 2 runs each
            procs.append(start_holder(tmp_path, 2, 2))
            got.append(claimed(procs[-1]))
        assert sorted(got) == [0, 0, 1, 1] and got[:2] == [0, 1]  # the least busy GPU first
        waiting = start_holder(tmp_path, 2, 2)
        procs.append(waiting)
        assert "waiting" in waiting.stdout.readline()  # every slot held: the fifth run waits ...
        procs[1].kill()  # ... until a run on GPU 1 ends (a killed run frees its slot)
        procs[1].wait()
        assert claimed(waiting) == 1
    finally:
        for p in procs:
            p.kill()
            p.wait()


def test_slots_held_counts_other_processes_locks(tmp_path):
    assert gpus.slots_held(tmp_path, 3, 2) == [0, 0, 0]
    holder = start_holder(tmp_path, 3, 2)
    try:
        assert claimed(holder) == 0
        assert gpus.slots_held(tmp_path, 3, 2) == [1, 0, 0]
    finally:
        holder.kill()
        holder.wait()
    time.sleep(0.1)
    assert gpus.slots_held(tmp_path, 3, 2) == [0, 0, 0]


def test_cpu_runs_share_nothing_and_bad_counts_are_named(tmp_path):
    assert gpus.claim_gpu("cpu", 4, tmp_path) == "cpu"
    assert not list(tmp_path.iterdir())
    with pytest.raises(ValueError, match="gpu-slots"):
        gpus.claim_slot(0, 2, tmp_path)


def test_cli_needs_a_lock_dir_for_gpu_slots(tmp_path):
    res = subprocess.run([sys.executable, "-m", "mr2", "evaluate", "--run", str(tmp_path), "--data", "x.pt",
                          "--out", str(tmp_path / "e"), "--gpu-slots", "2"], capture_output=True, text=True, cwd=REPO)
    assert res.returncode == 2 and "--lock-dir" in res.stderr and "Traceback" not in res.stderr
