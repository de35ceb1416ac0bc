"""Drawing the registry's figures: each figure's table is computed once and decides both whether the
run holds the figure (a table with rows) and what is drawn; a figure whose table is empty is a
placeholder saying so (``registry.empty_message``).

``tables`` is the dict of ``mr2.results.tables.read_tables`` (``per_class``, ``runs``, ``epochs``,
``groups``); ``options`` the figures' methods (``registry.FigureOptions``, read from a pipeline
config by ``registry.figure_options``).

  figure_module  the module of a figure (its table and draw)
  figure_tables  name -> the figure's table, for the figures asked
  available      name -> whether the run holds the figure (its table has rows)
  draw_figure    the figure of one table (matplotlib), a placeholder for an empty one
  make_figures   the figures into a folder as PNG and PDF (``mr2 figures``)
"""

from __future__ import annotations

from importlib import import_module
from pathlib import Path
from types import ModuleType
from typing import Any, Mapping, Sequence

import matplotlib.pyplot as plt
import pandas as pd

from ..plotting import empty_figure, save_figure
from .registry import FIGURES, FigureOptions, empty_message


def figure_module(name: str) -> ModuleType:
    """The module of figure ``name``; an unknown name is an error listing the figures."""
    if name not in FIGURES:
        raise ValueError(f"unknown figure {name!r}; the figures are {', '.join(FIGURES)}")
    return import_module(f"{__package__}.{name}")


def figure_tables(tables: Mapping[str, pd.DataFrame], options: FigureOptions = FigureOptions(),
                  names: Sequence[str] | None = None, **table_options: Any) -> dict[str, pd.DataFrame]:
    """name -> the table figure ``name`` draws (every figure's when ``names`` is None);
    ``table_options`` go to the tables of the figures that take them (``name="a"`` for the margins)."""
    names = list(FIGURES) if names is None else names
    return {name: figure_module(name).table(tables, options, **table_options) for name in names}


def available(tables: Mapping[str, pd.DataFrame], options: FigureOptions = FigureOptions()) -> dict[str, bool]:
    """name -> whether the tables hold what figure ``name`` shows (its table has rows)."""
    return {name: not table.empty for name, table in figure_tables(tables, options).items()}


def draw_figure(name: str, table: pd.DataFrame, options: FigureOptions = FigureOptions()) -> plt.Figure:
    """Figure ``name`` of its ``table``; a placeholder holding ``registry.empty_message`` when empty."""
    if table.empty:
        return empty_figure(empty_message(name, options))
    return figure_module(name).draw(table, options)


def make_figures(tables: Mapping[str, pd.DataFrame], out_dir: str | Path, options: FigureOptions = FigureOptions(),
                 names: Sequence[str] | None = None, **table_options: Any) -> dict[str, list[Path]]:
    """The figures into ``out_dir`` as ``<name>.png`` and ``<name>.pdf``: those whose comparison the
    run holds, or exactly ``names`` when given (the workflow's outputs; one without data is then a
    placeholder); name -> the two paths, in the registry's order or that of ``names``.
    ``table_options`` go to the figures' tables (``figure_tables``)."""
    computed = figure_tables(tables, options, names, **table_options)
    wanted = names if names is not None else [name for name, table in computed.items() if not table.empty]
    return {name: save_figure(draw_figure(name, computed[name], options), Path(out_dir) / name) for name in wanted}
