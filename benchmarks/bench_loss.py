"""Benchmark: MR² loss (forward + backward) against plain cross-entropy and a per-class loop.

The loop computes the same MR² objective the way the authors' release is structured: a Python
loop over the classes present in the batch for the statistics and for the representation term.
The "rep. pairs" column says which evaluation of the representation term the vectorised loss
chose (``mr2.method.losses.rep_margin.choose_pairs``: on the CPU sparse same-class pairs, per-class
blocks or the dense B×B Gram matrix; on CUDA always dense).
Prints a table; not a test. Usage: python benchmarks/bench_loss.py [--threads 2] [--repeats 15]
[--processes N]. With N > 1 the grid is measured in N fresh processes, one after the other, and
each cell reports the medians and the range of the per-process ratio: on a shared machine the
ratio varies more between processes (memory layout, page faults) than within one.
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
import subprocess
import sys
import time

import torch
import torch.nn.functional as F

from mr2.method import hostsync
from mr2.method.losses import build_loss, logit_margin_cross_entropy
from mr2.method.losses.rep_margin import choose_pairs
from mr2.method.margins import optimal_margins


def print_header(ratio: str) -> None:
    """The table's header, shared by the one-process and the across-processes tables."""
    print(f"| device | K | B | D | rep. pairs | CE | MR² (vectorised) | MR² (per-class loop) | {ratio} |")
    print("|" + "---|" * 9)


def loop_mr2(logits, feats, y, state, k, lam=0.1, momentum=0.99):
    """Same objective, one class at a time (the release's structure)."""
    with torch.no_grad():
        for c in y.unique().tolist():
            xc = feats[y == c].detach()
            m, v = xc.mean(0), ((xc - xc.mean(0)) ** 2).sum(1).mean()
            n = len(xc)
            r = max(n / (state["count"][c] + n), 1 - momentum**n)
            delta = m - state["mean"][c]
            state["mean"][c] += r * delta
            state["sq"][c] = (1 - r) * state["sq"][c] + r * v + r * (1 - r) * delta.pow(2).sum()
            state["count"][c] += n
        a = state["mean"].pow(2).sum(1) + state["sq"]
        gamma = optimal_margins(a, 1.0)
        s_bar = state["sq"].mean()
    ce = logit_margin_cross_entropy(logits, y, gamma)
    rep = torch.zeros((), device=feats.device)
    for c in y.unique().tolist():
        xc = feats[y == c]
        if len(xc) < 2:
            continue
        d = torch.cdist(xc, xc).pow(2) - 2 * s_bar
        d = d.masked_fill(torch.eye(len(xc), dtype=torch.bool, device=feats.device), float("-inf"))
        rep = rep + F.softplus(torch.logsumexp(d, 1)).sum()
    return ce + lam * rep / len(y)


def timeit(fns, device, repeats):
    """Median milliseconds of each of ``fns``, timed in interleaved rounds (one call of each per
    round, after a warm-up call), so that a slow spell of a shared machine hits all of them."""
    times = [[] for _ in fns]
    for fn in fns:
        fn()
    for _ in range(repeats):
        for fn, ts in zip(fns, times):
            if device.type == "cuda":
                torch.cuda.synchronize()
            t0 = time.perf_counter()
            fn()
            if device.type == "cuda":
                torch.cuda.synchronize()
            ts.append(time.perf_counter() - t0)
    return [statistics.median(ts) * 1e3 for ts in times]


def measure(args) -> list[dict]:
    """Every cell of the grid in this process: device, K, B, D, chosen path and median ms."""
    torch.set_num_threads(args.threads)
    devices = [torch.device(d) for d in args.devices if d != "cuda" or torch.cuda.is_available()]
    cells = []
    for device, k, b, d in itertools.product(devices, args.classes, args.batch, args.dims):
        g = torch.Generator().manual_seed(0)
        y = torch.randint(0, k, (b,), generator=g).to(device)
        feats = torch.randn(b, d, generator=g).to(device).requires_grad_()
        logits = torch.randn(b, k, generator=g).to(device).requires_grad_()
        loss = build_loss("mr2", k, d).to(device).train()
        state = {"count": [0] * k, "mean": torch.zeros(k, d, device=device), "sq": torch.zeros(k, device=device)}

        def run_ce():
            F.cross_entropy(logits, y).backward()

        def run_vec():
            loss(logits, feats, y).total.backward()

        def run_loop():
            loop_mr2(logits, feats, y, state, k).backward()

        t_ce, t_vec, t_loop = timeit((run_ce, run_vec, run_loop), device, args.repeats)
        path = choose_pairs(torch.bincount(y), d) if hostsync.host_reads_are_free(device) else "dense"
        cell = {"device": device.type, "K": k, "B": b, "D": d, "path": path, "ce": t_ce, "vec": t_vec, "loop": t_loop}
        cells.append(cell)
        if args.json:
            print(json.dumps(cell), flush=True)
        else:
            print(f"| {device.type} | {k} | {b} | {d} | {path} | {t_ce:.2f} | {t_vec:.2f} | {t_loop:.2f} | {t_loop / t_vec:.1f}× |", flush=True)
    return cells


def across_processes(args) -> None:
    """Measure the grid in ``args.processes`` fresh processes; per cell, medians and the ratio's range."""
    child = [sys.executable, __file__, "--json", "--processes", "1", "--threads", str(args.threads),
             "--repeats", str(args.repeats), "--devices", *args.devices, "--classes", *map(str, args.classes),
             "--batch", *map(str, args.batch), "--dims", *map(str, args.dims)]
    runs = []
    for r in range(args.processes):
        out = subprocess.run(child, check=True, capture_output=True, text=True).stdout
        runs.append([json.loads(line) for line in out.splitlines() if line.startswith("{")])
        print(f"process {r + 1}/{args.processes} done", file=sys.stderr, flush=True)
    print_header(f"loop / vectorised, median (min–max of {args.processes} processes)")
    for cells in zip(*runs):
        c = cells[0]
        med = {key: statistics.median(x[key] for x in cells) for key in ("ce", "vec", "loop")}
        ratios = sorted(x["loop"] / x["vec"] for x in cells)
        print(f"| {c['device']} | {c['K']} | {c['B']} | {c['D']} | {c['path']} | {med['ce']:.2f} | {med['vec']:.2f} | "
              f"{med['loop']:.2f} | {statistics.median(ratios):.1f}× ({ratios[0]:.1f}–{ratios[-1]:.1f}×) |", flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=15)
    ap.add_argument("--processes", type=int, default=1, help="measure the grid in this many fresh processes")
    ap.add_argument("--json", action="store_true", help="one JSON object per cell instead of a table row")
    ap.add_argument("--devices", nargs="+", default=["cpu", "cuda"], help="devices to time (cuda only where present)")
    ap.add_argument("--classes", type=int, nargs="+", default=[10, 100, 1000], help="values of K")
    ap.add_argument("--batch", type=int, nargs="+", default=[128, 512], help="values of B")
    ap.add_argument("--dims", type=int, nargs="+", default=[64, 640, 2048], help="values of D")
    args = ap.parse_args()
    if args.processes < 1:
        ap.error(f"--processes must be >= 1, got {args.processes}")
    if args.processes > 1:
        return across_processes(args)
    if not args.json:
        print(f"torch {torch.__version__}, threads {args.threads}; times are medians of {args.repeats} interleaved rounds, ms per forward+backward")
        print_header("loop / vectorised")
    measure(args)


if __name__ == "__main__":
    main()
