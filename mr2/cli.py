"""Command line: one entry point per pipeline step.

  python -m mr2 prepare  --config C.yaml [--set k=v ...] --out results/data/<dataset>.pt
  python -m mr2 train    --config C.yaml [--set k=v ...] --data <prepared.pt> --out <run dir>
  python -m mr2 evaluate --run <run dir> --data <prepared.pt> --out <eval dir>
  python -m mr2 errors   --run <run dir> --data <prepared.pt> --out <errors.csv>   (JTT: misclassified training samples)
  python -m mr2 aggregate --runs <run dir> ... --reference erm --out results/tables
  python -m mr2 table    --tables results/tables --reference erm
  python -m mr2 figures  --tables results/tables --out results/figures [--sweep-method mr2]
  python -m mr2 analysis --tables results/tables --out results/analysis   (does the premise hold?)
  python -m mr2 report   --tables results/tables --figures results/figures --config <pipeline config> --out results/report.md

Every step resolves and checks its config before any long work starts; outputs are atomic.
Bad input (a config key or value, a file) is one line ``error: ...`` on stderr and exit code 2;
a run that diverged is one line and exit code 1; never a traceback for either.
"""

from __future__ import annotations

import argparse
import sys



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
    p = sub.add_parser("errors", help="JTT's error set: the training samples a finished run misclassifies")
    p.add_argument("--run", required=True, help="a finished run directory (holds model.pt)")
    p.add_argument("--data", required=True, help="the prepared dataset file (its training split is used)")
    p.add_argument("--out", required=True, help="CSV with columns index, label, predicted")
    p.add_argument("--threads", type=int, default=None)
    p.add_argument("--device", default="auto")
    p = sub.add_parser("aggregate")
    p.add_argument("--runs", nargs="+", required=True)
    p.add_argument("--reference", default="erm")
    p.add_argument("--out", required=True)
    p = sub.add_parser("table")
    p.add_argument("--tables", required=True)
    p.add_argument("--reference", default="erm")
    p = sub.add_parser("figures")
    p.add_argument("--tables", required=True)
    p.add_argument("--reference", default="erm")
    p.add_argument("--sweep-method", default="mr2")
    p.add_argument("--out", required=True)
    p = sub.add_parser("analysis", help="the premise's links: rank correlations, a_k's decomposition, figures")
    p.add_argument("--tables", required=True)
    p.add_argument("--reference", default="erm")
    p.add_argument("--method", default="mr2", help="the MR² method whose margins are analysed")
    p.add_argument("--out", required=True)
    p = sub.add_parser("report")
    p.add_argument("--tables", required=True)
    p.add_argument("--figures", required=True)
    p.add_argument("--captions", default="workflow/report")
    p.add_argument("--config", required=True, help="the pipeline config (JSON or YAML) to record in the report")
    p.add_argument("--analysis", default=None, help="the folder of 'mr2 analysis': adds 'Does the premise hold?'")
    p.add_argument("--section", action="append", default=[], help="a Markdown section written by another step "
                   "(e.g. the theory step's results/theory/bound.md) to include before the figures")
    p.add_argument("--reference", default="erm")
    p.add_argument("--out", required=True)
    args = ap.parse_args(argv)

    try:
        if args.step == "prepare":
            from .engine import config as config_mod
            from .engine.data import prepare_dataset

            cfg = config_mod.resolve(args.config, args.set)
            summary = prepare_dataset(cfg["data"], args.out)
            print(f"[prepare] {args.out}: {summary}")
        elif args.step == "train":
            from .engine import config as config_mod
            from .engine.train import NonFiniteLossError, train

            sets = list(args.set)
            if args.threads is not None:
                sets.append(f"threads={args.threads}")
            if args.device is not None:
                sets.append(f"device={args.device}")
            cfg = config_mod.resolve(args.config, sets)
            try:
                train(cfg, args.data, args.out)
            except NonFiniteLossError as exc:  # the run stopped: not bad input, exit code 1
                print(f"error: {one_line(exc)}", file=sys.stderr)
                return 1
        elif args.step == "evaluate":
            from .engine.evaluate import evaluate

            m = evaluate(args.run, args.data, args.out, device=args.device, threads=args.threads)
            print(f"[evaluate] {args.out}: top1={m['top1']:.4f} worst_class_acc={m['worst_class_acc']:.4f}")
        elif args.step == "errors":
            from .engine.jtt import error_set

            table = error_set(args.run, args.data, args.out, device=args.device, threads=args.threads)
            print(f"[errors] {args.out}: {len(table)} misclassified training samples")
        else:
            results_step(args)
    except (ValueError, FileNotFoundError) as exc:  # bad input: a config, a file, a value
        print(f"error: {one_line(exc)}", file=sys.stderr)
        return 2
    return 0


def one_line(exc: BaseException) -> str:
    """The message of ``exc`` on one line (a config error, a refused file, a diverged run)."""
    return " ".join(str(exc).split())


def results_step(args) -> None:
    """aggregate | table | figures | report: the results layer, reading only tidy tables."""
    from pathlib import Path

    import matplotlib

    matplotlib.use("Agg")  # files only, no display

    from .results import tables as results
    from .results.groups import difficulty_table

    if args.step == "aggregate":
        tables = results.aggregate(args.runs)
        tables["groups"] = difficulty_table(tables["per_class"], reference=args.reference)
        results.write_tables(tables, args.out)
        print(f"[aggregate] {len(args.runs)} runs -> {args.out}")
    elif args.step == "table":
        t = results.read_tables(args.tables, ("per_class", "runs", "groups"))
        table = results.results_table(t["per_class"], t["runs"], t["groups"], reference=args.reference)
        results.write_results_table(table, Path(args.tables) / "results.csv", Path(args.tables) / "results.md",
                                    reference=args.reference)
        print(f"[table] {len(table)} rows -> {args.tables}/results.md")
    elif args.step == "figures":
        from .results.figures import make_figures

        t = results.read_tables(args.tables, ("per_class", "runs", "epochs", "groups"))
        made = make_figures(t, t["groups"], args.out, reference=args.reference, sweep_method=args.sweep_method)
        print(f"[figures] {len(made)} figures -> {args.out}")
    elif args.step == "analysis":
        from .results.premise_figures import write_analysis

        t = results.read_tables(args.tables, ("per_class", "runs", "epochs", "groups"))
        made = write_analysis(t, args.out, reference=args.reference, method=args.method)
        print(f"[analysis] {len(made['correlations'])} correlations -> {args.out}")
    else:
        from .common.io import load_yaml
        from .results.report import write_report

        t = results.read_tables(args.tables, ("per_class", "runs", "groups"))
        out = Path(args.out)
        figures = {p.stem: str(p.relative_to(out.parent)) for p in sorted(Path(args.figures).glob("*.png"))}
        config = load_yaml(Path(args.config).read_text())
        md = (Path(args.tables) / "results.md").read_text()
        sections = [Path(path).read_text() for path in args.section]
        write_report(t, md, figures, out, args.captions, config, reference=args.reference, analysis=args.analysis,
                     sections=sections)
        print(f"[report] {out}")
