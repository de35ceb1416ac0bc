"""Data-parallel training: one process per device, started by ``torchrun``.

torchrun sets ``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``, ``MASTER_ADDR`` and ``MASTER_PORT``;
``init_from_env`` reads them and joins the process group (NCCL on CUDA, gloo on CPU). Without
them (a plain ``python -m mr2 train``) the world is one process and every function here is
the identity.

How a step of W processes equals one process seeing the whole batch B (b = B/W per rank):

- Order: every rank draws the same seeded permutation; global batch t is perm[tB:(t+1)B] and
  rank r takes its r-th contiguous slice of b samples (``shard``).
- Loss: logits, features and labels are gathered (``gather_batch``) so that every rank
  evaluates the loss on the global batch, in the single-process order: the same value, the
  same MR² class statistics (so the same γ and s̄), the same same-class pairs of the
  representation term, the same state of every stateful loss (DRO weights, centres, ...).
- Gradients: the gather's backward sums every rank's gradient with respect to the gathered
  batch (an all-reduce) and keeps the rank's own slice, W·∂L/∂φ_r; DDP averages parameter
  gradients over the W ranks, so every parameter receives ∂L/∂θ of the global loss.
  Parameters the loss owns are averaged by ``average_gradients``.
- Not equal: BatchNorm normalises over the b samples of its rank (as in any DDP run), unless
  ``train.sync_bn`` converts it to ``nn.SyncBatchNorm`` (CUDA only; ``sync_batch_norm``), and
  each rank augments its images with its own random stream.

``all_reduce_sum`` is the summing all-reduce that ``ClassStats(reduce=...)`` and
``build_loss(..., reduce=...)`` accept, for a loop that evaluates MR² per rank instead of
gathering the batch (statistics global, representation pairs per rank).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Iterable

import torch
import torch.distributed as dist

from .config import ConfigError

TORCHRUN_ENV = ("RANK", "WORLD_SIZE", "LOCAL_RANK")


@dataclass(frozen=True)
class World:
    """This process's place among the data-parallel processes of one run."""

    rank: int = 0
    size: int = 1
    local_rank: int = 0
    owns_group: bool = False  # True when init_from_env created the process group

    @property
    def is_main(self) -> bool:
        """Rank 0 logs and writes every output."""
        return self.rank == 0


def launched_by_torchrun() -> bool:
    """True when torchrun's environment variables are set."""
    return all(k in os.environ for k in TORCHRUN_ENV)


def init_from_env(device_type: str) -> World:
    """Join torchrun's process group (NCCL for CUDA, gloo otherwise); a world of one without torchrun.

    A process group that already exists (e.g. made by a test) is used as it is.
    """
    if dist.is_available() and dist.is_initialized():
        return World(dist.get_rank(), dist.get_world_size(), int(os.environ.get("LOCAL_RANK", dist.get_rank())))
    if not launched_by_torchrun() or int(os.environ["WORLD_SIZE"]) == 1:
        return World()
    backend = "nccl" if device_type == "cuda" else "gloo"
    dist.init_process_group(backend=backend)
    return World(dist.get_rank(), dist.get_world_size(), int(os.environ["LOCAL_RANK"]), owns_group=True)


def device_for(device: torch.device, world: World) -> torch.device:
    """The device of this rank: ``cuda:LOCAL_RANK`` for a CUDA run of several processes (a
    ``ConfigError`` for a device naming one GPU: every rank would take that one)."""
    if device.type != "cuda" or world.size == 1:
        return device
    if device.index is not None:
        raise ConfigError(f"config key 'device' is {device}, but this run has {world.size} processes (torchrun), "
                          "each on the GPU of its local rank: set device=cuda (choose the GPUs with CUDA_VISIBLE_DEVICES)")
    torch.cuda.set_device(world.local_rank)
    return torch.device("cuda", world.local_rank)


def sync_batch_norm(model: torch.nn.Module, world: World, device: torch.device, enabled: bool) -> torch.nn.Module:
    """``train.sync_bn``: BatchNorm layers that normalise over the global batch of all ranks.

    ``nn.SyncBatchNorm`` has the same parameters and buffers as BatchNorm (checkpoints load
    either way) and computes batch statistics across the process group in training mode. A
    world of one, or ``enabled=False``, leaves the model unchanged. torch implements it for
    GPUs only, so several CPU processes with ``sync_bn`` are an error, raised before training.
    """
    if not enabled or world.size == 1:
        return model
    if device.type != "cuda":
        raise ConfigError(f"config key 'train.sync_bn': torch's SyncBatchNorm runs on CUDA devices only; "
                          f"this run has {world.size} {device.type} processes (set train.sync_bn=false)")
    return torch.nn.SyncBatchNorm.convert_sync_batchnorm(model)


def finish(world: World) -> None:
    """Leave the process group if this module created it."""
    if world.owns_group and dist.is_initialized():
        dist.destroy_process_group()


def _active() -> bool:
    return dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1


def all_reduce_sum(x: torch.Tensor) -> torch.Tensor:
    """Σ over ranks of ``x``, on every rank (a new tensor; ``x`` itself when the world is one process)."""
    if not _active():
        return x
    out = x.clone()
    dist.all_reduce(out, op=dist.ReduceOp.SUM)
    return out


def shard(order: torch.Tensor, batch_size: int, world: World) -> torch.Tensor:
    """The indices of ``order`` this rank trains on: the r-th of W equal slices of every
    global batch of ``batch_size`` (the last partial global batch is dropped)."""
    if world.size == 1:
        return order
    if batch_size % world.size:
        raise ValueError(f"config key 'train.batch_size' ({batch_size}) must be divisible by the number of processes ({world.size})")
    steps = len(order) // batch_size
    return order[: steps * batch_size].view(steps, world.size, batch_size // world.size)[:, world.rank].reshape(-1)


class _Gather(torch.autograd.Function):
    """All-gather along dim 0; backward: all-reduce the gradient, keep this rank's slice."""

    @staticmethod
    def forward(ctx, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        parts = [torch.empty_like(x) for _ in range(dist.get_world_size())]
        dist.all_gather(parts, x)
        ctx.rank, ctx.rows = dist.get_rank(), x.shape[0]
        return torch.cat(parts)

    @staticmethod
    def backward(ctx, grad: torch.Tensor) -> torch.Tensor:
        grad = grad.contiguous().clone()
        dist.all_reduce(grad, op=dist.ReduceOp.SUM)
        return grad[ctx.rank * ctx.rows : (ctx.rank + 1) * ctx.rows]


def gather_batch(x: torch.Tensor, views: int = 1) -> torch.Tensor:
    """The global batch of ``x`` on every rank, differentiable (see module docstring).

    ``x`` holds ``views`` blocks of this rank's b samples ([view 1; view 2; ...]); the result
    holds ``views`` blocks of the global batch in rank order, as one process would see them.
    Labels and other tensors without gradients can be gathered the same way.
    """
    if not _active():
        return x
    w = dist.get_world_size()
    g = _Gather.apply(x) if x.requires_grad else _gather_plain(x)
    b = x.shape[0] // views
    return g.reshape(w, views, b, *x.shape[1:]).transpose(0, 1).reshape(w * x.shape[0], *x.shape[1:])


def _gather_plain(x: torch.Tensor) -> torch.Tensor:
    x = x.contiguous()
    parts = [torch.empty_like(x) for _ in range(dist.get_world_size())]
    dist.all_gather(parts, x)
    return torch.cat(parts)


def average_gradients(params: Iterable[torch.Tensor]) -> None:
    """Average the gradients of ``params`` over ranks (for parameters outside DDP's module)."""
    if not _active():
        return
    grads = [p.grad for p in params if p.grad is not None]
    if not grads:
        return
    flat = torch.cat([g.reshape(-1) for g in grads])
    dist.all_reduce(flat, op=dist.ReduceOp.SUM)
    flat /= dist.get_world_size()
    offset = 0
    for g in grads:
        g.copy_(flat[offset : offset + g.numel()].view_as(g))
        offset += g.numel()


def launcher(nproc: int) -> str:
    """The command that runs the CLI in ``nproc`` processes: ``python -m mr2`` for one,
    ``python -m torch.distributed.run --standalone --nproc_per_node=N -m mr2`` (torchrun) for
    more; ``--standalone`` picks a free local port, so several runs can share a node."""
    if nproc <= 1:
        return "python -m mr2"
    return f"python -m torch.distributed.run --standalone --nproc_per_node={int(nproc)} -m mr2"
