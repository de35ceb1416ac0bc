"""What every figure of the project shares: panels, legends, colours, a
placeholder for a figure with nothing to draw, and one way of writing a figure (PNG and PDF,
atomically). The command line selects the non-interactive Agg backend (``mr2.cli``); a notebook
keeps its inline one."""

from __future__ import annotations

from pathlib import Path
from typing import Iterable

import matplotlib.pyplot as plt
import numpy as np
import seaborn as sns

from ..common.io import atomic_path

GROUP_ORDER = ["all", "easy", "medium", "hard"]
GROUP_COLOURS = {"easy": "tab:green", "medium": "tab:orange", "hard": "tab:red"}
PANEL_SIZE = (4.5, 3.6)


def save_figure(fig: plt.Figure, stem: str | Path, dpi: int = 150) -> list[Path]:
    """Write ``fig`` as ``<stem>.png`` and ``<stem>.pdf`` (each atomically, cropped to what is drawn,
    legends outside the axes included) and close it; returns the two paths."""
    stem = Path(stem)
    paths = [stem.with_name(stem.name + ".png"), stem.with_name(stem.name + ".pdf")]
    try:
        fig.tight_layout()
        for path in paths:
            with atomic_path(path) as tmp:
                fig.savefig(tmp, format=path.suffix[1:], dpi=dpi, bbox_inches="tight")
    finally:
        plt.close(fig)
    return paths


def placeholder(stem: str | Path, message: str) -> list[Path]:
    """A figure holding only ``message`` (for a config that has nothing to draw)."""
    fig, ax = plt.subplots(figsize=PANEL_SIZE)
    _empty_panel(ax, message)
    return save_figure(fig, stem)


def _empty_panel(ax: plt.Axes, message: str) -> None:
    ax.text(0.5, 0.5, message, ha="center", va="center", wrap=True, transform=ax.transAxes)
    ax.set_axis_off()


def _panels(n: int, ncols: int | None = None, nrows: int = 1) -> tuple[plt.Figure, np.ndarray]:
    ncols = ncols or n
    fig, axes = plt.subplots(nrows, ncols, figsize=(PANEL_SIZE[0] * ncols, PANEL_SIZE[1] * nrows), squeeze=False)
    return fig, axes


def _one_legend(axes: Iterable[plt.Axes], title: str) -> None:
    """Keep the legend of the last panel that has one, outside it on the right; drop the others."""
    with_legend = [ax for ax in axes if ax.get_legend() is not None]
    for ax in with_legend[:-1]:
        ax.get_legend().remove()
    if with_legend:
        sns.move_legend(with_legend[-1], "upper left", bbox_to_anchor=(1.02, 1.0), title=title, frameon=False)
