"""Command line: one entry point per pipeline step.

  python -m mr2 prepare  --config C.yaml [--set k=v ...] --out results/data/<dataset>.pt
  python -m mr2 train    --config C.yaml [--set k=v ...] --data <prepared.pt> --out <run dir>
  python -m mr2 evaluate --run <run dir> --data <prepared.pt> --out <eval dir>

Every step resolves and checks its config before any long work starts; outputs are atomic.
"""

from __future__ import annotations

import argparse
import sys

from . import config as config_mod


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m mr2", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="step", required=True)
    for name in ("prepare", "train"):
        p = sub.add_parser(name)
        p.add_argument("--config", action="append", default=[], help="YAML config file(s), merged in order")
        p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="override one key, e.g. train.epochs=3")
        p.add_argument("--out", required=True)
        if name == "train":
            p.add_argument("--data", required=True, help="the prepared dataset file")
            p.add_argument("--threads", type=int, default=None, help="CPU threads (overrides config 'threads')")
            p.add_argument("--device", default=None, help="auto | cpu | cuda (overrides config 'device')")
    p = sub.add_parser("evaluate")
    p.add_argument("--run", required=True, help="a finished run directory (holds model.pt)")
    p.add_argument("--data", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--threads", type=int, default=None)
    p.add_argument("--device", default="auto")
    args = ap.parse_args(argv)

    try:
        if args.step == "prepare":
            from .data import prepare_dataset

            cfg = config_mod.resolve(args.config, args.set)
            summary = prepare_dataset(cfg["data"], args.out)
            print(f"[prepare] {args.out}: {summary}")
        elif args.step == "train":
            from .train import train

            sets = list(args.set)
            if args.threads is not None:
                sets.append(f"threads={args.threads}")
            if args.device is not None:
                sets.append(f"device={args.device}")
            cfg = config_mod.resolve(args.config, sets)
            train(cfg, args.data, args.out)
        else:
            from .evaluate import evaluate

            m = evaluate(args.run, args.data, args.out, device=args.device, threads=args.threads)
            print(f"[evaluate] {args.out}: top1={m['top1']:.4f} worst_class_acc={m['worst_class_acc']:.4f}")
    except (ValueError, FileNotFoundError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
