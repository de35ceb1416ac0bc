"""Several runs on one GPU: each run of a machine claims a slot on the least busy visible GPU.

With ``runs_per_gpu: N`` the pipeline lets up to N·G training or evaluation jobs run at once on a
machine with G GPUs (``resources: gpu_slot=1``); each job calls ``claim_gpu`` to choose its device.
A slot is a lock file ``gpu<i>.slot<j>.lock`` in a folder shared by the jobs; a job holds an
exclusive ``flock`` on it for as long as its process lives, so a killed job frees its slot at once.
The job takes a free slot of the GPU with the fewest slots held; when every slot is held it waits.
"""

from __future__ import annotations

import fcntl
import os
import time
from pathlib import Path
from typing import Callable

#: the slot locks this process holds (kept open: closing a file releases its lock)
_HELD: list[int] = []


def _try_lock(path: Path) -> int | None:
    """An open descriptor of ``path`` holding its exclusive lock, or None when another process holds it."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    return fd


def slots_held(lock_dir: Path, num_gpus: int, runs_per_gpu: int) -> list[int]:
    """How many slots of each GPU other processes hold now (each slot probed, never kept)."""
    held = []
    for gpu in range(num_gpus):
        busy = 0
        for slot in range(runs_per_gpu):
            fd = _try_lock(lock_dir / f"gpu{gpu}.slot{slot}.lock")
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
    lock_dir = Path(lock_dir)
    lock_dir.mkdir(parents=True, exist_ok=True)
    waited = False
    while True:
        held = slots_held(lock_dir, num_gpus, runs_per_gpu)
        for gpu in sorted(range(num_gpus), key=lambda g: (held[g], g)):
            for slot in range(runs_per_gpu):
                fd = _try_lock(lock_dir / f"gpu{gpu}.slot{slot}.lock")
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
