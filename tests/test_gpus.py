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


ON_GPUS = """
import sys
from mr2.engine.gpus import exec_on_gpus
exec_on_gpus(["sh", "-c", "echo visible=$CUDA_VISIBLE_DEVICES; exec sleep 60"], int(sys.argv[1]), sys.argv[2], num_gpus=3)
"""


def start_on_gpus(lock_dir, count):
    return subprocess.Popen([sys.executable, "-c", ON_GPUS, str(count), str(lock_dir)], stdout=subprocess.PIPE,
                            text=True, cwd=REPO)


def test_a_run_of_several_processes_claims_whole_gpus_all_or_none_and_its_command_holds_them(tmp_path, monkeypatch):
    """Three GPUs that the scheduler named 4, 6 and 7; a one-GPU job holds the first. A torchrun job
    of 2 processes gets the other two, as CUDA_VISIBLE_DEVICES of its command, which holds their
    locks while it runs; a second such job waits, holding none, until the first ends."""
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "4,6,7")
    procs = [start_holder(tmp_path, 3, 1)]
    try:
        assert claimed(procs[0]) == 0
        procs.append(start_on_gpus(tmp_path, 2))
        assert procs[1].stdout.readline().strip() == "visible=6,7"
        assert gpus.slots_held(tmp_path, 3, 1) == [1, 1, 1]  # the exec'd command holds GPUs 6 and 7
        procs.append(start_on_gpus(tmp_path, 2))
        assert "fewer than 2 of 3 GPUs are free" in procs[2].stdout.readline()
        assert gpus.slots_held(tmp_path, 3, 1) == [1, 1, 1]  # waiting, it holds nothing
        procs[0].kill()
        procs[0].wait()
        assert gpus.slots_held(tmp_path, 3, 1) == [0, 1, 1]  # still waiting: one free GPU is not two
        procs[1].kill()
        procs[1].wait()
        assert procs[2].stdout.readline().strip() in ("visible=4,6", "visible=4,7", "visible=6,7")
    finally:
        for p in procs:
            p.kill()
            p.wait()
    with pytest.raises(ValueError, match="needs 4 GPUs; 3 are visible"):
        gpus.claim_gpus(4, 3, tmp_path)


def test_locks_are_per_machine_and_per_gpu_as_the_machine_names_it(tmp_path, monkeypatch):
    monkeypatch.delenv("SLURM_JOB_ID", raising=False)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "GPU-1a:2b,3")
    monkeypatch.setattr(gpus.socket, "gethostname", lambda: "node 7")
    assert gpus.slot_lock(tmp_path, 0, 1) == tmp_path / "node_7" / "gpuGPU-1a_2b.slot1.lock"
    assert gpus.slot_lock(tmp_path, 1, 0) == tmp_path / "node_7" / "gpu3.slot0.lock"
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES")
    monkeypatch.delenv("SLURM_JOB_ID", raising=False)
    monkeypatch.setattr(gpus.socket, "gethostname", lambda: "node8")
    assert gpus.slot_lock(tmp_path, 1, 0) == tmp_path / "node8" / "gpu1.slot0.lock"
    monkeypatch.setenv("SLURM_JOB_ID", "4711")  # SLURM's jobs have GPUs of their own, each often named 0
    assert gpus.slot_lock(tmp_path, 0, 0) == tmp_path / "node8.slurm4711" / "gpu0.slot0.lock"
