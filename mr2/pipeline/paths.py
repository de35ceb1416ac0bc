"""Every path of the pipeline, written once: the patterns under the output root (config key
`output_root`, default results), the files of a run, and the paths a job derives from its own.

A run's folder and a prepared dataset carry a short hash of their settings as the pipeline states them
(``mr2.pipeline.runs``): two configs share a folder only when they describe the same run, so a run of
one config never overwrites another's, and a changed setting is a new folder.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path

from .config import PipelineConfigError

HASH = "[0-9a-f]{8}"
DATA_KEY = "{dataset}/{data_hash}"
RUN_KEY = "{dataset}/{method}/{variant}/{run_hash}/seed{seed}"
JTT_KEY = "{dataset}/{variant}/{run_hash}/seed{seed}"  # the run_hash of the jtt run it belongs to
RUN_FILES = ["model.pt", "config.yaml", "epochs.csv"]
EVAL_FILES = ["per_class.csv", "confusion.csv", "metrics.json"]
#: a trial's (and the reference's) scores on the validation split, in its run folder
EVAL_VAL_FILES = [f"eval_val/{name}" for name in ("per_class.csv", "metrics.json")]
TABLE_NAMES = ["per_class", "runs", "epochs", "groups"]
THEORY_FIGURE = "bound_terms"  # written by the theory step into FIGURES, beside the results figures
GPU_LOCKS = ".gpu_locks"  # under the output root as the job's outputs place it (locks_of)


def patterns(output_root: str) -> dict[str, str]:
    """The path patterns under ``output_root``, by the names the rules use (OUT: the root itself)."""
    out = str(Path(output_root))  # without a trailing slash
    run_dir = f"{out}/runs/{RUN_KEY}"
    jtt_dir = f"{out}/jtt/{JTT_KEY}"
    tune_dir = f"{out}/tune/{{dataset}}"
    return {
        "OUT": out,
        "DATA": f"{out}/data/{DATA_KEY}.pt",
        "DATA_CONFIG": f"{out}/data/{DATA_KEY}.yaml",
        "RUN_DIR": run_dir,
        "RUN_CONFIG": f"{run_dir}/run.yaml",
        # JTT's stage 1 (an ERM run) and its error set on the training split: steps of a jtt run, not results
        "JTT_DIR": jtt_dir,
        "JTT_STAGE1_DIR": f"{jtt_dir}/stage1",
        "JTT_ERRORS": f"{jtt_dir}/errors.csv",
        "EVAL_DIR": f"{run_dir}/eval",
        "EVAL_VAL_DIR": f"{run_dir}/eval_val",
        "TUNE_DIR": tune_dir,
        "TUNE_CHOSEN": f"{tune_dir}/chosen.yaml",
        "TABLES": f"{out}/tables",
        "FIGURES": f"{out}/figures",
        "ANALYSIS": f"{out}/analysis",
        "LOGS": f"{out}/logs",
        "BENCHMARKS": f"{out}/benchmarks",
        "REPORT": f"{out}/report.md",
        "REPORT_HTML": f"{out}/report_page.html",
        "THEORY": f"{out}/theory",
        "PIPELINE_CONFIG": f"{out}/pipeline_config.json",
        "RUN_FOLDERS": f"{out}/run_folders.tsv",
    }


def log_of(output_root: str, rule: str, key: str | None = None) -> str:
    """``<root>/logs/<rule>/<key>.log`` (``<rule>.log`` for a job without wildcards)."""
    logs = patterns(output_root)["LOGS"]
    return f"{logs}/{rule}/{key}.log" if key else f"{logs}/{rule}.log"


def benchmark_of(output_root: str, rule: str, key: str | None = None) -> str:
    """``<root>/benchmarks/<rule>/<key>.tsv``: Snakemake's measurement of the job (s, max_rss, ...)."""
    benchmarks = patterns(output_root)["BENCHMARKS"]
    return f"{benchmarks}/{rule}/{key}.tsv" if key else f"{benchmarks}/{rule}.tsv"


def folder_of(path: str) -> str:
    return str(Path(path).parent)


def run_dirs_of(inputs: Iterable[str]) -> list[str]:
    """The run folders of a step's inputs (each run's config.yaml), in their order, as Snakemake placed
    them (a module's `prefix:` moves them; the patterns are never read unmoved)."""
    return [folder_of(f) for f in inputs if Path(f).name == RUN_FILES[1]]


def locks_of(output_root: str, path: str, pattern: str, wildcards: Mapping[str, str]) -> str:
    """``<root>/.gpu_locks`` beside a job's output ``path`` (``pattern`` filled with ``wildcards``):
    the output root where Snakemake placed it, also when a module's `prefix:` moved it."""
    out = str(Path(output_root))
    tail = pattern.format(**dict(wildcards.items()))[len(out):]
    path = str(path)
    if not path.endswith(tail):
        raise PipelineConfigError(f"output {path} is not {pattern} under an output root")
    return f"{path[: len(path) - len(tail)]}/{GPU_LOCKS}"
