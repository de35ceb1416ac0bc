"""Command line of the theory module.

  python -m theory bound --tables results/tables --out results/theory/bound.csv
                         [--markdown results/theory/bound.md] [--figure results/figures/bound_terms]
                         [--norm max_row] [--c 1.0] [--delta 0.05]

``bound`` evaluates Proposition 1 on every run of the tidy tables (``theory.pipeline``): the
table (CSV), the report's section (Markdown) and the figure of the terms against the test error
(``<figure>.png`` and ``.pdf``).
"""

from __future__ import annotations

import argparse
import sys


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m theory", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="step", required=True)
    p = sub.add_parser("bound", help="Proposition 1 on the pipeline's trained models")
    p.add_argument("--tables", required=True, help="folder with runs.csv and per_class.csv (aggregate step)")
    p.add_argument("--out", required=True, help="the table to write (CSV, a row per run)")
    p.add_argument("--markdown", default=None, help="the report's theory section to write (Markdown)")
    p.add_argument("--figure", default=None, help="figure path without suffix; writes .png and .pdf")
    p.add_argument("--norm", default="max_row", choices=["max_row", "frobenius"], help="Λ (default: max_row)")
    p.add_argument("--c", type=float, default=1.0, help="constant of the confidence term (default: 1.0)")
    p.add_argument("--delta", type=float, default=0.05, help="1 − confidence level (default: 0.05)")
    args = ap.parse_args(argv)

    import matplotlib

    matplotlib.use("Agg")
    from mr2.results.plotting import save_figure

    from . import answers, pipeline, plots

    try:
        runs, per_class = pipeline.read_tables(args.tables)
        table = pipeline.bound_table(runs, per_class, norm=args.norm, c=args.c, delta=args.delta)
        pipeline.write_text(table.to_csv(index=False), args.out)
        if args.figure:
            save_figure(plots.plot_bound_terms(table), args.figure)
        if args.markdown:
            pipeline.write_text(answers.bound_markdown(table), args.markdown)
    except (ValueError, FileNotFoundError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"[theory bound] {len(table)} runs -> {args.out}; holds on {int(table['holds'].sum())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
