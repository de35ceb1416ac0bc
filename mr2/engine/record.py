"""A run folder's record and its resume: what a run's bytes depend on beyond its config
(``run_conditions``: device, processes, CPU threads, kernels and every variable that caps them, the
CPU's model and vendor, and the code, ``mr2.common.provenance.code_version``), the checkpoint a killed
run resumes from and the rules that make a resume exact or refused (``check_resume``,
``resume_from``), the per-epoch timings kept beside the outputs, and the checks on a run folder before
anything is trained into it."""

from __future__ import annotations

import itertools
import shutil
from pathlib import Path
from typing import Any, Mapping

import pandas as pd
import torch

from ..common.io import save_csv, writable_folder
from ..common.kernels import cpu_model, cpu_vendor, kernel_settings
from ..common.provenance import code_version
from .data.cache import check_same_file

#: a training run in progress (``mr2.engine.train.Runner``; not imported here, which train imports)
Runner = Any

CHECKPOINT = "checkpoint.pt"
TIMINGS = "timings.csv"  # wall-clock seconds per epoch: beside the outputs, never one of them
OUTPUTS = ("model.pt", "config.yaml", "epochs.csv", CHECKPOINT, TIMINGS)
#: a run folder's evaluations (``mr2 evaluate``: test, and validation for tuning), which belong to its model.pt
EVALUATIONS = ("eval", "eval_val")
CHECKPOINT_KEYS = ("config", "epoch", "state", "optimizer", "rows", "best", "data_checksum", "conditions")
#: what to do when a resume differs from its checkpoint in one of ``run_conditions``
RERUN_WITH = {"device": "--device {}", "processes": "torchrun --nproc_per_node {}",
              "threads": "threads: {} in the run's config",
              "cpu_kernels": "the CPU kernels {} (mr2.common.kernels: MR2_CPU_ISA, ATEN_CPU_CAPABILITY)",
              "kernel_settings": "the kernel variables {} (mr2.common.kernels.KERNEL_VARIABLES)",
              "cpu_model": "a machine whose CPU is {}",
              "cpu_vendor": "a machine whose CPU vendor is {}",
              "code": "the code of commit {} (git checkout; mr2.common.provenance)"}


def non_finite(runner: Runner) -> list[str]:
    """The floating-point parameters and buffers of the model and the loss holding a NaN or ±inf."""
    tensors = {f"{part}.{name}": t for part, module in (("model", runner.model), ("loss", runner.loss))
               for name, t in itertools.chain(module.named_parameters(), module.named_buffers())
               if t.is_floating_point()}
    if not tensors:
        return []
    finite = torch.stack([torch.isfinite(t).all() for t in tensors.values()]).tolist()  # one host read
    return [name for name, ok in zip(tensors, finite) if not ok]


def run_conditions(runner: Runner) -> dict[str, Any]:
    """What a run's numbers depend on beyond its config: the device type, the number of processes
    and, on CPU, the number of threads (float reductions are split by thread), the instruction set
    of PyTorch's kernels (AVX-512 ones round otherwise than AVX2 ones), every variable that caps them
    (``mr2.common.kernels.KERNEL_VARIABLES``), the CPU's model (vendors differ) and the code that
    trains (``code_version``: the commit, ``+changes`` where tracked files differ from it)."""
    on_cpu = runner.device.type == "cpu"
    return {"device": runner.device.type, "processes": runner.world.size,
            "threads": torch.get_num_threads() if on_cpu else None,
            "cpu_kernels": torch.backends.cpu.get_cpu_capability() if on_cpu else None,
            "kernel_settings": kernel_settings() if on_cpu else None,
            "cpu_model": cpu_model() if on_cpu else None,
            "cpu_vendor": cpu_vendor() if on_cpu else None,
            "code": code_version()}


def kernels_line(kernels: str, environ: Mapping[str, str]) -> str:
    """The log line naming the CPU kernels a run uses (``torch.backends.cpu.get_cpu_capability()``),
    with a warning where AVX2 was asked for (``mr2.common.kernels``) but AVX-512 ones run: torch ran an
    operator before mr2 was imported, and the run's numbers then depend on the machine."""
    late = kernels == "AVX512" and environ.get("ATEN_CPU_CAPABILITY", "").lower() == "avx2"
    warning = (" - not the AVX2 asked for: torch ran an operator before mr2 was imported, so this run's numbers "
               "depend on the machine (import mr2 first)")
    return f"CPU kernels: {kernels}" + (warning if late else "")


def check_resume(ckpt: dict[str, Any], runner: Runner, ckpt_path: Path) -> None:
    """A checkpoint of the run's config is resumed only on the same prepared file (checksum) and
    the same ``run_conditions``: a ``ValueError`` naming both values and what to do otherwise."""
    check_same_file(runner.data, runner.data_path, ckpt["data_checksum"], ckpt_path, runner.cfg["data"])
    was, now = ckpt["conditions"] if isinstance(ckpt["conditions"], dict) else {}, run_conditions(runner)
    differ = [key for key in now if was.get(key) != now[key]]
    if differ:
        hints = [RERUN_WITH[key].format(was[key]) for key in differ if was.get(key) is not None]
        todo = f"resume with {', '.join(hints)}, or delete" if hints else "delete"
        raise ValueError(f"{ckpt_path} was written with {', '.join(f'{key}={was.get(key)}' for key in differ)}, "
                         f"this run has {', '.join(f'{key}={now[key]}' for key in differ)}: resuming would match "
                         f"neither run; {todo} {ckpt_path} to start afresh")


def resume_from(ckpt: dict[str, Any], runner: Runner, ckpt_path: Path) -> tuple[int, list, Any]:
    """Load a checkpoint of this run's config into ``runner``: (epoch, rows, best). A state that
    does not fit the run (missing or misshapen tensors, a bad epoch, NaN or ±inf weights) is a
    ``ValueError`` naming the file: the checkpoint is damaged, the run did not diverge."""
    def damaged(detail: str) -> ValueError:
        return ValueError(f"{ckpt_path} has this run's config but a damaged state ({detail[:200]}); "
                          "delete it to start afresh")

    epoch, rows, best = ckpt["epoch"], ckpt["rows"], ckpt["best"]
    if isinstance(epoch, bool) or not isinstance(epoch, int) or not 1 <= epoch <= runner.cfg["train"]["epochs"]:
        raise damaged(f"epoch {epoch!r}")
    if not isinstance(rows, list) or not (best is None or isinstance(best, dict)):
        raise damaged("its log or best epoch is not what training writes")
    try:
        runner.load_state(ckpt["state"])
        runner.opt.load_state_dict(ckpt["optimizer"])
    except (RuntimeError, KeyError, TypeError, ValueError, IndexError, AttributeError) as exc:
        raise damaged(" ".join(f"{type(exc).__name__}: {exc}".split())) from None
    bad = non_finite(runner)
    if bad:
        raise damaged(f"non-finite {', '.join(bad[:4])}")
    if best is not None and not fits(best.get("state"), runner.state()):
        raise damaged("its best epoch's weights do not fit the model")
    return epoch, rows, best


def fits(saved: Any, state: dict[str, dict[str, torch.Tensor]]) -> bool:
    """Whether ``saved`` holds a tensor of the same name and shape for every tensor of ``state``."""
    return isinstance(saved, dict) and all(
        isinstance(saved.get(part), dict) and saved[part].keys() == tensors.keys()
        and all(isinstance(saved[part][k], torch.Tensor) and saved[part][k].shape == t.shape for k, t in tensors.items())
        for part, tensors in state.items())


def save_timings(timings: list[dict[str, Any]], path: Path) -> None:
    """The seconds of every epoch (``epoch``, ``seconds``): kept out of the outputs of record."""
    save_csv(pd.DataFrame(timings, columns=["epoch", "seconds"]), path)


def earlier_timings(path: Path, epochs: int) -> list[dict[str, Any]]:
    """The timings of epochs 1..``epochs`` a killed run wrote to ``path`` (none when it is missing or
    unreadable: timings are not of record)."""
    try:
        kept = pd.read_csv(path)
        return kept[kept["epoch"] <= epochs][["epoch", "seconds"]].to_dict("records")
    except (OSError, ValueError, KeyError):
        return []


def resume_key(cfg: dict[str, Any]) -> dict[str, Any]:
    """The config without the keys that only say where/how fast it runs (threads, device):
    a checkpoint of the same identity is resumed."""
    return {k: v for k, v in cfg.items() if k not in ("threads", "device")}


def check_run_folder(out: Path, force: bool) -> None:
    """A run folder that holds a finished run (``model.pt``) is trained into again only with ``force``:
    its model, and the evaluations made of it, would otherwise be replaced or credited to another
    config. A ``ValueError`` naming the folder otherwise; then the folder is made and checked writable
    (``writable_folder``)."""
    if (out / "model.pt").is_file() and not force:
        raise ValueError(f"{out} holds a finished run (model.pt): train into another folder, or give --force to "
                         f"train it again (its model.pt and evaluations {', '.join(EVALUATIONS)}/ are removed first)")
    writable_folder(out, "run folder")


def forget_finished_run(out: Path) -> None:
    """Remove a finished run's evaluations, then its ``model.pt`` (``--force``, once the new run's
    config and data are checked): a failed retraining leaves no evaluation of a model that is gone."""
    for name in EVALUATIONS:
        if (out / name).is_dir():
            shutil.rmtree(out / name, ignore_errors=False)
    (out / "model.pt").unlink(missing_ok=True)
