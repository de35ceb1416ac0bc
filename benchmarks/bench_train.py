"""Benchmark: training throughput of ResNet-32 on CIFAR-100-shaped data (figures, not a test).

Every case trains through the engine's own ``Runner`` (model, loss, optimiser, learning-rate
schedule, augmentation, per-epoch sums), so the figures are those of ``python -m mr2 train``.
Cases, each reported as training images/s, images per CPU-second of this process and its
children (DataLoader workers), and the time of a 50,000-image epoch (CIFAR-100's training set;
extrapolated from the images timed when fewer are used):

- data path: ``device`` (uint8 tensors on the device, batched crop+flip there, as the engine
  does) against ``dataloader`` (the conventional path: per-image PIL RandomCrop(32, padding=4)
  + RandomHorizontalFlip + ToTensor + Normalize in DataLoader workers, pinned memory);
- method: ``erm`` against ``mr2``;
- precision: ``fp32`` against ``bf16`` (the engine autocasts to bf16 on CUDA only; on CPU the
  bf16 cases are skipped);
- how the step runs: ``eager``, ``compile`` (``torch.compile``; the first, compiling epoch is
  the warm-up column) or ``graph`` (``train.cuda_graph``: the whole step replayed from one CUDA
  graph; CUDA only; the warm-up epoch holds the capture).

``--concurrent N [N ...]`` measures something else: N ``python -m mr2 train`` processes started
together on one device (MR², bf16 and ``train.cuda_graph`` on CUDA; fp32 eager on the CPU), each
on a prepared copy of the data, ``1 + --epochs`` epochs each. It reports the images/s of all
processes together in their epochs after the first (each process's images per epoch over the
median time of those epochs, summed), the same including start-up (all images over the wall
time), the time of a 50,000-image epoch of one run while N run, t_N = N·50,000 / (img/s
together), and from it the time of the paper's table on one GPU, 12 runs (4 methods × 3 seeds)
× 200 epochs: ⌈12/N⌉ · 200 · t_N (the runs in waves of N).

Data: a prepared CIFAR-100 file when ``--prepared`` names one, else synthetic uint8 tensors of
CIFAR-100's shape (N×3×32×32, 100 classes; the speed does not depend on the pixel values).
The machine's load average is printed: on a shared machine other processes cut a multi-threaded
run's wall-clock speed, so compare images per CPU-second too.

Usage: python benchmarks/bench_train.py [--device auto] [--threads 2] [--images 50000]
       [--batch 128] [--cases all] [--prepared results/data/cifar100/<hash>.pt] [--model resnet32]
       python benchmarks/bench_train.py --concurrent 1 12 [--epochs 2] [--threads 1]
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd
import torch

import mr2.engine.data.cache as data_cache
import mr2.engine.train as engine
from mr2.common.io import save_yaml
from mr2.engine import config as run_config
from mr2.engine.data import DatasetInfo, PreparedData, TensorSplit, load_prepared, prepare_dataset

REPO = Path(__file__).resolve().parents[1]
FULL_EPOCH = 50_000
TABLE_RUNS, TABLE_EPOCHS = 12, 200  # the paper's CIFAR-100 table: 4 methods × 3 seeds, 200 epochs each
CIFAR_MEAN, CIFAR_STD = (0.507, 0.487, 0.441), (0.267, 0.256, 0.276)


def synthetic_cifar100(n: int) -> PreparedData:
    """uint8 images of CIFAR-100's shape, balanced labels over 100 classes, empty val/test."""
    g = torch.Generator().manual_seed(0)
    x = torch.randint(0, 256, (n, 3, 32, 32), dtype=torch.uint8, generator=g)
    y = torch.arange(n) % 100
    info = DatasetInfo("cifar100", 100, [f"c{k}" for k in range(100)], (3, 32, 32), "image", CIFAR_MEAN, CIFAR_STD)
    empty = TensorSplit(x[:0], y[:0])
    return PreparedData(TensorSplit(x, y), empty, empty, info, {"name": "cifar100"}, "synthetic")


def run_config_for(method: str, device: str, amp: str, run: str, batch: int, model: str = "resnet32") -> dict:
    update = {
        "data": {"name": "cifar100"}, "model": {"name": model}, "method": {"name": method},
        "device": device, "amp": amp,
        "train": {"epochs": 200, "batch_size": batch, "lr": 0.1, "warmup_epochs": 1, "compile": run == "compile",
                  "cuda_graph": run == "graph", "num_workers": 0},
    }
    return run_config.deep_merge(run_config.DEFAULTS, update)


def cpu_seconds() -> float:
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


class PilDataset(torch.utils.data.Dataset):
    """The conventional CIFAR pipeline: HWC uint8 arrays, PIL image per sample, torchvision transforms."""

    def __init__(self, x: torch.Tensor, y: torch.Tensor) -> None:
        from torchvision import transforms as T

        self.x, self.y = x.permute(0, 2, 3, 1).numpy(), y.numpy()
        self.tf = T.Compose([T.RandomCrop(32, padding=4), T.RandomHorizontalFlip(), T.ToTensor(),
                             T.Normalize(CIFAR_MEAN, CIFAR_STD)])

    def __len__(self) -> int:
        return len(self.y)

    def __getitem__(self, i: int):
        from PIL import Image

        return self.tf(Image.fromarray(self.x[i])), int(self.y[i])


def dataloader_epoch(runner: engine.Runner, dataset: PilDataset, workers: int, epoch: int) -> None:
    """One epoch of the same model/loss/optimiser step, fed by a DataLoader with per-image transforms."""
    dev = runner.device
    loader = torch.utils.data.DataLoader(dataset, batch_size=runner.batch, shuffle=True, drop_last=True,
                                         num_workers=workers, pin_memory=dev.type == "cuda",
                                         generator=torch.Generator().manual_seed(epoch))
    runner.net.train()
    runner.loss.train()
    sums = torch.zeros((), device=dev)
    for xb, yb in loader:
        xb, yb = xb.to(dev, non_blocking=True), yb.to(dev, non_blocking=True)
        if runner.channels_last:
            xb = xb.contiguous(memory_format=torch.channels_last)
        with engine.autocast_for(dev, runner.amp):
            logits, feats = runner.net(xb)
        out = runner.loss(logits, feats, yb)
        runner.opt.zero_grad(set_to_none=True)
        out.total.backward()
        runner.opt.step()
        sums += out.total.detach()
    sums.item()


def measure(path: str, method: str, amp: str, run: str, args, data: PreparedData) -> dict:
    """Warm-up epoch (compiles or captures when asked), then ``args.epochs`` timed epochs."""
    engine.load_prepared = lambda _path: data  # the Runner reads our tensors instead of a file
    cfg = run_config_for(method, args.device, amp, run, args.batch, args.model)
    cfg["threads"] = args.threads
    with tempfile.TemporaryDirectory() as out:
        runner = engine.Runner(cfg, "<in memory>", out, log=lambda m: print(f"    {m}"))
        dataset = PilDataset(data.train.x, data.train.y) if path == "dataloader" else None

        def epoch(e: int) -> None:
            if path == "dataloader":
                dataloader_epoch(runner, dataset, args.workers, e)
            else:
                runner.train_epoch(e)
            sync(runner.device)

        t0 = time.perf_counter()
        epoch(0)
        first = time.perf_counter() - t0
        w0, c0 = time.perf_counter(), cpu_seconds()
        for e in range(1, 1 + args.epochs):
            epoch(e)
        wall, cpu = time.perf_counter() - w0, cpu_seconds() - c0
    images = args.epochs * runner.steps_per_epoch * runner.batch
    # CompiledOrEager or GraphStep fell back to eager
    failed = getattr(runner.eval_net, "failure", None) or getattr(runner.step, "failure", None)
    return {"run": f"{run} failed, ran eager" if failed else run,
            "img_s": images / wall, "img_cpu_s": images / cpu, "epoch_s": FULL_EPOCH * wall / images,
            "first_s": first, "device": str(runner.device)}


def hardware(device: torch.device) -> str:
    cpu = platform.processor() or "?"
    try:
        for line in subprocess.run(["lscpu"], capture_output=True, text=True).stdout.splitlines():
            if line.startswith("Model name"):
                cpu = line.split(":", 1)[1].strip()
    except OSError:
        pass
    gpu = torch.cuda.get_device_name(device) if device.type == "cuda" else "none used"
    return (f"CPU {cpu} ({os.cpu_count()} logical CPUs), GPU {gpu}, torch {torch.__version__}, "
            f"load average {os.getloadavg()[0]:.2f}")


def cases(device: torch.device, selected: str):
    """(data path, method, amp, run) of every case that applies to ``device``; ``selected``: "all" or
    comma-separated names that a case must all match (path, method, amp, run)."""
    cuda = device.type == "cuda"
    runs = ("eager", "compile", "graph") if cuda else ("eager", "compile")
    out = []
    for amp in ("off", "bf16") if cuda else ("off",):
        for method in ("erm", "mr2"):
            out += [("device", method, amp, run) for run in runs]
        out.append(("dataloader", "mr2", amp, "eager"))
    if selected != "all":
        keep = set(selected.split(","))
        out = [c for c in out if set(c) & keep == keep]
    return out


def prepared_copy(data: PreparedData, path: Path) -> Path:
    """``data`` written as a prepared dataset file (``python -m mr2 prepare``'s format, no
    validation split), for ``python -m mr2 train``: the project's writer, fed our tensors."""
    test = data.test if len(data.test) else TensorSplit(data.train.x[:100], data.train.y[:100])
    real = data_cache.load_splits
    data_cache.load_splits = lambda *_: (data.train, test, list(data.info.class_names))
    try:
        prepare_dataset({"name": data.info.name, "val_fraction": 0.0}, path)
    finally:
        data_cache.load_splits = real
    return path


def concurrent_runs(n: int, args, prepared: Path, n_train: int, work: Path) -> dict:
    """``n`` ``python -m mr2 train`` processes started together (module docstring); their figures."""
    cuda = engine.select_device(args.device).type == "cuda"
    amp, run = ("bf16", "graph") if cuda else ("off", "eager")
    cfg = run_config_for("mr2", args.device, amp, run, args.batch, args.model)
    cfg["train"]["epochs"], cfg["threads"] = 1 + args.epochs, args.threads
    cfg["data"]["val_fraction"] = 0.0  # as prepared_copy wrote the file (training checks the match)
    save_yaml(cfg, work / f"n{n}.yaml")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    outs = [work / f"n{n}_{i}" for i in range(n)]
    logs = [open(work / f"n{n}_{i}.log", "w") for i in range(n)]
    t0 = time.perf_counter()
    procs = [subprocess.Popen([sys.executable, "-m", "mr2", "train", "--config", str(work / f"n{n}.yaml"),
                               "--data", str(prepared), "--out", str(out)], stdout=log, stderr=subprocess.STDOUT, env=env)
             for out, log in zip(outs, logs)]
    try:
        codes = [p.wait() for p in procs]
    finally:  # stopped early (a time limit's SIGTERM, Ctrl-C): the training processes stop too
        for p in procs:
            if p.poll() is None:
                p.kill()
        for log in logs:
            log.close()
    wall = time.perf_counter() - t0
    if any(codes):
        bad = codes.index(next(c for c in codes if c))
        tail = (work / f"n{n}_{bad}.log").read_text()[-2000:]
        raise SystemExit(f"concurrent run {bad} of {n} failed (exit {codes[bad]}):\n{tail}")
    per_epoch = (n_train // args.batch) * args.batch  # the last partial batch is dropped
    rates = []
    for out in outs:
        log = pd.read_csv(out / "timings.csv").query("epoch > 1")
        rates.append(per_epoch / statistics.median(log["seconds"]))
    together = sum(rates)
    epoch_s = n * FULL_EPOCH / together
    return {"precision": "bf16" if amp == "bf16" else "fp32", "run": run, "img_s": together,
            "img_s_wall": n * (1 + args.epochs) * per_epoch / wall, "epoch_s": epoch_s,
            "table_min": math.ceil(TABLE_RUNS / n) * TABLE_EPOCHS * epoch_s / 60}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="auto")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--images", type=int, default=None, help="training images per epoch (default 50000 on CUDA, 1024 on CPU)")
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--epochs", type=int, default=1, help="timed epochs per case, after one warm-up epoch")
    ap.add_argument("--workers", type=int, default=2, help="DataLoader workers of the conventional path")
    ap.add_argument("--cases", default="all",
                    help="all, or comma-separated filters: device,dataloader,erm,mr2,off,bf16,eager,compile,graph")
    ap.add_argument("--prepared", default=None, help="a prepared CIFAR-100 file (python -m mr2 prepare); synthetic data otherwise")
    ap.add_argument("--model", default="resnet32", help="the model config's name (resnet32: the paper's CIFAR model)")
    ap.add_argument("--concurrent", type=int, nargs="+", default=None, metavar="N",
                    help="instead of the cases: N python -m mr2 train processes at once, for each N given")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    device = engine.select_device(args.device)
    n = args.images or (FULL_EPOCH if device.type == "cuda" else 1024)
    if args.prepared and Path(args.prepared).is_file():
        data = load_prepared(args.prepared)
        idx = torch.arange(min(n, len(data.train)))
        data = PreparedData(data.train.subset(idx), data.val.subset(idx[:0]), data.test, data.info, data.config, data.checksum)
        source = f"CIFAR-100 ({len(idx)} training images of {args.prepared})"
    else:
        data = synthetic_cifar100(n)
        source = f"synthetic CIFAR-100-shaped uint8 tensors ({n} images)"
    print(f"# {hardware(device)}")
    print(f"# {args.model}, batch {args.batch}, {args.threads} threads, {source}, {args.epochs} timed epoch(s) after 1 warm-up")
    if args.concurrent:
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # run the clean-up of concurrent_runs
        print(f"| processes | method | precision | run | img/s together | img/s incl. start-up | 50k-image epoch per run, t_N (s) "
              f"| {TABLE_RUNS} runs × {TABLE_EPOCHS} epochs, ⌈{TABLE_RUNS}/N⌉·{TABLE_EPOCHS}·t_N (min) |")
        print("|---:|---|---|---|---:|---:|---:|---:|")
        with tempfile.TemporaryDirectory() as work:
            prepared = Path(args.prepared) if args.prepared else prepared_copy(data, Path(work) / "data.pt")
            n_train = len(load_prepared(prepared).train)
            for n in args.concurrent:
                r = concurrent_runs(n, args, prepared, n_train, Path(work))
                print(f"| {n} | mr2 | {r['precision']} | {r['run']} | {r['img_s']:,.0f} | {r['img_s_wall']:,.0f} "
                      f"| {r['epoch_s']:,.2f} | {r['table_min']:,.1f} |", flush=True)
        return
    print("| data path | method | precision | run | img/s | img per CPU-s | 50k-image epoch (s) | warm-up epoch (s) |")
    print("|---|---|---|---|---:|---:|---:|---:|")
    for path, method, amp, run in cases(device, args.cases):
        r = measure(path, method, amp, run, args, data)
        prec = "bf16" if amp == "bf16" else "fp32"
        print(f"| {path} | {method} | {prec} | {r['run']} | {r['img_s']:,.0f} | {r['img_cpu_s']:,.0f} "
              f"| {r['epoch_s']:,.1f} | {r['first_s']:,.1f} |", flush=True)


if __name__ == "__main__":
    main()
