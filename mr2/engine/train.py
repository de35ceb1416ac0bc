"""Training: one run = one dataset × method × options × seed, from a resolved config.

Outputs (in ``out_dir``, written atomically at the end):
  model.pt     final weights of the model and the loss state, with the resolved config and the
               loss's final per-class summary (e.g. a_k, γ_k)
  config.yaml  the resolved config
  epochs.csv   tidy per-epoch log: epoch, class (empty for run-level rows), name, value
               (loss parts, train/val accuracy, lr, and per-class a_k, γ_k, s̄, ...)
These three are byte-identical across reruns of the same config (and a killed-then-resumed run):
they hold no wall-clock time. The seconds of each epoch go to ``timings.csv`` (epoch, seconds),
beside them, written after every epoch; it is not an output of record.
A resumable checkpoint, ``checkpoint.pt``, is written atomically after every epoch beside
them (not a declared output); a rerun with the same config resumes from it, and it is
removed once the run is complete.

Determinism: the model is initialised from ``seed``; each epoch draws its order and
augmentation from generators seeded by (seed, epoch), so a resumed run reproduces the
uninterrupted one exactly on CPU. A resume is exact or refused: the checkpoint records the
prepared file's checksum and what the numbers depend on beyond the config (device type, number of
processes, CPU threads, kernels and the CPU; ``mr2.engine.record.run_conditions``), and a resume that differs in any of them stops with
one line naming both values.

Safety: the prepared file must have been made from the run's ``data`` config
(``check_made_from``); after every epoch the loss, every weight and every buffer of the model and
of the loss (BatchNorm's running statistics, class statistics) must be finite, otherwise the run
stops (``NonFiniteLossError``) before writing a checkpoint, so a diverged run never looks finished.

Several devices: started by ``torchrun --standalone --nproc_per_node=N -m mr2 train ...``, each process
trains on its slice of every global batch of ``train.batch_size`` and the loss is evaluated
on the gathered global batch, so the MR² statistics, γ and s̄ are those of one process (see
``mr2.distributed``); rank 0 alone logs and writes the outputs and checkpoints.
"""

from __future__ import annotations

import math
import os
import sys
import time
from pathlib import Path
from typing import Any

import pandas as pd
import torch
from torch import nn
from tqdm import tqdm

from . import augment as aug
from . import distributed
from .accel import CompiledOrEager, optimizer_options, to_channels_last, uses_channels_last
from .config import ConfigError
from .data import load_prepared
from .data.cache import check_made_from

from ..common.io import remove_stray_temporaries, save_csv, save_yaml
from .checkpoint import load_torch, require_keys, save_torch
from .record import (CHECKPOINT, CHECKPOINT_KEYS, OUTPUTS, TIMINGS, check_resume, check_run_folder,
                     earlier_timings, forget_finished_run, kernels_line, non_finite, resume_from, resume_key,
                     run_conditions, save_timings)
from .loader import Source, in_memory
from ..method.losses import build_loss, resolve_options
from .inference import autocast_for, per_class_accuracy, predict, select_device
from .models import HeadOnly, as_trained_net, build_from_config, freeze_backbone, resolve_model_options
from .step import GraphStep, TrainStep
from .upsample import epoch_index



class NonFiniteLossError(RuntimeError):
    """The training loss, a weight or a buffer became NaN or infinite; the last good checkpoint
    (if any) is kept."""


def epoch_seed(seed: int, epoch: int) -> int:
    """Seed of the generators of one epoch (data order, augmentation, dropout)."""
    return (seed * 1_000_003 + epoch * 7_919 + 17) % (2**63 - 1)


def lr_at(step: int, total_steps: int, warmup_steps: int, base_lr: float, min_lr: float) -> float:
    """Linear warm-up from base_lr/warmup_steps to base_lr, then cosine decay to min_lr:
    lr = min_lr + (base_lr − min_lr)·(1 + cos(π·t))/2 with t the post-warm-up progress."""
    if warmup_steps > 0 and step < warmup_steps:
        return base_lr * (step + 1) / warmup_steps
    t = (step - warmup_steps) / max(1, total_steps - warmup_steps)
    return min_lr + (base_lr - min_lr) * 0.5 * (1 + math.cos(math.pi * min(1.0, t)))


def epoch_progress(batches, steps: int, desc: str, show: bool):
    """The epoch's batches, with a progress bar and the time remaining on stderr; only where stderr
    is a terminal (tqdm's ``disable=None``: logs and pipes stay clean) and ``show`` (rank 0). The bar
    is cleared when the epoch ends; the epoch's log line follows."""
    return tqdm(batches, total=steps, desc=desc, unit="step", leave=False, dynamic_ncols=True,
                disable=None if show else True)


class Runner:
    """Everything a run needs, built from the resolved config before any training starts."""

    def __init__(self, cfg: dict[str, Any], data_path: str | Path, out_dir: str | Path, log=print) -> None:
        self.cfg, self.out, self.data_path = cfg, Path(out_dir), Path(data_path)
        tc = cfg["train"]
        device = select_device(cfg["device"])
        self.world = distributed.init_from_env(device.type)  # one process unless started by torchrun
        self.device = distributed.device_for(device, self.world)
        self.log = log if self.world.is_main else (lambda *_, **__: None)
        if cfg["threads"]:
            torch.set_num_threads(int(cfg["threads"]))
        self.data = load_prepared(data_path)
        check_made_from(self.data, data_path, cfg["data"])
        if tc["select"] == "best_val" and len(self.data.val) == 0:
            raise ConfigError(f"config key 'train.select' is best_val, but {data_path} has no validation split "
                              f"({empty_val_cause(cfg['data'], self.data.train.y)}): set train.select=last or "
                              "prepare the data with a validation split")
        info = self.data.info
        if info.kind == "image" and tc["crop_padding"] > max(info.input_shape[1:]):  # a padded batch would overflow
            raise ConfigError(f"config key 'train.crop_padding' ({tc['crop_padding']}) exceeds the images' side "
                              f"({max(info.input_shape[1:])} pixels of {data_path})")
        self.k = info.num_classes
        torch.manual_seed(cfg["seed"])
        self.model = build_from_config(cfg["model"], self.k, info.input_shape)
        self.model = distributed.sync_batch_norm(self.model, self.world, self.device, tc["sync_bn"]).to(self.device)
        self.channels_last = uses_channels_last(self.device, info.input_shape)
        if self.channels_last:
            self.model = self.model.to(memory_format=torch.channels_last)
        counts = torch.bincount(self.data.train.y, minlength=self.k)
        self.loss = build_loss(cfg["method"]["name"], self.k, self.model.feature_dim, class_counts=counts,
                               model_builder=self._twin, num_samples=len(self.data.train.y),
                               **cfg["method"]["options"]).to(self.device)
        self.mode = tc["mode"]
        self.amp = cfg["amp"]
        self.mean = torch.tensor(info.mean, device=self.device)
        self.std = torch.tensor(info.std, device=self.device)
        self.kind = info.kind
        workers = tc["num_workers"]
        train_src, val_src = (Source(self.data.train, self.device, workers), Source(self.data.val, self.device, workers))
        if self.mode == "linear_probe":
            freeze_backbone(self.model)
            self.net = HeadOnly(self.model)
            train_src, val_src = self._cached_features(train_src), self._cached_features(val_src)
        else:
            self.net = self.model
        self.train_src, self.val_src = train_src, val_src
        if tc["compile"]:
            self.net = CompiledOrEager(self.net, self.log)
        self.eval_net = self.net  # evaluation runs per rank, outside DDP
        if self.world.size > 1:
            ids = [self.device.index] if self.device.type == "cuda" else None
            self.net = nn.parallel.DistributedDataParallel(self.net, device_ids=ids)
        params = [p for p in list(self.model.parameters()) + list(self.loss.parameters()) if p.requires_grad]
        if tc["optimizer"] == "sgd":
            self.opt = torch.optim.SGD(params, lr=tc["lr"], momentum=tc["momentum"], nesterov=tc["nesterov"],
                                       weight_decay=tc["weight_decay"], **optimizer_options(torch.optim.SGD, self.device))
        else:
            self.opt = torch.optim.AdamW(params, lr=tc["lr"], weight_decay=tc["weight_decay"],
                                         **optimizer_options(torch.optim.AdamW, self.device))
        self.train_index = epoch_index(tc, self.data.train.y)  # each sample once, or up-sampled (JTT)
        n = len(self.train_index)
        self.batch = min(tc["batch_size"], n)
        self.steps_per_epoch = n // self.batch  # the last partial batch is dropped (BatchNorm needs > 1 sample)
        if self.batch % self.world.size:
            raise ConfigError(f"config key 'train.batch_size' ({self.batch}) must be divisible by the number "
                              f"of processes ({self.world.size})")
        self.local_batch = self.batch // self.world.size  # each rank's share of the global batch
        self.total_steps = self.steps_per_epoch * tc["epochs"]
        self.warmup_steps = int(round(tc["warmup_epochs"] * self.steps_per_epoch))
        self.aug_gen = torch.Generator(device=self.device)  # augmentation draws, reseeded every epoch
        self.step = GraphStep(self, self.log) if tc["cuda_graph"] else TrainStep(self)  # mr2.engine.step

    # ---------------------------------------------------------------- data transforms
    def normalise(self, x: torch.Tensor) -> torch.Tensor:
        x = aug.normalize(x, self.mean, self.std)
        return to_channels_last(x) if self.channels_last else x

    def eval_transform(self, x: torch.Tensor) -> torch.Tensor:
        return x.float() if self.mode == "linear_probe" else self.normalise(x)

    def train_transform(self, x: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
        tc = self.cfg["train"]
        if self.mode == "linear_probe" or tc["augment"] == "none":
            return self.eval_transform(x)
        if self.kind == "image":
            if tc["auto_augment"]:
                x = aug.auto_augment(x, gen)
            x = aug.random_crop_flip(x, tc["crop_padding"], gen, flip=tc["flip"])
        elif self.kind == "signal":
            x = aug.random_shift(x, tc["shift"], gen)  # vectors (the planted set) are not augmented
        return self.normalise(x)

    def _cached_features(self, source: Source) -> Source:
        """Backbone features of a split, extracted once (frozen backbone, no augmentation)."""
        backbone = self.model.backbone.eval()
        out = []
        with torch.no_grad():
            for xb, _ in source.batches(torch.arange(len(source)), self.cfg["train"]["eval_batch_size"]):
                with autocast_for(self.device, self.amp):
                    out.append(backbone(self.normalise(xb)).float())
        feats = torch.cat(out) if out else torch.empty(0, self.model.feature_dim, device=self.device)
        return in_memory(feats, source.y, self.device)

    def _twin(self) -> nn.Module:
        """A second network of the run's model config, initialised independently, taking the
        inputs of ``self.net`` (for losses that own one: LfF's biased model)."""
        twin = build_from_config(self.cfg["model"], self.k, self.data.info.input_shape)
        return as_trained_net(twin.to(self.device), self.cfg["train"]["mode"])

    def loss_extras(self, xin: torch.Tensor, idx: torch.Tensor | None, views: int) -> dict[str, torch.Tensor]:
        """The keyword arguments the loss asks for (``needs_inputs``/``needs_indices``): the batch
        as the model saw it and each sample's index in the training split (``idx``, per view)."""
        extras = {}
        if self.loss.needs_inputs:
            extras["inputs"] = xin
        if self.loss.needs_indices:
            extras["indices"] = idx.repeat(views)
        return extras

    # ---------------------------------------------------------------- state
    def state(self) -> dict[str, Any]:
        return {"model": self.model.state_dict(), "loss": self.loss.state_dict()}

    def load_state(self, state: dict[str, Any]) -> None:
        self.model.load_state_dict(state["model"])
        self.loss.load_state_dict(state["loss"])

    # ---------------------------------------------------------------- one epoch
    def train_epoch(self, epoch: int) -> dict[str, float]:
        tc = self.cfg["train"]
        seed = epoch_seed(self.cfg["seed"], epoch)
        torch.manual_seed(seed + self.world.rank)  # dropout and any other global-RNG draws
        order_gen = torch.Generator().manual_seed(seed)  # the same order on every rank
        self.aug_gen.manual_seed(seed + self.world.rank)
        self.net.train()
        if self.mode == "linear_probe":
            self.model.backbone.eval()
        self.loss.train()
        self.loss.on_epoch_start(epoch)
        perm = distributed.shard(self.train_index[torch.randperm(len(self.train_index), generator=order_gen)],
                                 self.batch, self.world)
        order = perm.to(self.device) if self.loss.needs_indices else None  # each batch's indices, sliced below
        self.step.start_epoch()
        batches = epoch_progress(self.train_src.batches(perm, self.local_batch, drop_last=True), self.steps_per_epoch,
                                 f"epoch {epoch + 1}/{tc['epochs']}", self.world.is_main)
        for step, (xb, yb) in enumerate(batches):
            lr = lr_at(epoch * self.steps_per_epoch + step, self.total_steps, self.warmup_steps, tc["lr"], tc["min_lr"])
            idx = None if order is None else order[step * self.local_batch:(step + 1) * self.local_batch]
            self.step(xb, yb, idx, lr)
        stats = {f"train_{k}": (v / self.steps_per_epoch).item() for k, v in self.step.sums.items()}
        stats["train_acc"] = self.step.correct.item() / (self.steps_per_epoch * self.batch)
        stats["lr"] = lr
        return stats

    def validate(self) -> dict[str, float]:
        if len(self.val_src) == 0:
            return {}
        logits, _ = predict(self.eval_net, self.val_src, self.cfg["train"]["eval_batch_size"], self.eval_transform,
                            self.device, self.amp)
        y = self.val_src.y
        acc = per_class_accuracy(logits.argmax(1), y, self.k)
        seen = ~acc.isnan()
        return {"val_acc": (logits.argmax(1) == y).float().mean().item(),
                "val_worst_class_acc": acc[seen].min().item()}


def empty_val_cause(data_cfg: dict[str, Any], train_y: torch.Tensor) -> str:
    """Why a prepared file has no validation sample: ``val_fraction`` 0, or a fraction of classes so
    small (after ``train_cap``) that it rounds to none (``stratified_split`` keeps one training
    sample per class)."""
    fraction, cap = data_cfg.get("val_fraction"), data_cfg.get("train_cap")
    if not fraction:
        return "data.val_fraction is 0"
    largest = int(torch.bincount(train_y).max()) if len(train_y) else 0
    capped = f" (data.train_cap {cap})" if cap is not None else ""
    return (f"data.val_fraction {fraction} of at most {largest} training samples per class{capped} rounds to no "
            "validation sample in any class")




def check_finite(runner: Runner, epoch: int, stats: dict[str, float], last_good: int | None) -> None:
    """Raise ``NonFiniteLossError`` when epoch ``epoch`` left a NaN or ±inf in its numbers or in a
    floating-point parameter or buffer of the model or the loss; the message names the last good
    checkpoint (epoch ``last_good``) only when this run has one."""
    bad = [name for name, value in stats.items() if not math.isfinite(value)] + non_finite(runner)
    if not bad:
        return
    shown = ", ".join(bad[:4]) + (f" (+{len(bad) - 4} more)" if len(bad) > 4 else "")
    kept = (f"the last good checkpoint, {runner.out / CHECKPOINT} (epoch {last_good}), is kept" if last_good
            else "no checkpoint was written (no epoch of this run finished finite)")
    raise NonFiniteLossError(f"training diverged in epoch {epoch + 1}: non-finite {shown}; {kept}. "
                             "Lower train.lr or check the data and method options.")






















ON_DIVERGENCE = ("stop", "record")  # what a diverged run does: fail (exit 1), or record the failure (a tuning trial)


def write_run(runner: Runner, cfg: dict[str, Any], rows: list[dict[str, Any]], epoch: int, out: Path,
              **extra: Any) -> None:
    """Write a run's three outputs (on the main process of a data-parallel run): model.pt (the config,
    the model's and the loss's state, the epoch they are of, the data's info and checksum, the loss's
    final per-class tensors, and ``extra``), config.yaml and epochs.csv; then remove its checkpoint."""
    if not runner.world.is_main:
        return
    summary = {name: v.detach().float().cpu() for name, v in runner.loss.class_summary().items()}
    save_torch({"config": cfg, "state": runner.state(), "epoch": epoch, "info": runner.data.info.to_dict(),
                "class_summary": summary, "data_checksum": runner.data.checksum, **extra}, out / "model.pt")
    # the resolved config, and what the bytes depend on beyond it (run_conditions), where the tables read them
    save_yaml({**cfg, "conditions": extra["conditions"]} if "conditions" in extra else cfg, out / "config.yaml")
    save_csv(pd.DataFrame(rows, columns=["epoch", "class", "name", "value"]), out / "epochs.csv")
    (out / CHECKPOINT).unlink(missing_ok=True)


def record_divergence(runner: Runner, cfg: dict[str, Any], rows: list[dict[str, Any]], epoch: int, reason: str,
                      out: Path) -> None:
    """Write a diverged run's outputs as a finished, failed run: its config with ``diverged: {epoch,
    reason}``, the epochs it finished (epochs.csv) and a model.pt that holds the same record and the
    (non-finite) state, so a tuning trial whose options made training diverge is a result of the search
    (``mr2.engine.evaluate`` scores it 0 on validation and refuses to test it) and not a failed job."""
    write_run(runner, {**cfg, "diverged": {"epoch": epoch, "reason": reason}}, rows, epoch, out, diverged=epoch)


def train(cfg: dict[str, Any], data_path: str | Path, out_dir: str | Path, log=print, force: bool = False,
          on_divergence: str = "stop") -> dict[str, Any]:
    """Train one run (see module docstring) into ``out_dir``; a folder holding a finished run only
    with ``force`` (``check_run_folder``). Returns the last epoch's run-level numbers. A run that
    diverges raises ``NonFiniteLossError`` (``on_divergence="stop"``), or with ``"record"`` ends as a
    finished, failed run (``record_divergence``): what a tuning trial does, so that one diverging draw
    of the search does not stop the search."""
    if on_divergence not in ON_DIVERGENCE:
        raise ValueError(f"on_divergence must be one of {ON_DIVERGENCE}, got {on_divergence!r}")
    # every option of the method and of the model written out: the saved config says what the run used
    cfg = {**cfg, "method": {**cfg["method"], "options": resolve_options(cfg["method"]["name"], cfg["method"]["options"])},
           "model": {**cfg["model"], "options": resolve_model_options(cfg["model"]["name"], cfg["model"]["options"])}}
    out = Path(out_dir)
    check_run_folder(out, force)
    runner = Runner(cfg, data_path, out, log)
    log = runner.log  # silent on every rank but 0
    if force and runner.world.is_main:
        forget_finished_run(out)
    if runner.world.is_main:
        remove_stray_temporaries(*(out / name for name in OUTPUTS))  # left by a killed earlier run
    tc = cfg["train"]
    ckpt_path = out / CHECKPOINT
    if runner.device.type == "cpu":
        log(f"[train] {kernels_line(torch.backends.cpu.get_cpu_capability(), os.environ)}")
    rows: list[dict[str, Any]] = []
    timings: list[dict[str, Any]] = []
    start, best, last_good = 0, None, None
    if ckpt_path.exists():
        ckpt = require_keys(load_torch(ckpt_path, map_location=runner.device), CHECKPOINT_KEYS, ckpt_path,
                            "checkpoint", "delete it to start afresh")
        if resume_key(ckpt["config"]) == resume_key(cfg):
            check_resume(ckpt, runner, ckpt_path)
            start, rows, best = resume_from(ckpt, runner, ckpt_path)
            last_good = start
            timings = earlier_timings(out / TIMINGS, start)
            log(f"[train] resuming {out} after epoch {start}")
        else:
            log(f"[train] {ckpt_path} belongs to another config; starting afresh")
    numbers: dict[str, float] = {}
    for epoch in range(start, tc["epochs"]):
        t0 = time.perf_counter()
        numbers = runner.train_epoch(epoch)
        try:
            check_finite(runner, epoch, numbers, last_good)
        except NonFiniteLossError as exc:
            if on_divergence == "stop":
                raise
            log(f"[train] {out}: diverged in epoch {epoch + 1}, recorded as a failed run ({exc})")
            record_divergence(runner, cfg, rows, epoch + 1, str(exc).split(";")[0], out)
            distributed.finish(runner.world)
            return numbers
        numbers.update(runner.validate())
        rows += [{"epoch": epoch + 1, "class": None, "name": k, "value": v} for k, v in numbers.items()]
        for name, values in runner.loss.class_summary().items():
            rows += [{"epoch": epoch + 1, "class": c, "name": name, "value": v}
                     for c, v in enumerate(values.detach().float().cpu().tolist())]
        if tc["select"] == "best_val" and (best is None or numbers.get("val_acc", 0.0) > best["val_acc"]):
            best = {"val_acc": numbers.get("val_acc", 0.0), "epoch": epoch + 1,
                    "state": {k: {n: t.detach().clone() for n, t in v.items()} for k, v in runner.state().items()}}
        if runner.world.is_main:
            save_torch({"config": cfg, "epoch": epoch + 1, "state": runner.state(), "optimizer": runner.opt.state_dict(),
                        "rows": rows, "best": best, "data_checksum": runner.data.checksum,
                        "conditions": run_conditions(runner)}, ckpt_path)
            timings.append({"epoch": epoch + 1, "seconds": time.perf_counter() - t0})
            save_timings(timings, out / TIMINGS)
        last_good = epoch + 1
        shown = " ".join(f"{k}={v:.4g}" for k, v in numbers.items())
        shown += f" seconds={time.perf_counter() - t0:.4g}"
        log(f"[train] {cfg['data']['name']}/{cfg['method']['name']} seed {cfg['seed']} "
            f"epoch {epoch + 1}/{tc['epochs']}: {shown}")
        sys.stdout.flush()
    final_epoch = tc["epochs"]
    if tc["select"] == "best_val" and best is not None:
        runner.load_state(best["state"])
        final_epoch = best["epoch"]
    # one writer in a data-parallel run
    write_run(runner, cfg, rows, final_epoch, out, conditions=run_conditions(runner))
    distributed.finish(runner.world)
    return numbers
