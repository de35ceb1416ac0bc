"""The method: MR²'s class statistics, margins and losses (and the baselines'), in torch only.

Every symbol of the paper lives in one function whose docstring states its formula
(``docs/method.md`` has the whole map):

- μ̂_k, ‖μ̂_k‖_p², ‖ŝ_k‖_p², a_k, s̄, the L_p norm: ``stats`` (``ClassStats``, ``lp_sq_norm``,
  ``class_moments``);
- γ_k of Corollary 1, uniform margins, Σ a_k/γ_k²: ``margins``;
- ℓ_{γ,ce}: ``losses.margin_ce``; ℓ_s̄: ``losses.rep_margin``; the objective with λ and c̄:
  ``losses.mr2``; the release's loss: ``losses.release``; the baselines and the factory that
  builds any of them by name: ``losses``.

Imports nothing of the engine, the results or the pipeline.
"""
