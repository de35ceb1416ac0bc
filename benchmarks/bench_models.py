"""Benchmark: images per second of the quick-run models on CPU (not a test).

For each model, a batch of random images is pushed through (a) a training step (forward,
cross-entropy, backward, SGD step) and (b) an inference forward pass under ``no_grad``; the
median over ``--repeats`` timed runs is printed, as wall-clock img/s and as images per CPU-second
of this process (with one thread that is what an idle core would give, whatever the load). Defaults: batch 128, 2 threads, small_cnn on
28×28×1 (Fashion-MNIST) and resnet32 on 32×32×3 (CIFAR). The load average is printed too: on a
shared machine other processes can cut a multi-threaded run's speed by far more than their share.
Usage: python benchmarks/bench_models.py [--threads 2] [--batch 128] [--repeats 5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import torch
import torch.nn.functional as F

from mr2.engine.models import build_model

CASES = {"small_cnn": (1, 28, 28), "resnet32": (3, 32, 32)}


def images_per_second(fn, batch: int, repeats: int, steps: int) -> tuple[float, float]:
    """Median (wall-clock img/s, img per CPU-second) over ``repeats`` runs of ``steps`` calls."""
    fn()  # warm-up (allocations, kernel choice)
    wall, cpu = [], []
    for _ in range(repeats):
        start, start_cpu = time.perf_counter(), time.process_time()
        for _ in range(steps):
            fn()
        wall.append(steps * batch / (time.perf_counter() - start))
        cpu.append(steps * batch / (time.process_time() - start_cpu))
    return statistics.median(wall), statistics.median(cpu)


def bench(name: str, shape: tuple[int, ...], batch: int, repeats: int, steps: int) -> tuple[tuple[float, float], tuple[float, float], int]:
    torch.manual_seed(0)
    model = build_model(name, 10, shape)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    x, y = torch.randn(batch, *shape), torch.randint(0, 10, (batch,))

    def train_step() -> None:
        logits, _ = model(x)
        opt.zero_grad(set_to_none=True)
        F.cross_entropy(logits, y).backward()
        opt.step()

    def infer() -> None:
        with torch.no_grad():
            model(x)

    model.train()
    train = images_per_second(train_step, batch, repeats, steps)
    model.eval()
    inference = images_per_second(infer, batch, repeats, steps)
    return train, inference, sum(p.numel() for p in model.parameters())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--batch", type=int, default=128)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--steps", type=int, default=5, help="batches per timed run")
    parser.add_argument("--models", nargs="+", default=list(CASES), choices=list(CASES))
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    print(f"torch {torch.__version__}, {args.threads} threads, batch {args.batch}, load average {os.getloadavg()[0]:.2f}")
    print(f"{'model':<10} {'input':<12} {'params':>9} {'train img/s':>12} {'(per CPU-s)':>12} {'infer img/s':>12} {'(per CPU-s)':>12}")
    for name in args.models:
        shape = CASES[name]
        train, inference, params = bench(name, shape, args.batch, args.repeats, args.steps)
        rates = "".join(f" {r:>12,.0f}" for r in (*train, *inference))
        print(f"{name:<10} {'x'.join(map(str, shape)):<12} {params:>9,}{rates}")


if __name__ == "__main__":
    main()
