"""The command line: one subcommand per pipeline step (``mr2 <step> --help`` describes each).

  mr2 configure --run <settings YAML> --out results/runs/<...>/run.yaml   (or --data: a dataset's)
  mr2 prepare  --config <data.yaml> [--set k=v ...] --out results/data/<dataset>.pt
  mr2 train    --config <run.yaml> [--set k=v ...] --data <prepared.pt> --out <run dir> [--force]
  mr2 evaluate --run <run dir> --data <prepared.pt> --out <eval dir> [--split val]
  mr2 errors   --run <run dir> --data <prepared.pt> --out <errors.csv>   (JTT: misclassified training samples)
  mr2 on-gpus  N --lock-dir <dir> -- <command ...>   (run a command on N free GPUs of this machine: torchrun jobs)
  mr2 aggregate --runs <run dir> ... --reference erm --out results/tables [--pipeline-config <json> --config-digest <sha256>]
  mr2 tune     --runs <trial and reference run dirs> ... --criterion hard --out results/tune/<dataset>
  mr2 table    --tables results/tables --reference erm
  mr2 figures  --tables results/tables --out results/figures [--config <pipeline config>] [--names ...] [--list]
  mr2 analysis --tables results/tables --out results/analysis   (does the premise hold?)
  mr2 report   --tables results/tables --figures results/figures --config <pipeline config> --out results/report.md
  mr2 readme   --tables results/tables --name default [--config config/config.yaml] [--section HEADING] [--figure STEM]
               (the README's generated tables, and sections of the run's report)
  mr2 verdicts [--snapshots docs/results] [--readme README.md]   (the README's verdict table across settings)

``mr2`` is the installed console script; ``python -m mr2`` is the same. Every step resolves and
checks its config before any long work starts and writes its outputs atomically. Bad input (a config
key or value, a file) is one line ``error: ...`` on stderr and exit code 2; a run that diverged is one
line and exit code 1; never a traceback for either.
"""

from __future__ import annotations

import argparse
import json
import sys

from . import __version__

DEVICE_HELP = "auto (CUDA when present) | cpu | cuda | cuda:N; overrides the config's 'device'"


def positive_int(text: str) -> int:
    """An argparse type: an integer >= 1 (a number of threads or of GPU slots)."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1, got {text!r}")
    return value


def device_options(p: argparse.ArgumentParser, default: str | None) -> None:
    """--device, --threads and the GPU-sharing options of the steps that run a model."""
    p.add_argument("--device", default=default, help=DEVICE_HELP + (f" (default: {default})" if default else ""))
    p.add_argument("--threads", type=positive_int, default=None,
                   help="CPU threads: they come from the run's config ('threads'), as a run's numbers depend on "
                        "them; --threads must equal it, or sets it where the config leaves it unset (null)")
    p.add_argument("--gpu-slots", type=positive_int, default=None, metavar="N",
                   help="share the visible GPUs between up to N runs each: take the least busy GPU (needs --lock-dir)")
    p.add_argument("--lock-dir", default=None, help="folder of the GPU slot locks shared by the runs of one machine")


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="mr2", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--version", action="version", version=f"mr2 {__version__}")
    sub = ap.add_subparsers(dest="step", required=True, metavar="<step>")

    p = sub.add_parser("configure", help="check a run's or a dataset's settings and write them resolved over the defaults")
    p.add_argument("--run", default=None, metavar="YAML", help="a run's settings (YAML text): its config, checked, to --out")
    p.add_argument("--data", default=None, metavar="YAML", help="a dataset's settings (YAML text with a data section)")
    p.add_argument("--out", required=True, help="the resolved config file to write (YAML)")

    for name, what in (("prepare", "prepare a dataset: cap, split and cache it in one checksummed file"),
                       ("train", "train one run from its config")):
        p = sub.add_parser(name, help=what)
        p.add_argument("--config", action="append", default=[], help="YAML config file(s), merged in order over the defaults")
        p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                       help="override one key, e.g. train.epochs=3 (the value is read as YAML)")
        p.add_argument("--out", required=True, help="the prepared file to write" if name == "prepare" else "the run folder")
        if name == "train":
            p.add_argument("--data", required=True, help="the prepared dataset file")
            device_options(p, None)
            p.add_argument("--force", action="store_true",
                           help="train into a folder that holds a finished run (model.pt): its model and evaluations "
                                "(eval/, eval_val/) are removed first; without it such a folder is refused")
            p.add_argument("--on-divergence", choices=["stop", "record"], default="stop",
                           help="a run that diverges: stop with exit code 1 (default), or record it as a finished, "
                                "failed run scored 0 on validation (the workflow's tuning trials)")
            p.add_argument("--jtt-stage1", action="store_true", help="train the stage-1 ERM run of the jtt run this config describes")
            p.add_argument("--jtt-errors", default=None, metavar="CSV",
                           help="JTT stage 2: up-sample this error set (written by 'mr2 errors') as the jtt run's options say")

    p = sub.add_parser("evaluate", help="test-set evaluation of a finished run: per-class accuracy and statistics")
    p.add_argument("--run", required=True, help="a finished run folder (holds model.pt)")
    p.add_argument("--data", required=True, help="the prepared dataset file the run was trained on")
    p.add_argument("--out", required=True, help="the folder to write per_class.csv, confusion.csv, metrics.json to")
    p.add_argument("--split", choices=("test", "val"), default="test",
                   help="the split to measure: test (default), or val (the tuning stage: the test set is not read)")
    device_options(p, "auto")
    p = sub.add_parser("errors", help="JTT's error set: the training samples a finished run misclassifies")
    p.add_argument("--run", required=True, help="a finished run folder (holds model.pt)")
    p.add_argument("--data", required=True, help="the prepared dataset file (its training split is used)")
    p.add_argument("--out", required=True, help="CSV with columns index, label, predicted")
    device_options(p, "auto")

    p = sub.add_parser("on-gpus", help="claim N free GPUs of this machine (held until the command ends) and run "
                                       "the command with CUDA_VISIBLE_DEVICES naming them (the pipeline's torchrun jobs)")
    p.add_argument("count", type=positive_int, help="how many GPUs")
    p.add_argument("--lock-dir", required=True, help="folder of the GPU locks shared by the runs of one machine")
    p.add_argument("command", nargs="+", help="the command, after -- (e.g. -- python -m torch.distributed.run ...)")

    p = sub.add_parser("aggregate", help="all runs -> tidy tables (per class, per run, per epoch) and the groups")
    p.add_argument("--runs", nargs="+", required=True, help="run folders (each with config.yaml, epochs.csv, eval/)")
    p.add_argument("--reference", default="erm", help="the method whose per-class accuracy defines easy/medium/hard")
    p.add_argument("--out", required=True, help="the tables folder")
    p.add_argument("--pipeline-config", default=None, metavar="JSON",
                   help="the pipeline config recorded under the output root (pipeline_config.json): with "
                        "--config-digest, refused unless it is this run's config")
    p.add_argument("--config-digest", default=None, metavar="SHA256",
                   help="the digest (mr2.common.io.config_digest) of the config this run is built from")
    p = sub.add_parser("tune", help="the tuning stage's choice: every trial's validation scores -> tuning.csv, "
                                    "chosen.yaml, budget.csv, tuning.md and the figure tuning.png")
    p.add_argument("--runs", nargs="+", required=True, help="the trials' run folders and the reference's at the trials' "
                                                            "seeds (each with config.yaml and eval_val/)")
    p.add_argument("--reference", default="erm", help="the method whose validation accuracy ranks easy/medium/hard")
    p.add_argument("--criterion", choices=("hard", "all", "claim"), default="hard",
                   help="the selection rule (mr2.results.tuning.ranks): the hard group's validation accuracy "
                        "(default), all classes', or 'claim' (the best hard group among the trials that keep the "
                        "easy group within --effect of the reference's)")
    p.add_argument("--effect", type=float, default=1.0,
                   help="effect_of_interest, points: how far below the reference's validation easy-group "
                        "accuracy a trial admitted by the 'claim' rule may be")
    p.add_argument("--out", required=True, help="the tuning folder")
    p = sub.add_parser("table", help="the results table (mean ± sd, paired differences) as CSV and Markdown, "
                                     "the paired comparisons (comparisons.csv) and the settings (settings.csv)")
    p.add_argument("--tables", required=True, help="the tables folder of 'mr2 aggregate'")
    p.add_argument("--reference", default="erm", help="the method the paired differences are taken against")
    p.add_argument("--tolerance", type=float, default=1.0, metavar="POINTS",
                   help="a method is at convergence when factor x its epochs gains at most this much (default: 1.0)")
    effect_option(p)
    p = sub.add_parser("figures", help="the report's figures from the tidy tables")
    p.add_argument("--list", action="store_true", help="print the figures a --config draws (every figure without "
                                                      "one), one name a line, and stop")
    p.add_argument("--tables", default=None, help="the tables folder of 'mr2 aggregate' (required unless --list)")
    p.add_argument("--config", default=None, help="the pipeline config (JSON or YAML): the methods the figures draw")
    figure_method_options(p)
    p.add_argument("--names", nargs="+", default=None, help="exactly these figures (default: every figure whose "
                   "comparison the run holds)")
    p.add_argument("--out", default=None, help="the figures folder (required unless --list)")
    p = sub.add_parser("analysis", help="does the premise hold: rank correlations, a_k's decomposition, figures")
    p.add_argument("--tables", required=True, help="the tables folder of 'mr2 aggregate'")
    p.add_argument("--reference", default="erm", help="the reference method (ERM)")
    p.add_argument("--method", default="mr2", help="the MR² method whose margins are analysed")
    p.add_argument("--out", required=True, help="the analysis folder")
    p = sub.add_parser("report", help="the report: results table, generated findings, figures, config")
    p.add_argument("--tables", required=True, help="the tables folder (with results.md)")
    p.add_argument("--figures", required=True, help="the figures folder")
    p.add_argument("--captions", required=True, help="the folder of the figures' captions (workflow/report)")
    p.add_argument("--config", required=True, help="the pipeline config (JSON or YAML) to record in the report")
    p.add_argument("--analysis", default=None, help="the folder of 'mr2 analysis': adds 'Does the premise hold?'")
    p.add_argument("--section", action="append", default=[], help="a Markdown section written by another step "
                   "(e.g. the theory step's results/theory/bound.md) to include before the figures")
    figure_method_options(p)
    p.add_argument("--out", required=True, help="the report (Markdown)")
    p.add_argument("--html", default=None, help="also write the report as one self-contained HTML page")
    effect_option(p)
    p = sub.add_parser("readme", help="keep a run's results table in docs/results/<name>/ and show it in the README")
    p.add_argument("--tables", required=True, help="the tables folder of the run (with results.csv and results.md)")
    p.add_argument("--name", required=True, help="the README block to fill: <!-- results:<name> -->")
    p.add_argument("--readme", default="docs/results.md", help="the page whose block to fill (default: docs/results.md; "
                                                               "README.md's verdict blocks are refreshed too)")
    p.add_argument("--config", default=None, help="the config file the run was made with, recorded in the snapshot "
                                                  "(default: the block's name)")
    p.add_argument("--section", action="append", default=[], metavar="HEADING",
                   help="a section of the run's report (heading start) to keep and show in <!-- excerpt:<name> -->; "
                        "repeatable")
    p.add_argument("--figure", action="append", default=[], metavar="STEM",
                   help="a figure of the run's report (file stem, e.g. tradeoff) to copy with its caption and show in "
                        "<!-- figure:<name>.<stem> -->; repeatable")
    p.add_argument("--report", default=None, help="the run's report (default: <tables>/../report.md)")
    p = sub.add_parser("verdicts", help="the README's verdict table across settings, from the snapshots")
    p.add_argument("--snapshots", default="docs/results", help="the snapshots folder (default: docs/results)")
    p.add_argument("--readme", nargs="+", default=["README.md", "docs/results.md"],
                   help="the pages whose verdict blocks to fill (default: README.md docs/results.md)")
    return ap


def figure_method_options(p: argparse.ArgumentParser) -> None:
    """--reference, --method, --sweep-method of the figures and the report: by default the pipeline
    config's (``mr2.results.figures.registry.figure_options``), so both draw and describe the same runs."""
    p.add_argument("--reference", default=None, help="the reference method (default: the config's, else erm)")
    p.add_argument("--method", default=None, help="the MR² method whose margins are drawn (default: the config's "
                                                  "mr2, else its first MR² method, else mr2)")
    p.add_argument("--sweep-method", default=None, help="the method whose swept variants are drawn (default: the "
                                                        "config's sweeps.method, else mr2)")


def figure_options_of(args, config: dict | None):
    """The figures' methods: the config's (``figure_options``), each replaced by its option when given."""
    from dataclasses import replace

    from .results.figures.registry import figure_options

    given = {key: getattr(args, key) for key in ("reference", "method", "sweep_method") if getattr(args, key)}
    return replace(figure_options(config), **given)


def write_primary(tables: Path) -> None:
    """<tables>/primary.json: the config's declared primary test (config key ``primary``), read from the
    pipeline config recorded under the output root (<tables>/../pipeline_config.json); an earlier one is
    removed when the config declares none."""
    from .common.io import save_json

    recorded = tables.parent / "pipeline_config.json"
    config = json.loads(recorded.read_text(encoding="utf-8")) if recorded.is_file() else {}
    primary = config.get("primary") if isinstance(config, dict) else None
    if isinstance(primary, dict) and primary:
        save_json(primary, tables / "primary.json")
    else:
        (tables / "primary.json").unlink(missing_ok=True)


def effect_option(p: argparse.ArgumentParser) -> None:
    """--effect-of-interest: the pipeline config's ``effect_of_interest``."""
    p.add_argument("--effect-of-interest", type=float, default=1.0, metavar="POINTS",
                   help="the smallest paired change worth detecting, in points: a 'no clear difference' whose minimum "
                        "detectable effect (80%% power) exceeds it reads 'underpowered' (default: 1.0)")


def main(argv: list[str] | None = None) -> int:
    from . import KERNEL_ERROR
    from .common.io import DiskFullError, os_error_line

    if KERNEL_ERROR is not None:  # MR2_CPU_ISA is neither avx2 nor native: bad input, before anything runs
        print(f"error: {one_line(KERNEL_ERROR)}", file=sys.stderr)
        return 2
    args = parser().parse_args(argv)
    try:
        if args.step == "on-gpus":
            from .engine.gpus import exec_on_gpus

            exec_on_gpus(args.command, args.count, args.lock_dir)  # returns only on failure (raises)
        if args.step in ("configure", "prepare", "train", "evaluate", "errors"):
            return engine_step(args)
        results_step(args)
    except (ValueError, FileNotFoundError, DiskFullError) as exc:  # bad input: a config, a file, a value; a full disk
        print(f"error: {one_line(exc)}", file=sys.stderr)
        return 2
    except OSError as exc:  # an output that cannot be written (read-only, a file in the way, ...)
        print(f"error: {os_error_line(exc)}", file=sys.stderr)
        return 2
    return 0


def one_line(exc: BaseException) -> str:
    """The message of ``exc`` on one line (a config error, a refused file, a diverged run)."""
    return " ".join(str(exc).split())


def engine_step(args) -> int:
    """configure | prepare | train | evaluate | errors: the engine, on torch. Returns the exit code."""
    from .engine import config as config_mod

    if args.step == "configure":
        from .engine.check import configure

        configure(args.run, args.data, args.out)
        print(f"[configure] checked -> {args.out}")
        return 0
    if args.step == "prepare":
        from .engine.data import prepare_dataset

        cfg = config_mod.resolve(args.config, args.set)
        summary = prepare_dataset(cfg["data"], args.out)
        print(f"[prepare] {args.out}: {summary}")
        return 0
    device = claimed_device(args)
    if args.step == "train":
        from .engine import jtt
        from .engine.train import NonFiniteLossError, train

        sets = list(args.set) + ([f"device={device}"] if device is not None else [])
        cfg = config_mod.resolve(args.config, sets)
        threads = config_mod.threads_of_run(cfg["threads"], args.threads, "the run's config")
        if threads != cfg["threads"]:  # the config left it unset: --threads fills it in
            cfg = config_mod.resolve(args.config, sets + [f"threads={threads}"])
        if args.jtt_stage1 and args.jtt_errors:
            raise config_mod.ConfigError("--jtt-stage1 and --jtt-errors are two different stages; give one")
        if args.jtt_stage1:
            cfg = jtt.stage1_config(cfg)
        elif args.jtt_errors:
            cfg = jtt.stage2_config(cfg, args.jtt_errors)
        try:
            train(cfg, args.data, args.out, force=args.force, on_divergence=args.on_divergence)
        except NonFiniteLossError as exc:  # the run stopped: not bad input, exit code 1
            print(f"error: {one_line(exc)}", file=sys.stderr)
            return 1
    elif args.step == "evaluate":
        from .engine.evaluate import evaluate

        m = evaluate(args.run, args.data, args.out, device=device, threads=args.threads, split=args.split)
        print(f"[evaluate] {args.out}: top1={m['top1']:.4f} worst_class_acc={m['worst_class_acc']:.4f}")
    else:
        from .engine.jtt import error_set

        table = error_set(args.run, args.data, args.out, device=device, threads=args.threads)
        print(f"[errors] {args.out}: {len(table)} misclassified training samples")
    return 0


def claimed_device(args) -> str | None:
    """The device of a model step: ``--device``, or with ``--gpu-slots N`` the least busy visible GPU
    (a slot lock held until this process ends; ``mr2.engine.gpus``)."""
    if args.gpu_slots is None:
        return args.device
    from .engine.gpus import claim_gpu

    if args.lock_dir is None:
        raise ValueError("--gpu-slots needs --lock-dir (the folder where the runs of this machine hold their slots)")
    return claim_gpu(args.device or "auto", args.gpu_slots, args.lock_dir)


def results_step(args) -> None:
    """aggregate | tune | table | figures | analysis | report: the results layer, reading only tidy tables."""
    from pathlib import Path

    import matplotlib

    matplotlib.use("Agg")  # files only, no display

    from .results import tables as results
    from .results.groups import difficulty_table

    if args.step == "aggregate":
        from .common.io import check_built_from
        from .common.runs import read_run_config

        if (args.pipeline_config is None) != (args.config_digest is None):
            raise ValueError("--pipeline-config and --config-digest go together: give both or neither")
        if args.pipeline_config is not None:  # before anything under the output root is replaced
            check_built_from(args.pipeline_config, args.config_digest)
        for run in args.runs:  # every run's config readable, each error naming its file
            read_run_config(run)
        tables = results.aggregate(args.runs)
        tables["groups"] = difficulty_table(tables["per_class"], reference=args.reference)
        results.write_tables(tables, args.out)
        print(f"[aggregate] {len(args.runs)} runs -> {args.out}")
    elif args.step == "tune":
        from .results.tuning import write_tuning

        tables = results.aggregate(args.runs, eval_subdir="eval_val")
        record = write_tuning(tables["per_class"], tables["runs"], args.out, args.criterion, args.reference,
                              args.effect)
        print(f"[tune] {record['dataset']}: chosen {record['methods']} -> {args.out}")
    elif args.step == "table":
        t = results.read_tables(args.tables, ("per_class", "runs", "groups"))
        table = results.results_table(t["per_class"], t["runs"], t["groups"], reference=args.reference)
        results.write_results_table(table, Path(args.tables) / "results.csv", Path(args.tables) / "results.md",
                                    reference=args.reference)
        from .common.io import save_csv
        from .results.verdicts import settings_table

        comparisons = results.comparisons_table(t["per_class"], t["runs"], t["groups"], reference=args.reference,
                                                effect_of_interest=args.effect_of_interest)
        save_csv(comparisons, Path(args.tables) / "comparisons.csv")
        from .results.convergence import convergence_table

        convergence = convergence_table(t["per_class"], t["runs"], t["groups"], tolerance=args.tolerance)
        save_csv(convergence, Path(args.tables) / "convergence.csv")
        save_csv(settings_table(t["runs"], convergence), Path(args.tables) / "settings.csv")
        write_primary(Path(args.tables))
        print(f"[table] {len(table)} rows -> {args.tables}/results.md; {len(comparisons)} comparisons")
    elif args.step == "figures":
        from .common.io import load_yaml_file
        from .results.figures.registry import FIGURES, config_figures
        from .results.figures.render import make_figures

        config = load_yaml_file(args.config) if args.config else None
        if args.list:
            print("\n".join(config_figures(config) if config is not None else FIGURES))
            return
        if args.tables is None or args.out is None:
            raise ValueError("mr2 figures needs --tables and --out (or --list)")
        t = results.read_tables(args.tables, ("per_class", "runs", "epochs", "groups"))
        made = make_figures(t, args.out, figure_options_of(args, config), names=args.names)
        print(f"[figures] {len(made)} figures -> {args.out}")
    elif args.step == "readme":
        from .results.readme import repository_root, update_readme

        folder = update_readme(args.tables, args.name, args.readme, repository_root(args.readme), config=args.config,
                               sections=args.section, report=args.report, figures=args.figure)
        print(f"[readme] {args.readme}: block {args.name} from {folder}")
    elif args.step == "verdicts":
        from .results.snapshots import snapshot_primaries, snapshot_verdicts
        from .results.verdict_text import update_verdicts, verdict_markdown

        if not Path(args.snapshots).is_dir():
            raise FileNotFoundError(f"snapshots folder {args.snapshots} not found")
        missing = [page for page in args.readme if not update_verdicts(page, args.snapshots)]
        if missing:
            print(verdict_markdown(snapshot_verdicts(args.snapshots), snapshot_primaries(args.snapshots)))
            raise ValueError(f"{', '.join(missing)}: no verdict block (<!-- verdicts -->, <!-- verdicts:short --> or "
                             "<!-- headline -->, each marker on a line of its own) to fill")
        print(f"[verdicts] {', '.join(args.readme)}: verdict tables from {args.snapshots}")
    elif args.step == "analysis":
        from .results.premise_figures import write_analysis

        t = results.read_tables(args.tables, ("per_class", "runs", "epochs", "groups"))
        made = write_analysis(t, args.out, reference=args.reference, method=args.method)
        print(f"[analysis] {len(made['correlations'])} correlations -> {args.out}")
    else:
        from .common.io import load_yaml_file
        from .results.report import write_report

        config = load_yaml_file(args.config)
        pngs = sorted(Path(args.figures).glob("*.png"))
        captions = Path(args.captions)
        stray = [p for p in pngs if not (captions / f"{p.stem}.rst").is_file()]
        if stray and (captions / "results_table.rst").is_file():  # the captions folder is right: the PNG is not
            raise ValueError(f"{stray[0]} is no figure of the pipeline (there is no caption {captions / stray[0].stem}"
                             f".rst): remove it from {args.figures}, or add its caption")
        t = results.read_tables(args.tables, ("per_class", "runs", "epochs", "groups"))
        if (Path(args.tables) / "convergence.csv").is_file():  # written by `mr2 table` beside results.md
            t.update(results.read_tables(args.tables, ("convergence",)))
        out = Path(args.out)
        figures = {p.stem: str(p.relative_to(out.parent)) for p in pngs}
        md = (Path(args.tables) / "results.md").read_text(encoding="utf-8")
        sections = [Path(path).read_text(encoding="utf-8") for path in args.section]
        write_report(t, md, figures, out, args.captions, config, analysis=args.analysis, sections=sections,
                     html_out=args.html, effect_of_interest=args.effect_of_interest,
                     options=figure_options_of(args, config))
        print(f"[report] {out}" + (f" and {args.html}" if args.html else ""))
