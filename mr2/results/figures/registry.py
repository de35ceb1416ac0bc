"""The registry of the report's figures: which exist, what each is called, which figures a pipeline
config draws and with which methods. Standard library only, so the workflow reads it when it parses
its config (no pandas, no matplotlib).

A figure is one module of this folder, ``<name>.py``, that declares itself in a dict of literals,
``FIGURE = {"name": ..., "title": ..., "order": ..., "needs": ..., "missing": ..., "empty": ...}``,
and defines ``table(tables, options)`` and ``draw(table, options)`` (``mr2.results.figures.render``
calls them). The registry reads the declarations from the modules' source without importing them.
Its caption is ``workflow/report/<name>.rst`` (the report and Snakemake's report show it). Adding a
figure is that module and that caption.

  name     the module's name: the figure's files are ``<name>.png`` and ``<name>.pdf``
  title    the report's heading of the figure
  order    where it comes among the figures (drawing order, the report's "Not in this run" lines)
  needs    None, or what the pipeline config must run for the figure to be drawn (``NEEDS``)
  missing  None, or the report's line when the run lacks the figure's comparison, naming the config
           that runs it ({reference} in capitals and {method} are filled in)
  empty    the placeholder's message for tables that hold nothing to draw ({reference}, {method},
           {sweep_method} filled in)

  FIGURES         name -> Declaration, in their order
  ANALYSIS_TABLES, ANALYSIS_FIGURES  the premise analysis' outputs (``mr2 analysis``)
  figure_options  the reference, the MR² method whose margins are drawn and the swept method of a config
  config_figures  the names of the figures a pipeline config draws (the workflow's outputs)
  title_of        a figure's heading (also of a figure another step draws into the figures folder)
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

FOLDER = Path(__file__).resolve().parent
DECLARATION = "FIGURE"
FIELDS = ("name", "title", "order", "needs", "missing", "empty")
#: figures that other steps draw into the figures folder, not ``mr2 figures``: name -> heading
OTHER_STEPS = {"bound_terms": "Proposition 1, term by term"}  # the theory step (``theory.pipeline``)
#: what ``mr2 analysis`` writes into the analysis folder (``mr2.results.premise_tables``): its tables
#: (``<name>.csv``) and figures (``<name>.png`` and ``.pdf``); the workflow declares them from here
ANALYSIS_TABLES = ("correlations", "correlation_summary", "decomposition", "decomposition_summary", "margins")
ANALYSIS_FIGURES = ("premise_decomposition", "premise_margins")


@dataclass(frozen=True)
class Declaration:
    """A figure's ``FIGURE`` dict (see the module docstring)."""
    name: str
    title: str
    order: int
    needs: str | None
    missing: str | None
    empty: str


@dataclass(frozen=True)
class FigureOptions:
    """Which methods the figures draw: ``reference`` (ERM) against which changes are taken,
    ``method`` the MR² method whose margins are drawn, ``sweep_method`` the method whose swept
    variants are. ``figure_options`` reads them from a pipeline config."""
    reference: str = "erm"
    method: str = "mr2"
    sweep_method: str = "mr2"


def sweep_values(config: Mapping[str, Any]) -> dict[str, list]:
    """The options a pipeline config sweeps and their values (``sweeps`` without its ``method``)."""
    return {key: list(values) for key, values in (config.get("sweeps") or {}).items() if key != "method" and values}


def several_regimes(config: Mapping[str, Any]) -> bool:
    """Whether one data name is run under several dataset keys (training regimes)."""
    names = [(block or {}).get("data", {}).get("name", key) for key, block in (config.get("datasets") or {}).items()]
    return len(set(names)) < len(names)


#: what a figure may need of the pipeline config: need -> whether the config runs it
NEEDS = {"sweep": lambda config: bool(sweep_values(config)), "regimes": several_regimes}


def declared(path: Path) -> Declaration | None:
    """The ``FIGURE`` declaration of a module, read from its source; None for a module without one.
    A declaration that is not a dict of literals with exactly ``FIELDS``, whose name is not the
    module's or whose need is not one of ``NEEDS``, is an error naming the module."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    for node in tree.body:
        if isinstance(node, ast.Assign) and [getattr(t, "id", None) for t in node.targets] == [DECLARATION]:
            try:
                fields = ast.literal_eval(node.value)
            except ValueError as exc:
                raise ValueError(f"{path}: {DECLARATION} must be a dict of literals ({exc})") from None
            if not isinstance(fields, dict) or sorted(fields) != sorted(FIELDS):
                raise ValueError(f"{path}: {DECLARATION} must have exactly the keys {', '.join(FIELDS)}")
            if fields["name"] != path.stem:
                raise ValueError(f"{path}: {DECLARATION} names {fields['name']!r}, not its module {path.stem!r}")
            if fields["needs"] is not None and fields["needs"] not in NEEDS:
                raise ValueError(f"{path}: needs {fields['needs']!r} is none of {', '.join(NEEDS)}")
            return Declaration(**fields)
    return None


def read_figures(folder: Path = FOLDER) -> dict[str, Declaration]:
    """name -> Declaration of every figure module in ``folder``, in their declared order."""
    found = [d for d in map(declared, sorted(folder.glob("*.py"))) if d is not None]
    return {d.name: d for d in sorted(found, key=lambda d: (d.order, d.name))}


FIGURES = read_figures()


def figure_options(config: Mapping[str, Any] | None) -> FigureOptions:
    """The figures' methods as a pipeline config runs them: its ``reference``; as the MR² method
    ``mr2`` when it runs, else the first MR² method run or swept (``mr2_uniform``, ...), else ``mr2``
    (the figures then say it has no runs); as the swept method ``sweeps.method``. Keys the config
    lacks keep ``FigureOptions``' defaults."""
    config = config or {}
    default = FigureOptions()
    sweep_method = (config.get("sweeps") or {}).get("method", default.sweep_method)
    swept = [sweep_method] if sweep_values(config) else []
    candidates = [m for m in [*(config.get("methods") or []), *swept] if str(m).startswith("mr2")]
    method = default.method if default.method in candidates or not candidates else candidates[0]
    return FigureOptions(config.get("reference", default.reference), method, sweep_method)


def config_figures(config: Mapping[str, Any]) -> list[str]:
    """The figures a pipeline config draws, in their order: those whose ``needs`` it runs (no sweeps
    figure without a sweep, no regimes figure unless a data name is run under two dataset keys)."""
    return [name for name, d in FIGURES.items() if d.needs is None or NEEDS[d.needs](config)]


def title_of(name: str) -> str:
    """The report's heading of a figure: its declared title, or ``OTHER_STEPS``', or its name as words."""
    if name in FIGURES:
        return FIGURES[name].title
    return OTHER_STEPS.get(name, name.replace("_", " ").capitalize())


def missing_lines(available: Mapping[str, bool], options: FigureOptions = FigureOptions()) -> list[str]:
    """One line per comparison the run does not hold (a figure of ``available`` that is not, with a
    ``missing`` line), each once, in the figures' order."""
    lines = [FIGURES[name].missing for name in FIGURES if name in available and not available[name]
             and FIGURES[name].missing]
    return [line.format(reference=options.reference.upper(), method=options.method) for line in dict.fromkeys(lines)]


def empty_message(name: str, options: FigureOptions = FigureOptions()) -> str:
    """The placeholder's message of figure ``name`` for ``options``' methods."""
    return FIGURES[name].empty.format(reference=options.reference, method=options.method,
                                      sweep_method=options.sweep_method)
