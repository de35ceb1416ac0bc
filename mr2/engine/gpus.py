"""Several runs on one GPU: each run of a machine claims a slot on the least busy visible GPU.

With ``runs_per_gpu: N`` the pipeline lets up to N·G training or evaluation jobs run at once on a
machine with G GPUs (``resources: gpu_slot=1``); each job calls ``claim_gpu`` to choose its device.
A slot is a lock file ``<host>/gpu<i>.slot<j>.lock`` in a folder shared by the jobs; a job holds an
exclusive ``flock`` on it for as long as its process lives, so a killed job frees its slot at once.
``<host>`` is the machine's name (with ``.slurm<id>`` inside a SLURM job: SLURM gives each job its
own GPUs, often renumbered from 0, so only the jobs of one allocation share them) and ``<i>`` the
GPU as the machine knows it (its entry in ``CUDA_VISIBLE_DEVICES``, else its index), so jobs on other
nodes of a cluster, or given other GPUs by a scheduler, never wait for each other.
The job takes a free slot of the GPU with the fewest slots held; when every slot is held it waits.
With ``runs_per_gpu: 1`` each job holds a whole GPU (its slot 0), so jobs on a multi-GPU machine
spread over the GPUs instead of all taking GPU 0.

A run of several processes (``gpus: N`` > 1, torchrun) claims N whole GPUs at once, all or
none (``claim_gpus``: a job holding some while waiting for more could block another forever),
and ``exec_on_gpus`` then replaces itself by the torchrun command with ``CUDA_VISIBLE_DEVICES``
set to them; the locks pass to that command and are held until it ends.
"""

from __future__ import annotations

import fcntl
import os
import re
import socket
import sys
import time
from pathlib import Path
from typing import Callable, Sequence

#: the slot locks this process holds (kept open: closing a file releases its lock)
_HELD: list[int] = []


def _try_lock(path: Path) -> int | None:
    """An open descriptor of ``path`` holding its exclusive lock, or None when another process holds it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    return fd


def slot_lock(lock_dir: str | Path, gpu: int, slot: int) -> Path:
    """The lock file of slot ``slot`` of visible GPU ``gpu`` of this machine (module docstring)."""
    names = [v.strip() for v in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if v.strip()]
    name = names[gpu] if gpu < len(names) else str(gpu)
    job = os.environ.get("SLURM_JOB_ID", "").strip()
    scope = re.sub(r"[^A-Za-z0-9_.-]", "_", socket.gethostname() + (f".slurm{job}" if job else "")) or "host"
    return Path(lock_dir) / scope / f"gpu{re.sub(r'[^A-Za-z0-9_.-]', '_', name)}.slot{slot}.lock"


def slots_held(lock_dir: Path, num_gpus: int, runs_per_gpu: int) -> list[int]:
    """How many slots of each GPU other processes hold now (each slot probed, never kept)."""
    held = []
    for gpu in range(num_gpus):
        busy = 0
        for slot in range(runs_per_gpu):
            fd = _try_lock(slot_lock(lock_dir, gpu, slot))
            if fd is None:
                busy += 1
            else:
                os.close(fd)
        held.append(busy)
    return held


def claim_slot(num_gpus: int, runs_per_gpu: int, lock_dir: str | Path, wait: float = 2.0,
               log: Callable[[str], object] = print) -> int:
    """Claim a slot on the least busy of ``num_gpus`` GPUs (each takes ``runs_per_gpu`` runs) and
    return the GPU's index; the lock is held until this process ends. Waits while every slot is held."""
    if num_gpus < 1 or runs_per_gpu < 1:
        raise ValueError(f"--gpu-slots needs at least one visible GPU and one slot per GPU "
                         f"(found {num_gpus} GPUs, {runs_per_gpu} slots)")
    waited = False
    while True:
        held = slots_held(lock_dir, num_gpus, runs_per_gpu)
        for gpu in sorted(range(num_gpus), key=lambda g: (held[g], g)):
            for slot in range(runs_per_gpu):
                fd = _try_lock(slot_lock(lock_dir, gpu, slot))
                if fd is not None:
                    _HELD.append(fd)
                    return gpu
        if not waited:
            log(f"[gpus] all {num_gpus * runs_per_gpu} GPU slots in {lock_dir} are held; waiting for one")
            waited = True
        time.sleep(wait)


def claim_gpu(device: str, runs_per_gpu: int, lock_dir: str | Path) -> str:
    """The device string of a run sharing the machine's GPUs: ``cuda:<i>`` of a claimed slot when
    ``device`` is auto or cuda and CUDA is present, ``device`` itself otherwise (CPU runs share nothing)."""
    import torch

    if device not in ("auto", "cuda") or not torch.cuda.is_available():
        return device
    return f"cuda:{claim_slot(torch.cuda.device_count(), runs_per_gpu, lock_dir)}"


def claim_gpus(count: int, num_gpus: int, lock_dir: str | Path, wait: float = 2.0,
               log: Callable[[str], object] = print) -> list[int]:
    """Claim ``count`` whole GPUs of ``num_gpus`` (slot 0 of each, the slot a one-run-per-GPU job
    holds) at once, and return their indices; waits while fewer than ``count`` are free, holding
    none of them meanwhile. The locks are held until this process (or what it execs) ends."""
    if count > num_gpus:
        raise ValueError(f"a run of {count} processes needs {count} GPUs; {num_gpus} are visible")
    waited = False
    while True:
        fds: dict[int, int] = {}
        for gpu in range(num_gpus):
            fd = _try_lock(slot_lock(lock_dir, gpu, 0))
            if fd is not None:
                fds[gpu] = fd
                if len(fds) == count:
                    _HELD.extend(fds.values())
                    return sorted(fds)
        for fd in fds.values():
            os.close(fd)
        if not waited:
            log(f"[gpus] fewer than {count} of {num_gpus} GPUs are free (locks in {lock_dir}); waiting")
            waited = True
        time.sleep(wait)


def exec_on_gpus(command: Sequence[str], count: int, lock_dir: str | Path, num_gpus: int | None = None) -> None:
    """Claim ``count`` whole GPUs (``claim_gpus``; ``num_gpus`` visible, by default torch's count)
    and replace this process by ``command`` with ``CUDA_VISIBLE_DEVICES`` naming them (as
    positions in an inherited ``CUDA_VISIBLE_DEVICES``); without CUDA, just run ``command``."""
    env = dict(os.environ)
    if num_gpus is None:
        import torch

        num_gpus = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if num_gpus:
        claimed = claim_gpus(count, num_gpus, lock_dir, log=lambda message: print(message, flush=True))
        visible = [v for v in env.get("CUDA_VISIBLE_DEVICES", "").split(",") if v.strip()] or list(map(str, range(num_gpus)))
        env["CUDA_VISIBLE_DEVICES"] = ",".join(visible[g] for g in claimed)
        for fd in _HELD:
            os.set_inheritable(fd, True)  # the command holds the locks until it ends
    sys.stdout.flush()
    sys.stderr.flush()
    os.execvpe(command[0], list(command), env)
