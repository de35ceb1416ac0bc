"""The report's figures, a module each, drawn from the tidy tables of ``mr2.results``.

  registry.py  which figures exist and which a pipeline config draws (standard library only: the
               workflow imports it when it parses its config)
  render.py    each figure's table computed once, for whether the run holds it and for drawing it;
               ``make_figures`` writes ``<name>.png`` and ``<name>.pdf`` (``mr2 figures``)
  <name>.py    one figure: its declaration, ``table(tables, options)`` and ``draw(table, options)``

  claim_forest             each method's paired Δ to ERM for all/easy/medium/hard/worst class
  per_class_sorted         per-class accuracy: a named dot plot for few classes, sorted lines otherwise (Fig. 1a)
  accuracy_vs_variability  per-class accuracy against a_k and against its spread alone, a panel per method (Fig. 1b)
  group_accuracy           all/easy/medium/hard accuracy per method, error bars = sd over seeds
  change_vs_erm            per-class paired change of every method over ERM with its t-interval over seeds
  margins_over_training    γ_k per epoch of easy, medium and hard classes, classes named, c̄ marked
  sweeps                   accuracy (all, hard) against swept c̄ and λ on log axes, ERM's level (Fig. 5)
  regimes                  MR²'s and its ablations' paired Δ to ERM across training regimes
  tradeoff                 per method, paired Δ on hard against easy classes with intervals

Importing this package loads nothing heavy; a figure module, or ``render``, brings pandas and
matplotlib.
"""

from __future__ import annotations

#: names other packages import from here, and the module that holds each
_MOVED = {"sweep_members": "sweeps"}


def __getattr__(name: str):
    """``from mr2.results.figures import sweep_members`` (``theory.pipeline``): loaded on first use."""
    if name in _MOVED:
        from importlib import import_module

        return getattr(import_module(f"{__name__}.{_MOVED[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
