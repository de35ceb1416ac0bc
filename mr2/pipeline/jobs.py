"""What the model jobs of a config declare and run: their GPU resources, the command that launches
training (one process, or torchrun on several GPUs), the device options, JTT's error set and the
theory step's options."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..common.tuning import trial_index
from .paths import patterns


def launcher(config: dict, locks: str) -> list[str]:
    """The command that runs the CLI for training: ``python -m mr2``, or with `gpus` > 1 torchrun with
    one process per GPU on one node (``--standalone`` picks a free port, so several runs can share a
    node), started by ``mr2 on-gpus`` on `gpus` GPUs of the machine that no other job holds."""
    if config["gpus"] <= 1:
        return ["python", "-m", "mr2"]
    return [
        "python", "-m", "mr2", "on-gpus", str(config["gpus"]), "--lock-dir", locks, "--",
        "python", "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={config['gpus']}", "-m", "mr2",
    ]


def gpu_resources(config: dict, one_process: bool = False) -> dict[str, int]:
    """What a model job declares: `gpu=N` for a training job (`gpus` processes), `gpu=1` for a
    one-process job (evaluation, JTT's error set). With runs_per_gpu > 1 a job also declares
    `gpu_slot=1`: run locally with `--resources gpu_slot=<GPUs x runs_per_gpu>` (gpu left unlimited),
    the jobs share the machine's GPUs; under SLURM `gpu=1` is what gets the job a GPU of its own."""
    if config["gpus"] <= 0:
        return {}
    if config["runs_per_gpu"] > 1:
        return {"gpu": 1, "gpu_slot": 1}
    return {"gpu": 1 if one_process else config["gpus"]}


def device_args(config: dict, locks: str, one_process: bool = False) -> list[str]:
    """``--device`` and, for a job of one process on a GPU machine, ``--gpu-slots N --lock-dir ...``:
    the job takes a free slot of the least busy GPU (mr2.engine.gpus), so the jobs that run at once
    spread over the GPUs (torchrun jobs claim theirs in ``launcher``)."""
    args = ["--device", config["device"]]
    if config["gpus"] == 1 or (one_process and config["gpus"] > 1):
        args += ["--gpu-slots", str(config["runs_per_gpu"]), "--lock-dir", locks]
    return args


def upsample_input(config: dict, wildcards: Mapping[str, Any]) -> list[str] | str:
    """The error set a jtt run up-samples (JTT's stage 1 errors of that run); nothing for the other methods."""
    if wildcards["method"] != "jtt":
        return []
    keys = ("dataset", "variant", "run_hash", "seed")
    return patterns(config["output_root"])["JTT_ERRORS"].format(**{key: wildcards[key] for key in keys})


def divergence_args(variant: str) -> list[str]:
    """``--on-divergence record`` for a tuning trial (variant ``trial<i>``): a trial that diverges ends as
    a failed run scored 0 on validation, so the search goes on; every other run stops on divergence."""
    return ["--on-divergence", "record"] if trial_index(variant) is not None else []


def jtt_errors_args(method: str, errors: str) -> list[str]:
    """``--jtt-errors <file>`` for a jtt run (stage 2 up-samples stage 1's error set)."""
    return ["--jtt-errors", errors] if method == "jtt" else []


def theory_args(config: dict) -> list[str]:
    """Config key `theory` as options of `python -m theory bound` (its defaults where unset)."""
    return [word for key, value in sorted(config["theory"].items()) for word in (f"--{key}", str(value))]
