"""One training step, run eagerly or replayed from one whole-step CUDA graph (``train.cuda_graph``).

``TrainStep.run`` is the step of ``python -m mr2 train``: augment the batch on its device (from
the run's augmentation generator), forward (bf16 autocast where the run asks for it), the loss,
backward, gradient clipping, the optimiser step, and add the loss, its parts and the number of
correct predictions to the epoch's sums, which stay in device tensors that the engine reads
once per epoch. The same function runs in both modes:

- eager (``TrainStep``, the default): each batch as it comes, the learning rate a Python float;
- graph (``GraphStep``, ``train.cuda_graph: true``, CUDA only): each batch is copied into static
  buffers (its uint8 images, labels and, for losses that ask, training-split indices) and the
  learning rate is a float32 device tensor filled before each step. The first ``WARMUP_STEPS``
  steps of the run run ``TrainStep.run`` on those buffers on a side stream, as torch's recipe for
  whole-network capture asks (lazy state, such as momentum buffers and library workspaces, is
  made there, outside the graph). They are real steps on real batches: warming up changes
  nothing an eager run would not. The next step is captured on the same stream into one
  ``torch.cuda.CUDAGraph`` (capturing runs nothing) and replayed; every later step is a replay.
  The augmentation generator is registered with the graph, so replay k draws what eager step k
  would draw (CUDA's Philox offsets advance by the same amounts). When capturing fails, the
  reason is logged once and the run goes on eagerly from that step on.

``cuda_graph_problem`` says, before any training, why a run cannot use the graph: a device
other than CUDA, several processes (torchrun), ``train.compile``, AutoAugment (host-side
grouping), or a loss whose ``capturable`` is False (it reads values on the host, changes shape
with the data, or depends on Python state that changes between epochs).
"""

from __future__ import annotations

import contextlib
from typing import Any, Callable

import torch
from torch import nn

from . import distributed
from .accel import failure_summary
from .config import ConfigError
from .inference import autocast_for

WARMUP_STEPS = 3  # eager steps on the side stream before the capture (torch's whole-network recipe)


def set_lr(opt: torch.optim.Optimizer, lr: float | torch.Tensor) -> None:
    """The learning rate of every parameter group: a float (eager) or one device tensor (graph)."""
    for group in opt.param_groups:
        group["lr"] = lr


class TrainStep:
    """The training step of a ``Runner`` (module docstring) and the epoch's sums it adds to."""

    def __init__(self, runner: Any) -> None:
        self.r = runner
        self.sums: dict[str, torch.Tensor] = {}  # the loss and its parts, summed over the epoch's steps
        self.correct = torch.zeros((), device=runner.device)  # correct predictions of the epoch

    def start_epoch(self) -> None:
        """Zero the sums in place (a captured graph adds into these very tensors)."""
        for t in (*self.sums.values(), self.correct):
            t.zero_()

    def __call__(self, xb: torch.Tensor, yb: torch.Tensor, idx: torch.Tensor | None, lr: float) -> None:
        set_lr(self.r.opt, lr)
        self.run(xb, yb, idx)

    def run(self, xb: torch.Tensor, yb: torch.Tensor, idx: torch.Tensor | None) -> None:
        """One step on a batch: uint8 images ``xb``, labels ``yb``, training-split indices ``idx``
        (on the device; None unless the loss needs them)."""
        r = self.r
        views = r.loss.n_views
        xin = torch.cat([r.train_transform(xb, r.aug_gen) for _ in range(views)])
        yin = yb.repeat(views)
        with autocast_for(r.device, r.amp):
            logits, feats = r.net(xin)
        logits, feats = logits.float(), feats.float()  # the loss (and its own layers, e.g. SupCon's head) in fp32
        extras = r.loss_extras(xin, idx, views)
        if r.world.size > 1:  # every rank evaluates the loss on the global batch (mr2.engine.distributed)
            logits, feats = (distributed.gather_batch(t, views) for t in (logits, feats))
            extras = {k: distributed.gather_batch(v, views) for k, v in extras.items()}
            yb = distributed.gather_batch(yb)
            yin = yb.repeat(views)
        out = r.loss(logits, feats, yin, **extras)
        r.opt.zero_grad(set_to_none=True)
        out.total.backward()
        distributed.average_gradients(r.loss.parameters())
        if r.cfg["train"]["grad_clip"]:
            nn.utils.clip_grad_norm_(r.opt.param_groups[0]["params"], r.cfg["train"]["grad_clip"])
        r.opt.step()
        with torch.no_grad():
            for name, value in {"loss": out.total.detach(), **out.parts}.items():
                if name not in self.sums:
                    self.sums[name] = torch.zeros((), device=r.device)
                self.sums[name].add_(value.float())
            self.correct.add_((logits[: len(yb)].argmax(1) == yb).sum())


def cuda_graph_problem(cfg: dict[str, Any], device: torch.device, processes: int, loss: nn.Module) -> str | None:
    """Why ``train.cuda_graph`` cannot work for this run, as a one-line message naming the key; None if it can."""
    key, tc = "config key 'train.cuda_graph'", cfg["train"]
    if device.type != "cuda":
        return f"{key} needs a CUDA device; this run is on {device} (set train.cuda_graph=false)"
    if processes > 1:
        return f"{key} runs in one process; this run has {processes} (torchrun): set train.cuda_graph=false"
    if tc["compile"]:
        return f"{key} and 'train.compile' cannot be combined (the graph already removes the kernel launches' cost); set one to false"
    if tc["auto_augment"]:
        return f"{key} cannot capture 'train.auto_augment' (it groups images by operation on the host); set one to false"
    if not loss.capturable:
        return (f"{key}: the loss of method {cfg['method']['name']!r} cannot be captured (it reads values on the host, "
                f"changes shape with the data or switches behaviour between epochs); set train.cuda_graph=false")
    return None


@contextlib.contextmanager
def on_stream(stream: torch.cuda.Stream | None):
    """Run the block on ``stream`` after the current stream's work and make the current stream wait
    for it (torch's warm-up recipe); on the CPU (``stream`` None) just run it."""
    if stream is None:
        yield
        return
    current = torch.cuda.current_stream(stream.device)
    stream.wait_stream(current)
    with torch.cuda.stream(stream):
        yield
    current.wait_stream(stream)


def capture(fn: Callable[[], None], stream: torch.cuda.Stream, generators: list[torch.Generator],
            opt: torch.optim.Optimizer) -> Callable[[], None]:
    """Record the CUDA work of ``fn`` in one graph on ``stream`` (running nothing); return its replay.

    ``generators`` are registered with the graph (the default CUDA generator always is), so each
    replay draws fresh numbers. Optimisers with a ``capturable`` flag (AdamW) have it set while
    capturing, as torch asks; the fused steps the engine uses on CUDA keep their state on the device.
    The capture restricts CUDA calls of this thread only (``capture_error_mode="thread_local"``):
    a DataLoader's pin-memory thread (file-backed datasets) may allocate pinned memory meanwhile,
    which under torch's default ("global") would break the capture and poison that thread."""
    graph = torch.cuda.CUDAGraph()
    for gen in generators:
        graph.register_generator_state(gen)
    groups = [g for g in opt.param_groups if "capturable" in g]
    before = [g["capturable"] for g in groups]
    try:
        for g in groups:
            g["capturable"] = True
        with torch.cuda.graph(graph, stream=stream, capture_error_mode="thread_local"):
            fn()
    finally:
        for g, flag in zip(groups, before):
            g["capturable"] = flag
    return graph.replay


class GraphStep(TrainStep):
    """``TrainStep`` captured in a CUDA graph and replayed, with static input buffers and a device
    learning rate (module docstring); refused with a ``ConfigError`` where it cannot work."""

    def __init__(self, runner: Any, log: Callable[[str], Any] = print) -> None:
        problem = cuda_graph_problem(runner.cfg, runner.device, runner.world.size, runner.loss)
        if problem:
            raise ConfigError(problem)
        super().__init__(runner)
        self.log = log
        self.lr = torch.zeros((), device=runner.device)  # float32: what the fused optimisers read
        self.stream = torch.cuda.Stream(runner.device) if runner.device.type == "cuda" else None
        self.buffers: list[torch.Tensor | None] | None = None  # images, labels, indices
        self.warmed = 0
        self.replay: Callable[[], None] | None = None
        self.failure: str | None = None

    def load(self, *batch: torch.Tensor | None) -> list[torch.Tensor | None]:
        """Copy a batch into the static buffers (made like the first batch); return the buffers."""
        if self.buffers is None:
            self.buffers = [None if t is None else torch.empty_like(t) for t in batch]
        for buf, t in zip(self.buffers, batch):
            if buf is not None:
                if t.shape != buf.shape:
                    raise ValueError(f"train.cuda_graph: a batch of shape {tuple(t.shape)} after batches of "
                                     f"{tuple(buf.shape)}; a captured step takes one shape")
                buf.copy_(t)
        return self.buffers

    def __call__(self, xb: torch.Tensor, yb: torch.Tensor, idx: torch.Tensor | None, lr: float) -> None:
        if self.failure is not None:
            return super().__call__(xb, yb, idx, lr)
        x, y, i = self.load(xb, yb, idx)
        self.lr.fill_(lr)
        if self.replay is None:
            set_lr(self.r.opt, self.lr)
            if self.warmed < WARMUP_STEPS:
                with on_stream(self.stream):
                    self.run(x, y, i)
                self.warmed += 1
                return None
            try:
                self.replay = capture(lambda: self.run(x, y, i), self.stream, [self.r.aug_gen], self.r.opt)
            except Exception as exc:  # noqa: BLE001 - reported, then run eagerly
                self.failure = failure_summary(exc)
                self.log(f"[train] CUDA graph capture failed ({self.failure}); running the step eagerly. "
                         f"Set train.cuda_graph=false to skip capturing.")
                return super().__call__(xb, yb, idx, lr)
        self.replay()
        return None
